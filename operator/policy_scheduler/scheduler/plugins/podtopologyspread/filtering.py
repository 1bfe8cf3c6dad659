"""PreFilter / Filter of PodTopologySpread (upstream filtering.go), vectorized over rows.

Per hard constraint the state keeps matching-pod counts indexed by the topology key's label
value code, plus which codes are domains (values of eligible nodes). Upstream keeps the two
smallest counts ("critical paths"); the minimum over present domains is the same number for the
changes AddPod/RemovePod can make within one cycle (all on one node), so we compute it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.interfaces import FilterResult
from policy_scheduler.scheduler.framework.status import Status, unresolvable, unschedulable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import ABSENT, BoolArray, IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.podtopologyspread.common import (
    Constraint,
    InclusionMasks,
    PodIndex,
    node_has_keys,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
MAX_INT32 = 2**31 - 1

_LABEL_MISSING = unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_SKEW_EXCEEDED = unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


@dataclass(slots=True)
class PreFilterState:
    constraints: Sequence[Constraint]
    counts: list[IntArray]  # per constraint: matching pods by domain (label value code)
    present: list[BoolArray]  # per constraint: which codes are domains (TpValueToMatchNum keys)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints, [c.copy() for c in self.counts], [p.copy() for p in self.present]
        )

    def min_count(self, i: int) -> int:
        """CriticalPaths[i][0].MatchNum: the smallest domain count (MaxInt32 without domains)."""
        present = self.present[i]
        return int(self.counts[i][present].min()) if present.any() else MAX_INT32

    def min_match(self, i: int) -> int:
        """minMatchNum: the global minimum, or 0 with fewer domains than minDomains."""
        if int(np.count_nonzero(self.present[i])) < self.constraints[i].min_domains:
            return 0
        return self.min_count(i)

    def match_num(self, i: int, codes: npt.NDArray[np.int32]) -> IntArray:
        """TpValueToMatchNum[i][value] for label codes (0 for values that are not domains)."""
        counts = self.counts[i]
        if not len(counts):
            return np.zeros(len(codes), dtype=np.int64)
        known = (codes >= 0) & (codes < len(counts))
        return np.where(known, counts[np.clip(codes, 0, len(counts) - 1)], 0)

    def domain_counts(self, i: int, table: NodeTable) -> dict[str, int]:
        """TpValueToMatchNum[i] keyed by label value (for tests and explanations)."""
        values = table.label_values(self.constraints[i].topology_key)
        return {values[code]: int(self.counts[i][code]) for code in np.flatnonzero(self.present[i])}

    def update(self, table: NodeTable, index_row: int, pod: Pod, preemptor: Pod, delta: int) -> None:
        """updateWithPod: account `pod` added to (delta 1) or removed from (-1) a node."""
        if pod.namespace != preemptor.namespace:
            return
        rows = np.asarray([index_row], dtype=np.intp)
        if not node_has_keys(table, self.constraints, rows)[0]:
            return
        inclusion = InclusionMasks(table, preemptor, rows)
        for i, c in enumerate(self.constraints):
            # Selector.Matches, not countPodsMatchSelector: an empty selector matches here.
            if not c.selector.matches(pod.labels) or not inclusion.of(c)[0]:
                continue
            code = int(table.label_codes(c.topology_key)[index_row])
            self._ensure(i, code + 1)
            self.counts[i][code] += delta
            self.present[i][code] = True

    def _ensure(self, i: int, size: int) -> None:
        grow = size - len(self.counts[i])
        if grow > 0:
            self.counts[i] = np.concatenate([self.counts[i], np.zeros(grow, dtype=np.int64)])
            self.present[i] = np.concatenate([self.present[i], np.zeros(grow, dtype=np.bool_)])


def compute_pre_filter_state(
    table: NodeTable, index: PodIndex, pod: Pod, constraints: Sequence[Constraint]
) -> PreFilterState:
    """calPreFilterState over every node of the table."""
    rows = np.arange(table.n, dtype=np.intp)
    has_keys = node_has_keys(table, constraints, rows)
    inclusion = InclusionMasks(table, pod, rows)
    counts: list[IntArray] = []
    present: list[BoolArray] = []
    for c in constraints:
        eligible = has_keys & inclusion.of(c)
        codes = table.label_codes(c.topology_key)[eligible]
        size = len(table.label_values(c.topology_key))
        per_row = index.match_counts(table, c.selector, pod.namespace)[eligible]
        counts.append(np.bincount(codes, weights=per_row, minlength=size).astype(np.int64))
        present.append(np.bincount(codes, minlength=size) > 0)
    return PreFilterState(constraints, counts, present)


def filter_rows(table: NodeTable, state: PreFilterState, pod: Pod, rows: Rows) -> FilterResult:
    """Filter: per node, the first constraint that fails decides (missing label or skew)."""
    # 0 passed, 1 missing topology label, 2 skew exceeded
    outcome = np.zeros(len(rows), dtype=np.int32)
    for i, c in enumerate(state.constraints):
        codes = table.label_codes(c.topology_key)[rows]
        undecided = outcome == 0
        missing = codes == ABSENT
        self_match = 1 if c.selector.matches(pod.labels) else 0
        skew = state.match_num(i, codes) + self_match - state.min_match(i)
        outcome[undecided & missing] = 1
        outcome[undecided & ~missing & (skew > c.max_skew)] = 2
    statuses: tuple[Status, ...] = (_LABEL_MISSING, _SKEW_EXCEEDED)
    return FilterResult(outcome == 0, np.maximum(outcome - 1, 0).astype(np.int32), statuses)
