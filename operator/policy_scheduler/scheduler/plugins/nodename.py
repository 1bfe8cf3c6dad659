"""NodeName: a pod with spec.nodeName fits only that node.

From v1.37 a PreFilter also narrows the candidates to spec.nodeName (for pods already bound
whose resize is deferred), so the other nodes are charged to NodeName as "didn't satisfy
plugin(s) [NodeName]" and are no preemption targets; before, only Filter saw them.
"""

from __future__ import annotations

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import BoolArray, Rows
from policy_scheduler.scheduler.versioning.features import Features

ERR_REASON = "node(s) didn't match the requested node name"
PRE_FILTER = "preFilter"


class NodeName(PreFilterPlugin, FilterPlugin):
    name = "NodeName"
    node_only = True  # reads the node object only
    signs_pods = True

    @classmethod
    def points_absent_in(cls, features: Features) -> frozenset[str]:
        return frozenset() if features.behaviour.node_name_pre_filter else frozenset({PRE_FILTER})

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return (("NodeName", pod.node_name),)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        if pod.node_name:
            return PreFilterResult(frozenset({pod.node_name})), SUCCESS
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if not pod.node_name:
            return FilterResult.all_pass(len(rows))
        target = self.table.index.get(pod.node_name)
        failed: BoolArray = rows != target if target is not None else np.ones(len(rows), dtype=np.bool_)
        return FilterResult.reject_where(failed, unresolvable(ERR_REASON))

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        if not pod.node_name or self.table.index.get(pod.node_name) == row:
            return SUCCESS
        return unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD))]
