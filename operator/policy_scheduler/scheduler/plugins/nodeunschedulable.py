"""NodeUnschedulable: nodes with spec.unschedulable only take pods tolerating that taint."""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.framework.batch import TOLERATIONS_SIGNER, tolerations_signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    ClusterEventWithHint,
    QueueingHint,
    taint_events,
    unexpected_objects,
)
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, SignFragments
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Node, Pod, Taint
from policy_scheduler.scheduler.nodetable import Rows
from policy_scheduler.scheduler.plugins.deferred_resize import DeferredResizePreFilter

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def tolerates_unschedulable(pod: Pod) -> bool:
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable(DeferredResizePreFilter, FilterPlugin):
    name = "NodeUnschedulable"
    node_only = True  # reads the node object only
    signs_pods = True

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((TOLERATIONS_SIGNER, tolerations_signature(pod)),)

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if tolerates_unschedulable(pod):
            return FilterResult.all_pass(len(rows))
        failed = self.table.unschedulable[rows]
        return FilterResult.reject_where(failed, unresolvable(ERR_REASON_UNSCHEDULABLE))

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        if self.table.unschedulable[row] and not tolerates_unschedulable(pod):
            return unresolvable(ERR_REASON_UNSCHEDULABLE)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return taint_events(self._after_node_change, self._after_pod_toleration_change)

    @staticmethod
    def _after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Node):
            return QueueingHint.QUEUE
        if old is None:
            became_schedulable = not new.unschedulable
        else:
            became_schedulable = old.unschedulable and not new.unschedulable
        return QueueingHint.QUEUE if became_schedulable else QueueingHint.SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Pod):
            return QueueingHint.QUEUE
        if new.uid == pod.uid and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
