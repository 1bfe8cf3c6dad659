"""A PodGroup as the core sees it (scheduler-plugins' apis/scheduling/v1alpha1 PodGroup)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policy_scheduler.scheduler.model import Pod

# Pods join a group with this label; its value is the PodGroup's name in the pod's namespace.
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

# PodGroupPhase values (v1alpha1).
PHASE_PENDING = "Pending"
PHASE_SCHEDULING = "Scheduling"
PHASE_SCHEDULED = "Scheduled"
PHASE_RUNNING = "Running"


@dataclass(frozen=True, slots=True)
class PodGroup:
    namespace: str
    name: str
    min_member: int = 1
    # spec.minResources in base units (cpu in millicores), None when unset.
    min_resources: Mapping[str, int] | None = None
    schedule_timeout_seconds: int | None = None
    creation_timestamp: float = 0.0
    uid: str = ""
    # Set on a group the core could not understand: its pods wait with this message.
    malformed: str | None = None
    # False for the Workload API's Basic policy: the group's pods schedule one by one.
    gang: bool = True
    # The Workload API's disruptionMode All (v1.36: "PodGroup"): preemption evicts its members
    # together (workload-aware preemption).
    disrupt_all: bool = False
    # metadata.generation (the Workload API's status conditions record it).
    generation: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class GroupState:
    """What the scheduler knows about a group beyond its spec: what its status reports."""

    message: str = ""  # why the group waits, or "" once it is scheduled
    schedule_start_time: float | None = None
    scheduled: int = 0  # members bound or being bound
    members: dict[str, Pod] = field(default_factory=dict)  # pod key -> latest pod


def group_name(pod: Pod) -> str:
    return pod.labels.get(POD_GROUP_LABEL, "")


def group_key(pod: Pod) -> str:
    """namespace/name of the pod's group, or "" for a pod in no group."""
    name = group_name(pod)
    return f"{pod.namespace}/{name}" if name else ""


def scheduling_group_key(pod: Pod) -> str:
    """namespace/name of the pod's Workload API pod group, or "" for a pod in none.

    v1.36 and later: spec.schedulingGroup.podGroupName names a PodGroup object. v1.35: the
    workloadRef names a Workload and one of its podGroups; each podGroupReplicaKey is a separate
    gang of that template, so the key is `workload/podGroup[/replicaKey]` (a "/" cannot occur in
    an object's name, so the two forms never collide).
    """
    if pod.scheduling_group:
        return f"{pod.namespace}/{pod.scheduling_group}"
    ref = pod.workload_ref
    if ref is None:
        return ""
    name, template, replica = ref
    return f"{pod.namespace}/{name}/{template}" + (f"/{replica}" if replica else "")


def scheduling_policy_key(pod: Pod) -> str:
    """The key of the core PodGroup holding the policy of the pod's Workload API group: its
    PodGroup (v1.36+), or its Workload's podGroups entry `workload/podGroup` (v1.35)."""
    if pod.scheduling_group:
        return f"{pod.namespace}/{pod.scheduling_group}"
    ref = pod.workload_ref
    return f"{pod.namespace}/{ref[0]}/{ref[1]}" if ref is not None else ""
