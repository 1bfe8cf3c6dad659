"""SchedulingGates: keeps pods with spec.schedulingGates out of the active queue."""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    unexpected_objects,
)
from policy_scheduler.scheduler.framework.interfaces import PreEnqueuePlugin
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Pod


class SchedulingGates(PreEnqueuePlugin):
    name = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        # Go's %v of a []string: "[a b]".
        return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self._after_gates_eliminated,
            )
        ]

    @staticmethod
    def _after_gates_eliminated(pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only the gated pod's own update can release it."""
        if unexpected_objects(old, new, Pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.SKIP
