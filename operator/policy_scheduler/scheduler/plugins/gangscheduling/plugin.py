"""GangScheduling: the Workload API's gangs (pkg/scheduler/framework/plugins/gangscheduling).

The second front door to the gang core: the groups come from scheduling.k8s.io (a PodGroup named
by the pod's spec.schedulingGroup from v1.36, a Workload's podGroups entry named by its
spec.workloadRef in v1.35) through ClusterServices.workload_groups. As upstream: PreEnqueue holds
a member until its group exists and has minCount pods, Permit holds each assumed member until
minCount of them are assumed or bound, then allows them all; a group with the Basic policy is no
gang. Reasons are upstream's, word for word, per release.
"""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    unexpected_objects,
)
from policy_scheduler.scheduler.framework.interfaces import (
    Handle,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    ReservePlugin,
)
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status, error, unresolvable
from policy_scheduler.scheduler.framework.unserved import WORKLOAD_API
from policy_scheduler.scheduler.gang.podgroup import PodGroup
from policy_scheduler.scheduler.gang.store import PodGroupStore
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37

NAME = "GangScheduling"
# permitTimeoutDuration (v1.36+) and DefaultSchedulingTimeoutDuration (v1.35): five minutes.
PERMIT_TIMEOUT_SECONDS = 300.0

QUORUM_NOT_IN_QUEUE = "waiting for minCount pods from a gang to appear in scheduling queue"
QUORUM_NOT_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"
QUORUM_NOT_WAITING_V1_35 = "waiting for minCount pods from a gang to be waiting on permit"


def pod_group_missing(name: str) -> str:
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


def workload_missing(name: str) -> str:
    """v1.35: the pod's Workload does not exist (yet)."""
    return f'waiting for pods\'s workload "{name}" to appear in scheduling queue'


def template_missing(template: str, workload: str) -> str:
    """v1.35: the Workload has no podGroups entry of the pod's workloadRef.podGroup."""
    return f'pod group "{template}" doesn\'t exist for a workload "{workload}"'


def min_count_unsatisfiable(min_count: int, scheduled: int, remaining: int) -> str:
    """PlacementFeasible's verdict on a gang that cannot reach minCount (v1.36+)."""
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


class GangScheduling(PreEnqueuePlugin, PostFilterPlugin, ReservePlugin, PermitPlugin):
    name = NAME

    def __init__(self, handle: Handle, args: object) -> None:
        super().__init__(handle, args)
        self.store: PodGroupStore = handle.services.workload_groups
        self.store.attach(handle.table)
        self.v1_35 = handle.features.version == V1_35

    @classmethod
    def points_absent_in(cls, features: Features) -> frozenset[str]:
        # Reserve/Unreserve tracked v1.35's assumed pods; from v1.36 the cache does. PostFilter
        # stands in for v1.36's pod-group cycle (docs/differences.md); v1.35 has none.
        return frozenset({"reserve"}) if features.version >= V1_36 else frozenset({"postFilter"})

    # ---- PreEnqueue --------------------------------------------------------------------------

    def _missing(self, pod: Pod) -> str:
        """Why `pod` waits when the spec of its group is not known."""
        unserved = self.handle.services.unserved.reason(WORKLOAD_API)
        if pod.scheduling_group:
            message = pod_group_missing(pod.scheduling_group)
        else:
            assert pod.workload_ref is not None
            workload, template, _ = pod.workload_ref
            prefix = f"{pod.namespace}/{workload}/"
            if any(key.startswith(prefix) for key in self.store.groups):
                return template_missing(template, workload)
            message = workload_missing(workload)
        return f"{message}: {unserved}" if unserved else message

    def pre_enqueue(self, pod: Pod) -> Status:
        key = self.store.key_of(pod)
        if not key:
            return SUCCESS
        group = self.store.group_of(pod)
        if group is None:
            return unresolvable(self._missing(pod))
        if group.malformed:
            return unresolvable(group.malformed)
        if not group.gang:
            return SUCCESS
        if self.store.member_count(key) < group.min_member:
            return unresolvable(QUORUM_NOT_IN_QUEUE)
        return SUCCESS

    # ---- PostFilter (v1.36+: the pod-group cycle's all-or-nothing outcome) --------------------

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """A member that fits nowhere (and could not preempt): if its gang can no longer reach
        minCount in this round (PlacementFeasible: scheduled + remaining < minCount), the members
        waiting at Permit are released with that verdict, as upstream's pod-group cycle assumes
        none of them; they return to the queue instead of holding nodes until the timeout."""
        key = self.store.key_of(pod)
        group = self.store.group_of(pod) if key else None
        if group is None or not group.gang:
            return None, Status(Code.UNSCHEDULABLE)
        assigned = self.store.assigned(key)
        members = self.store.state(key).members
        remaining = sum(1 for k in members if k != pod.key and k not in assigned)
        scheduled = len(assigned)
        framework = self.handle.framework
        if scheduled + remaining >= group.min_member or framework is None:
            return None, Status(Code.UNSCHEDULABLE)
        message = min_count_unsatisfiable(group.min_member, scheduled, remaining)
        self.store.note(key, message)  # the PodGroup's status: unschedulable, and why
        for waiting in list(framework.iterate_over_waiting_pods()):
            if waiting.outcome is None and self.store.key_of(waiting.pod) == key:
                waiting.reject(self.name, message)
        return None, Status(Code.UNSCHEDULABLE)

    # ---- Reserve (v1.35: the assumed pods are counted from the node table) -------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    # ---- Permit ------------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        key = self.store.key_of(pod)
        if not key:
            return SUCCESS, 0.0
        group = self.store.group_of(pod)
        if group is None:
            return error(f"failed to get pod group {key}: {self._missing(pod)}"), 0.0
        if not group.gang:
            return SUCCESS, 0.0
        assigned = self.store.assigned(key)
        # The pod itself is assumed in the table already; count it once.
        scheduled = len(assigned) + (0 if pod.key in assigned else 1)
        if scheduled < group.min_member:
            members = self.store.state(key).members
            self.handle.activate(
                [m for k, m in members.items() if k != pod.key and k not in assigned and not m.node_name]
            )
            message = QUORUM_NOT_WAITING_V1_35 if self.v1_35 else QUORUM_NOT_SCHEDULED
            return Status(Code.WAIT, (message,)), PERMIT_TIMEOUT_SECONDS
        framework = self.handle.framework
        if framework is not None:
            for waiting in list(framework.iterate_over_waiting_pods()):
                if self.store.key_of(waiting.pod) == key:
                    waiting.allow(self.name)
        self.store.note(key, "", scheduled=scheduled)  # the PodGroup's status: scheduled
        return SUCCESS, 0.0

    # ---- queueing hints ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        version = self.handle.features.version
        group_add = ClusterEventWithHint(
            ClusterEvent(Resource.WORKLOAD_POD_GROUP, Action.ADD), self._after_group_added
        )
        if version < V1_37:
            return [
                ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ADD), self._after_pod_added),
                group_add,
            ]
        return [
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD), self._after_pod_added),
            group_add,
            ClusterEventWithHint(
                ClusterEvent(Resource.WORKLOAD_POD_GROUP, Action.UPDATE), self._after_group_updated
            ),
        ]

    def _after_pod_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterPodAdded: a pod of the same group may complete its quorum."""
        if unexpected_objects(old, new, Pod):
            return QueueingHint.QUEUE
        mine = self.store.key_of(pod)
        return QueueingHint.QUEUE if mine and self.store.key_of(new) == mine else QueueingHint.SKIP

    def _after_group_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterPodGroupAdded (v1.35: isSchedulableAfterWorkloadAdded)."""
        if unexpected_objects(old, new, PodGroup):
            return QueueingHint.QUEUE
        mine = self.store.policy_key_of(pod)
        return QueueingHint.QUEUE if mine and new.key == mine else QueueingHint.SKIP

    def _after_group_updated(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """isSchedulableAfterPodGroupUpdated: only a gang whose minCount went down may go now."""
        if unexpected_objects(old, new, PodGroup):
            return QueueingHint.QUEUE
        if new.key != self.store.policy_key_of(pod):
            return QueueingHint.SKIP
        if not (old.gang and new.gang) or new.min_member >= old.min_member:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
