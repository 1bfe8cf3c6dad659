"""NodeDeclaredFeatures: nodedeclaredfeatures_test.go (v1.36.3/v1.37.2) and component-helpers'
nodedeclaredfeatures feature tests (restartallcontainers, usernamespaceshostnetwork, and the
registry per release); v1.35's reason lists the missing features."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import FitError
from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from policy_scheduler.scheduler.plugins.nodedeclaredfeatures.features import (
    REGISTRIES,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
    NodeFeature,
    infer_for_pod_scheduling,
)
from policy_scheduler.scheduler.plugins.nodedeclaredfeatures.plugin import PRE_FILTER_KEY
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

UNSATISFIED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's required features",))
ON_V135 = Features(V1_35, (("NodeDeclaredFeatures", True),))


def always(pod: Pod) -> bool:
    return True


def never(pod: Pod) -> bool:
    return False


def plugin(
    nodes: list[Node], features: Features, registry: tuple[NodeFeature, ...] | None = None
) -> NodeDeclaredFeatures:
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    built = NodeDeclaredFeatures(Handle(table, features=features), None)
    if registry is not None:
        built.registry = registry  # the upstream tests' mock features
    return built


# ---- TestPreFilter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("features", "registry", "release", "want_status", "want"),
    [
        (
            "disabled",
            (NodeFeature("TestFeature1", always), NodeFeature("TestFeature2", never)),
            V1_35,
            SKIP,
            None,
        ),
        (
            "enabled",
            (NodeFeature("TestFeature1", always), NodeFeature("TestFeature2", never)),
            V1_35,
            SUCCESS,
            {"TestFeature1"},
        ),
        (
            "enabled",
            (NodeFeature("TestFeature1", always, V1_37), NodeFeature("TestFeature2", always, V1_37)),
            V1_35,
            SUCCESS,
            {"TestFeature1", "TestFeature2"},
        ),
        (
            "enabled",
            (NodeFeature("TestFeature1", never), NodeFeature("TestFeature2", never)),
            V1_35,
            SKIP,
            None,
        ),
        (  # the target release is past the feature's max version: every node has it
            "enabled",
            (
                NodeFeature("TestFeature1", always, KubernetesVersion(1, 33)),
                NodeFeature("TestFeature2", never),
            ),
            KubernetesVersion(1, 34),
            SKIP,
            None,
        ),
    ],
    ids=[
        "plugin disabled",
        "Pod with feature requirements",
        "Pod with multiple feature requirements",
        "Pod with no requirements",
        "Feature not required, version > MaxVersion",
    ],
)
def test_pre_filter(
    features: str,
    registry: tuple[NodeFeature, ...],
    release: KubernetesVersion,
    want_status: Status,
    want: set[str] | None,
) -> None:
    built = plugin([], ON_V135 if features == "enabled" else Features(V1_35), registry)
    built.release = release
    state = CycleState()
    result, status = built.pre_filter(state, Pod("test-pod"))
    assert result is None
    assert status == want_status
    stored = state.read(PRE_FILTER_KEY)
    assert (stored.required if stored is not None else None) == (
        frozenset(want) if want is not None else None
    )


# ---- TestFilter ------------------------------------------------------------------------------

A, B, C = "FeatureA", "FeatureB", "FeatureC"


def registry_of(*names: str) -> tuple[NodeFeature, ...]:
    return tuple(NodeFeature(name, always) for name in names)


@pytest.mark.parametrize(
    ("enabled", "declared", "required", "want"),
    [
        (False, (A, B), (), SUCCESS),
        (True, (A, B), (A,), SUCCESS),
        (True, (B,), (A,), UNSATISFIED),
        (True, (A, B, C), (A, C), SUCCESS),
        (True, (), (A,), UNSATISFIED),
        (True, (A,), (A, B), UNSATISFIED),
    ],
    ids=[
        "plugin disabled",
        "Node matches requirements",
        "Node does not match requirements",
        "Node with multiple features, pod requires subset",
        "Node has no declared features",
        "Node with some but not all required features",
    ],
)
@pytest.mark.parametrize("version", [V1_36, V1_37])
def test_filter(
    version: KubernetesVersion,
    enabled: bool,
    declared: tuple[str, ...],
    required: tuple[str, ...],
    want: Status,
) -> None:
    features = Features(version) if enabled else Features(V1_35)
    built = plugin([Node("node-1", declared_features=declared)], features, registry_of(*required))
    state = CycleState()
    built.pre_filter(state, Pod("test-pod"))
    assert built.filter(state, Pod("test-pod"), np.array([0])).status_of(0) == want
    assert built.filter_row(state, Pod("test-pod"), 0) == want


def test_filter_without_pre_filter_state_is_an_error() -> None:
    built = plugin([Node("node-1")], Features(V1_36))
    status = built.filter(CycleState(), Pod("test-pod"), np.array([0])).status_of(0)
    assert status == Status(Code.ERROR, (f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found',))


def test_v135_reason_names_the_missing_features() -> None:
    built = plugin([Node("n", declared_features=(B,))], ON_V135, registry_of(A, C))
    state = CycleState()
    built.pre_filter(state, Pod("p"))
    assert built.filter(state, Pod("p"), np.array([0])).status_of(0) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node declared features check failed - unsatisfied requirements: FeatureA, FeatureC",),
    )


def test_filter_rows_each_get_their_verdict() -> None:
    nodes = [Node("with", declared_features=(A,)), Node("without"), Node("other", declared_features=(B,))]
    built = plugin(nodes, Features(V1_37), registry_of(A))
    state = CycleState()
    built.pre_filter(state, Pod("p"))
    result = built.filter(state, Pod("p"), np.arange(3))
    assert [result.status_of(i) for i in range(3)] == [SUCCESS, UNSATISFIED, UNSATISFIED]


# ---- the features and their registries -------------------------------------------------------


def restart_all(*, init: bool) -> Pod:
    rule = Container("rules", restart_rule_actions=("RestartAllContainers",))
    plain = Container("plain")
    if init:
        return Pod("p", init_containers=(rule,), containers=(plain,))
    return Pod("p", init_containers=(plain,), containers=(rule,))


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (restart_all(init=True), True),
        (restart_all(init=False), True),
        (Pod("p", init_containers=(Container("a"),), containers=(Container("b"),)), False),
        (Pod("p", containers=(Container("c", restart_rule_actions=("Restart",)),)), False),
    ],
    ids=["init container with rules", "regular container with rules", "no rules", "another action"],
)
def test_restart_all_containers_infer_for_scheduling(pod: Pod, want: bool) -> None:
    assert RESTART_ALL_CONTAINERS.infer_for_scheduling(pod) is want


@pytest.mark.parametrize(
    ("host_network", "host_users", "want"),
    [(True, False, True), (True, None, False), (True, True, False), (False, False, False)],
    ids=[
        "HostNetwork true, HostUsers false",
        "HostNetwork true, HostUsers nil",
        "HostNetwork true, HostUsers true",
        "HostNetwork false, HostUsers false",
    ],
)
def test_user_namespaces_host_network_infer_for_scheduling(
    host_network: bool, host_users: bool | None, want: bool
) -> None:
    pod = Pod("p", host_network=host_network, host_users=host_users)
    assert USER_NAMESPACES_HOST_NETWORK.infer_for_scheduling(pod) is want


def test_bind_mount_options_infer_for_scheduling() -> None:
    assert VOLUME_BIND_MOUNT_OPTIONS.infer_for_scheduling(
        Pod("p", init_containers=(Container("i", bind_mount_options=True),))
    )
    assert not VOLUME_BIND_MOUNT_OPTIONS.infer_for_scheduling(Pod("p", containers=(Container("c"),)))


NEEDS_EVERYTHING = Pod(
    "p",
    host_network=True,
    host_users=False,
    containers=(Container("c", restart_rule_actions=("RestartAllContainers",), bind_mount_options=True),),
)


@pytest.mark.parametrize(
    ("version", "want"),
    [
        (V1_35, {"RestartAllContainersOnContainerExits"}),
        (V1_36, {"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"}),
        (
            V1_37,
            {
                "RestartAllContainersOnContainerExits",
                "UserNamespacesHostNetworkSupport",
                "VolumeBindMountOptions",
            },
        ),
    ],
)
def test_each_release_infers_what_its_registry_knows(version: KubernetesVersion, want: set[str]) -> None:
    assert infer_for_pod_scheduling(REGISTRIES[version], NEEDS_EVERYTHING, version) == want


def test_node_change_hint() -> None:
    built = plugin([], Features(V1_36))
    [event] = built.events_to_register()
    assert event.event == ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE)
    assert event.hint is not None
    assert event.hint(Pod("p"), None, Node("n")) == QueueingHint.QUEUE
    assert (
        event.hint(Pod("p"), Node("n", declared_features=(A,)), Node("n", declared_features=(A,)))
        == QueueingHint.SKIP
    )
    assert event.hint(Pod("p"), Node("n"), Node("n", declared_features=(A,))) == QueueingHint.QUEUE
    assert plugin([], Features(V1_35)).events_to_register() == []


# ---- in the default profiles ------------------------------------------------------------------


def verdict(version: KubernetesVersion, pod: Pod, declared: tuple[str, ...] = ()) -> tuple[str | None, str]:
    """One cycle of the default profile of `version` on two nodes declaring `declared`."""
    engine = Engine(seed=0)
    engine.set_profiles(
        [resolve_profile(ProfileConfig(), implemented_plugin_names(), features=Features(version))]
    )
    for name in ("n1", "n2"):
        engine.node_added(
            Node(name, allocatable={"cpu": 4000, "memory": 1 << 33, "pods": 110}, declared_features=declared)
        )
    engine.pod_added(pod)
    info = engine.queue.try_pop()
    assert info is not None
    framework = engine.frameworks["default-scheduler"]
    try:
        result = engine.scheduler.schedule_pod(framework, CycleState(), info.pod)
    except FitError as exc:
        return None, str(exc)
    return result.node_name, ""


def test_v136_default_profile_keeps_pods_needing_features_off_nodes_without_them() -> None:
    pod = Pod(
        "p", uid="p", host_network=True, host_users=False, containers=(Container("c", requests={"cpu": 100}),)
    )
    assert verdict(V1_35, pod)[0] is not None  # alpha and off in v1.35: not a default plugin
    node, message = verdict(V1_36, pod)
    assert node is None
    assert message == "0/2 nodes are available: 2 node(s) didn't match Pod's required features."
    assert verdict(V1_36, pod, ("UserNamespacesHostNetworkSupport",))[0] is not None
    plain = Pod("q", uid="q", containers=(Container("c", requests={"cpu": 100}),))
    assert verdict(V1_37, plain)[0] is not None  # kwok nodes declare nothing; most pods need nothing
