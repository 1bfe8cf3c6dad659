"""Cluster events and queueing hints: which changes can make a rejected pod schedulable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum
from typing import Any

from policy_scheduler.scheduler.model import Pod


class Resource(StrEnum):
    POD = "Pod"  # any pod event; split below like upstream
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    PDB = "PodDisruptionBudget"
    POD_GROUP = "PodGroup"  # scheduling.x-k8s.io PodGroups (gang scheduling)
    # The Workload API's pod groups: scheduling.k8s.io PodGroups (v1.36+) or Workloads (v1.35).
    WORKLOAD_POD_GROUP = "scheduling.k8s.io/PodGroup"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    WILDCARD = "*"


class Action(IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_OTHER = 2048
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 4096
    UPDATE_NODE_DECLARED_FEATURE = 8192
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_OTHER
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE


class QueueingHint(Enum):
    QUEUE = "Queue"
    SKIP = "QueueSkip"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: Action
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Whether this concrete event is covered by a plugin's registered event."""
        resource_ok = registered.resource in (self.resource, Resource.WILDCARD) or (
            registered.resource == Resource.POD
            and self.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
        )
        return resource_ok and bool(registered.action & self.action)


# hint(pod being queued, old object or None, new object or None) -> Queue or Skip
HintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFn | None = None  # None: always Queue


# Events the scheduler itself generates.
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, Action.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, Action.ALL, "ForceActivate")


def taint_events(after_node: HintFn, after_pod_toleration: HintFn) -> list[ClusterEventWithHint]:
    """What a taint-based filter waits for: a node added or its taints changed, the pod's tolerations
    changed (the queueing-hint variant: SchedulerQueueingHints is GA and locked on in v1.35)."""
    return [
        ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT), after_node),
        ClusterEventWithHint(ClusterEvent(Resource.POD, Action.UPDATE_POD_TOLERATION), after_pod_toleration),
    ]


def unexpected_objects(old: Any, new: Any, kind: type) -> bool:
    """Whether a hint got objects other than `kind` (old may be None): upstream's conversion
    error, on which it queues the pod."""
    return not isinstance(new, kind) or not (old is None or isinstance(old, kind))
