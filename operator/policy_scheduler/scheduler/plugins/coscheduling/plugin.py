"""Coscheduling: scheduler-plugins' PodGroup gang scheduling (pkg/coscheduling/coscheduling.go).

A group's pods bind only together: PreEnqueue holds them until minMember pods exist, Permit
holds each assumed member until minMember of them hold a node, and a member that fits nowhere
(PostFilter) or a member released at Unreserve (a Permit timeout, a failed bind) rejects every
waiting member at once, so a group never keeps part of the cluster for itself.
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
)
from policy_scheduler.scheduler.framework.interfaces import (
    Handle,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
)
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.framework.unserved import PODGROUPS as PODGROUPS_API
from policy_scheduler.scheduler.gang.podgroup import PodGroup, group_key
from policy_scheduler.scheduler.gang.store import PodGroupStore
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.coscheduling.args import CoschedulingArgs
from policy_scheduler.scheduler.plugins.coscheduling.core import format_gap, not_enough_members, resource_gap

NAME = "Coscheduling"
POD_GROUP_NOT_FOUND = "PodGroup not found"


class Coscheduling(
    QueueSortPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PermitPlugin,
    PostBindPlugin,
):
    name = NAME
    args_type = CoschedulingArgs

    def __init__(self, handle: Handle, args: CoschedulingArgs) -> None:
        super().__init__(handle, args)
        self.typed = args
        self.store: PodGroupStore = handle.services.pod_groups
        self.store.attach(handle.table)
        # permittedPG: groups whose minResources check passed, until the deadline (scheduleTimeout).
        self.permitted: dict[str, float] = {}
        # backedOffPG: groups rejected at PostFilter, until the deadline (podGroupBackoffSeconds).
        self.backed_off: dict[str, float] = {}

    # ---- helpers -----------------------------------------------------------------------------

    def _group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        key = group_key(pod)
        return key, (self.store.get(key) if key else None)

    def _note(self, key: str, message: str) -> Status:
        """Record why the group waits (its PodGroup status reads it) and return it as a rejection."""
        self.store.note(key, message)
        return Status(Code.UNSCHEDULABLE, (message,))

    def _wait_seconds(self, group: PodGroup) -> float:
        """GetWaitTimeDuration: the group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds."""
        if group.schedule_timeout_seconds:
            return float(group.schedule_timeout_seconds)
        return float(self.typed.permit_waiting_time_seconds)

    def _reject_waiting(self, key: str, message: str) -> int:
        framework = self.handle.framework
        if framework is None:
            return 0
        rejected = 0
        for waiting in list(framework.iterate_over_waiting_pods()):
            if group_key(waiting.pod) == key and waiting.outcome is None:
                waiting.reject(self.name, message)
                rejected += 1
        return rejected

    # ---- QueueSort ---------------------------------------------------------------------------

    def sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        """Less: priority, then the group's (or lone pod's) creation time, then the group's key,
        so a group's members pop one after another."""
        key, group = self._group(info.pod)
        if group is not None:
            created = group.creation_timestamp
        else:
            created = info.initial_attempt_timestamp or info.timestamp
        return (-info.pod.priority, created, key or info.pod.key, info.timestamp)

    # ---- PreEnqueue --------------------------------------------------------------------------

    def _not_found(self, key: str) -> str:
        missing = self.handle.services.unserved.reason(PODGROUPS_API)
        return f"{POD_GROUP_NOT_FOUND}: {key}" + (f": {missing}" if missing else "")

    def pre_enqueue(self, pod: Pod) -> Status:
        key, group = self._group(pod)
        if not key:
            return SUCCESS
        if group is None:
            if self.handle.services.unserved.reason(PODGROUPS_API):
                # PreFilter turns the pod down saying so: a pod held here gets no condition.
                return SUCCESS
            return self._note(key, self._not_found(key))
        if group.malformed:
            return self._note(key, group.malformed)
        present = self.store.member_count(key)
        if present < group.min_member:
            return self._note(key, not_enough_members(pod.name, present, group))
        return SUCCESS

    # ---- PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        key, group = self._group(pod)
        if not key:
            return None, SUCCESS
        if group is None:
            return None, self._note(key, self._not_found(key))
        now = self.handle.clock()
        if self.backed_off.get(key, 0.0) > now:
            return None, self._note(key, f"podGroup {key} failed recently")
        present = self.store.member_count(key)
        if present < group.min_member:
            return None, self._note(key, not_enough_members(pod.name, present, group))
        if group.min_resources is None or self.permitted.get(key, 0.0) > now:
            return None, SUCCESS
        gap = resource_gap(self.table, group, self.store.assigned(key))
        if gap:
            return None, self._note(key, format_gap(gap))
        self.permitted[key] = now + self.typed.permit_waiting_time_seconds
        return None, SUCCESS

    # ---- PostFilter --------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        key, group = self._group(pod)
        if group is None:
            return None, Status(Code.UNSCHEDULABLE, ("can not find pod group",))
        assigned = len(self.store.assigned(key))
        if assigned >= group.min_member:
            return None, Status(Code.UNSCHEDULABLE)  # the group is complete: only this pod retries
        # A gap of at most 10% may still close with the members after this one.
        if (group.min_member - assigned) / group.min_member <= 0.1:
            return None, Status(Code.UNSCHEDULABLE)
        rejected = self._reject_waiting(key, "optimistic rejection in PostFilter")
        backoff = self.typed.pod_group_backoff_seconds
        if backoff and self.store.member_count(key) >= group.min_member:
            self.backed_off[key] = self.handle.clock() + backoff
        self.permitted.pop(key, None)
        message = f"PodGroup {key} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        if rejected:  # otherwise the earlier reason (e.g. the resource gap) says more
            self.store.note(key, message)
        return None, Status(Code.UNSCHEDULABLE, (message,))

    # ---- Reserve / Unreserve -----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """A member released (Permit timeout or rejection, failed bind): release every waiting one."""
        key, group = self._group(pod)
        if group is None:
            return
        if self._reject_waiting(key, "rejection in Unreserve"):
            self.store.note(key, f"PodGroup {key} released its members: member {pod.name} was not admitted")
        self.permitted.pop(key, None)

    # ---- Permit ------------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        key, group = self._group(pod)
        if not key:
            return SUCCESS, 0.0
        if group is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (POD_GROUP_NOT_FOUND,)), 0.0
        # The pod itself is already assumed in the table: upstream counts it as the "+1".
        assigned = len(self.store.assigned(key))
        if pod.key not in self.store.assigned(key):
            assigned += 1
        if assigned >= group.min_member:
            framework = self.handle.framework
            if framework is not None:
                for waiting in list(framework.iterate_over_waiting_pods()):
                    if group_key(waiting.pod) == key:
                        waiting.allow(self.name)
            self.store.note(key, "", scheduled=assigned)
            return SUCCESS, 0.0
        self.store.note(
            key,
            f"PodGroup {key} waits at Permit: {assigned} of minMember {group.min_member} pods assumed",
            now=self.handle.clock(),
        )
        return Status(Code.WAIT), self._wait_seconds(group)

    # ---- PostBind ----------------------------------------------------------------------------

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        key = group_key(pod)
        if key:
            self.store.note(key, "", scheduled=len(self.store.assigned(key)))

    # ---- queueing hints ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def same_group(pod: Pod, old: Any, new: Any) -> QueueingHint:
            other = new if new is not None else old
            if isinstance(other, Pod):
                mine = group_key(pod)
                return QueueingHint.QUEUE if mine and group_key(other) == mine else QueueingHint.SKIP
            if isinstance(other, PodGroup):
                return QueueingHint.QUEUE if other.key == group_key(pod) else QueueingHint.SKIP
            return QueueingHint.QUEUE

        return [
            ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD), same_group),
            ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, Action.ADD | Action.UPDATE), same_group),
            # Room freed or added may now hold the whole group.
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE)),
        ]
