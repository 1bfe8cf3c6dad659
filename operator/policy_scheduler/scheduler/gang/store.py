"""PodGroupStore: the groups, which pods belong to each, and which members hold a node.

Fed by whoever feeds the Engine (the operator's PodGroup informer, simulate's YAML, tests):
groups with `set_group`/`delete_group`, pods through the Engine's pod events. It follows the
NodeTable as a PodListener, so "assigned" (bound or assumed) members are counted without
walking every node, as upstream's CalculateAssignedPods does.
"""

from __future__ import annotations

from collections.abc import Callable

from policy_scheduler.scheduler.gang.podgroup import (
    GroupState,
    PodGroup,
    group_key,
    scheduling_group_key,
    scheduling_policy_key,
)
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable, PodListener


class PodGroupStore:
    """One store per front door: `key_of` says which group a pod is in (its members are counted
    by it), `policy_key_of` which group's spec applies to it (the same but for v1.35's replicas
    of one Workload template)."""

    def __init__(
        self,
        key_of: Callable[[Pod], str] = group_key,
        policy_key_of: Callable[[Pod], str] | None = None,
    ) -> None:
        self.key_of = key_of
        self.policy_key_of = policy_key_of or key_of
        self.groups: dict[str, PodGroup] = {}
        self.states: dict[str, GroupState] = {}
        self._group_of: dict[str, str] = {}  # pod key -> group key
        self._assigned: dict[str, dict[str, int]] = {}  # group key -> assigned pod key -> row
        self._table: NodeTable | None = None
        # Called with a group key when its status (GroupState) changed: the status writer.
        self.listeners: list[Callable[[str], None]] = []

    # ---- groups ------------------------------------------------------------------------------

    def set_group(self, group: PodGroup) -> PodGroup | None:
        old = self.groups.get(group.key)
        self.groups[group.key] = group
        self.states.setdefault(group.key, GroupState())
        return old

    def delete_group(self, key: str) -> None:
        self.groups.pop(key, None)
        state = self.states.get(key)
        if state is not None and not state.members:
            del self.states[key]

    def get(self, key: str) -> PodGroup | None:
        return self.groups.get(key)

    def group_of(self, pod: Pod) -> PodGroup | None:
        """The group whose spec applies to `pod` (None: in no group, or its group is missing)."""
        key = self.policy_key_of(pod)
        return self.groups.get(key) if key else None

    def state(self, key: str) -> GroupState:
        return self.states.setdefault(key, GroupState())

    # ---- members -----------------------------------------------------------------------------

    def pod_seen(self, pod: Pod) -> None:
        key = self.key_of(pod)
        previous = self._group_of.get(pod.key)
        if previous and previous != key:
            self.pod_gone(pod)
        if key:
            self._group_of[pod.key] = key
            self.state(key).members[pod.key] = pod

    def pod_gone(self, pod: Pod) -> None:
        key = self._group_of.pop(pod.key, "")
        if key and key in self.states:
            self.states[key].members.pop(pod.key, None)

    def member_count(self, key: str) -> int:
        state = self.states.get(key)
        return len(state.members) if state is not None else 0

    def siblings_to_wake(self, pod: Pod) -> list[str]:
        """The other members a new member `pod` may unblock (keys): none while its group lacks a
        PodGroup or minMember pods, since PreEnqueue would hold every one of them again."""
        key = self.key_of(pod)
        group = self.group_of(pod) if key else None
        if group is None or group.malformed or self.member_count(key) < group.min_member:
            return []
        return [k for k in self.states[key].members if k != pod.key]

    # ---- assigned members (a PodListener on the node table) ----------------------------------

    def attach(self, table: NodeTable) -> None:
        """Follow `table` (once): count the members it already holds, then its changes."""
        if self._table is table:
            return
        self._table = table
        self._assigned.clear()
        table.listeners.append(PodListener(self.on_add, self.on_remove))
        for row in range(len(table)):
            for pod in table.pods_on(row):
                self.on_add(pod, row)

    def on_add(self, pod: Pod, row: int) -> None:
        key = self.key_of(pod)
        if key:
            self._assigned.setdefault(key, {})[pod.key] = row

    def on_remove(self, pod: Pod, row: int) -> None:
        key = self.key_of(pod)
        assigned = self._assigned.get(key)
        if assigned is not None and assigned.get(pod.key) == row:
            del assigned[pod.key]
            if not assigned:
                del self._assigned[key]

    def assigned(self, key: str) -> dict[str, int]:
        """Members bound or assumed, pod key -> row (CalculateAssignedPods)."""
        return self._assigned.get(key, {})

    # ---- status ------------------------------------------------------------------------------

    def note(self, key: str, message: str, *, scheduled: int | None = None, now: float | None = None) -> None:
        """Record why a group waits ("" when it does not) and tell the status writer on a change."""
        state = self.state(key)
        changed = state.message != message
        state.message = message
        if now is not None and state.schedule_start_time is None:
            state.schedule_start_time = now
            changed = True
        if scheduled is not None and scheduled != state.scheduled:
            state.scheduled = scheduled
            changed = True
        if changed:
            for listener in self.listeners:
                listener(key)


def workload_pod_groups() -> PodGroupStore:
    """The store of the Workload API's pod groups (scheduling.k8s.io), the second front door."""
    return PodGroupStore(scheduling_group_key, scheduling_policy_key)
