"""The node features a pod needs: k8s.io/component-helpers nodedeclaredfeatures, per release.

Each release's registry (features/registry.go AllFeatures) lists the features a kubelet may
declare in node.status.declaredFeatures; a feature whose InferForScheduling says the pod needs
it must be declared by the node the pod lands on. Features that only matter for updates of
running pods (in-place resize) never infer anything for scheduling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

RESTART_ALL_CONTAINERS_ACTION = "RestartAllContainers"  # v1.ContainerRestartRuleActionRestartAllContainers


@dataclass(frozen=True, slots=True)
class NodeFeature:
    name: str
    # InferForScheduling: does the pod, as created, need a node declaring this feature?
    infer_for_scheduling: Callable[[Pod], bool]
    # Releases after this one need not ask: every node has the feature (None: no such release).
    max_version: KubernetesVersion | None = None


def _never(pod: Pod) -> bool:
    return False


def _restarts_all_containers(pod: Pod) -> bool:
    """restartallcontainers: a container rule with action RestartAllContainers."""
    return any(
        RESTART_ALL_CONTAINERS_ACTION in c.restart_rule_actions
        for c in (*pod.containers, *pod.init_containers)
    )


def _user_namespace_with_host_network(pod: Pod) -> bool:
    """usernamespaceshostnetwork: hostNetwork and hostUsers: false."""
    return pod.host_network and pod.host_users is False


def _bind_mount_options(pod: Pod) -> bool:
    """volumebindmountoptions: a volume mount with bindMountOptions (ephemeral containers, which
    a pod cannot be created with, are not in the model)."""
    return any(c.bind_mount_options for c in (*pod.containers, *pod.init_containers))


RESTART_ALL_CONTAINERS = NodeFeature("RestartAllContainersOnContainerExits", _restarts_all_containers)
USER_NAMESPACES_HOST_NETWORK = NodeFeature(
    "UserNamespacesHostNetworkSupport", _user_namespace_with_host_network
)
VOLUME_BIND_MOUNT_OPTIONS = NodeFeature("VolumeBindMountOptions", _bind_mount_options)

REGISTRIES: Mapping[KubernetesVersion, tuple[NodeFeature, ...]] = MappingProxyType(
    {
        V1_35: (
            RESTART_ALL_CONTAINERS,
            NodeFeature("GuaranteedQoSPodCPUResize", _never),
            NodeFeature("InPlacePodLevelResourcesVerticalScaling", _never),
        ),
        V1_36: (
            RESTART_ALL_CONTAINERS,
            NodeFeature("InPlacePodLevelResourcesVerticalScaling", _never),
            NodeFeature("ExtendWebSocketsToKubelet", _never),
            NodeFeature("InPlacePodVerticalScalingInitContainers", _never),
            USER_NAMESPACES_HOST_NETWORK,
        ),
        V1_37: (
            RESTART_ALL_CONTAINERS,
            NodeFeature("InPlacePodLevelResourcesVerticalScaling", _never),
            NodeFeature("ExtendWebSocketsToKubelet", _never),
            NodeFeature("InPlacePodVerticalScalingInitContainers", _never),
            NodeFeature("InPlacePodVerticalScalingMemoryBackedVolumes", _never),
            USER_NAMESPACES_HOST_NETWORK,
            NodeFeature("DRANodeAllocatableResources", _never),
            VOLUME_BIND_MOUNT_OPTIONS,
            NodeFeature("DRAOptionalNodeOperations", _never),
        ),
    }
)


def infer_for_pod_scheduling(
    registry: Iterable[NodeFeature], pod: Pod, target: KubernetesVersion
) -> frozenset[str]:
    """Framework.InferForPodScheduling: the features `pod` needs on a node of release `target`."""
    return frozenset(
        feature.name
        for feature in registry
        if not (feature.max_version is not None and target > feature.max_version)
        and feature.infer_for_scheduling(pod)
    )


def unsatisfied(required: frozenset[str], declared: Iterable[str]) -> list[str]:
    """MatchNodeFeatureSet's unsatisfied requirements, sorted (upstream v1.35 lists them in map
    order; one feature at most can be missing there)."""
    return sorted(required.difference(declared))
