"""NodePressure (ours): keeps a profile's pods off the nodes that pressure relief holds under
pressure, when the profile's EvictionPolicy has pressureRelief on.

Relief evicts pods before the kubelet reports a pressure condition, so the taints the node
lifecycle controller derives from those conditions (TaintNodesByCondition) are not there yet
and an evicted pod's replacement would go straight back. This filter rejects the nodes as those
taints will: a pod that tolerates `node.kubernetes.io/memory-pressure:NoSchedule` (and the disk
and PID ones) still passes. The framework adds it to profiles that name an EvictionPolicy; it
passes every node unless that policy relieves pressure, so other profiles, and the default
profile, are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from policy_scheduler.scheduler.framework.batch import TOLERATIONS_SIGNER, tolerations_signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, Handle, SignFragments
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Pod, Taint
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.tainttoleration import NO_SCHEDULE, tolerates
from policy_scheduler.scheduler.pressure.signals import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE
from policy_scheduler.scheduler.pressure.view import NodePressureView

# The taints TaintNodesByCondition puts on a node reporting each condition.
CONDITION_TAINTS: Mapping[str, Taint] = MappingProxyType(
    {
        MEMORY_PRESSURE: Taint(key="node.kubernetes.io/memory-pressure", effect=NO_SCHEDULE),
        DISK_PRESSURE: Taint(key="node.kubernetes.io/disk-pressure", effect=NO_SCHEDULE),
        PID_PRESSURE: Taint(key="node.kubernetes.io/pid-pressure", effect=NO_SCHEDULE),
    }
)
ERR_REASON = "node(s) had {conditions} that pressure relief holds (EvictionPolicy {policy})"


class NodePressure(FilterPlugin):
    name = "NodePressure"
    node_only = True  # reads the node's relief mark only: evicting pods there changes nothing now
    signs_pods = True

    def __init__(self, handle: Handle, eviction_policy: str) -> None:
        super().__init__(handle, eviction_policy)
        self.eviction_policy = eviction_policy
        # ((view generation, rows generation), per row the index of its conditions in the list
        # (0: unmarked), the distinct condition sets with () first)
        self._rows: tuple[tuple[int, int], IntArray, list[tuple[str, ...]]] | None = None

    @property
    def view(self) -> NodePressureView:
        return self.handle.services.node_pressure

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((TOLERATIONS_SIGNER, tolerations_signature(pod)),)

    def _marked(self) -> tuple[IntArray, list[tuple[str, ...]]]:
        key = (self.view.generation, self.table.rows_generation)
        if self._rows is None or self._rows[0] != key:
            marks = self.view.marks()
            kinds: list[tuple[str, ...]] = [()]
            codes = np.zeros(len(self.table.nodes), dtype=np.int64)
            for name, mark in marks.items():
                if name not in self.table:
                    continue
                if mark.conditions not in kinds:
                    kinds.append(mark.conditions)
                codes[self.table.row(name)] = kinds.index(mark.conditions)
            self._rows = (key, codes, kinds)
        return self._rows[1], self._rows[2]

    def _status(self, pod: Pod, conditions: tuple[str, ...]) -> Status:
        untolerated = [c for c in conditions if not tolerates(pod.tolerations, CONDITION_TAINTS[c])]
        if not untolerated:
            return SUCCESS
        return unresolvable(ERR_REASON.format(conditions=", ".join(untolerated), policy=self.eviction_policy))

    def _active(self) -> bool:
        return self.eviction_policy in self.view.policies

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if not self._active():
            return FilterResult.all_pass(len(rows))
        codes, kinds = self._marked()
        if len(kinds) == 1:
            return FilterResult.all_pass(len(rows))
        verdicts = [self._status(pod, conditions) for conditions in kinds]
        failing = [i for i, status in enumerate(verdicts) if not status.is_success]
        if not failing:
            return FilterResult.all_pass(len(rows))
        slot = np.full(len(kinds), -1, dtype=np.int32)
        slot[failing] = np.arange(len(failing), dtype=np.int32)
        row_slot = slot[codes[rows]]
        failed = row_slot >= 0
        return FilterResult(~failed, np.maximum(row_slot, 0), tuple(verdicts[i] for i in failing))

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        if not self._active():
            return SUCCESS
        codes, kinds = self._marked()
        return self._status(pod, kinds[int(codes[row])])
