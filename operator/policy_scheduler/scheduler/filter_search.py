"""How far findNodesThatFitPod searches, and the rows it rejects on the way."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.outcomes import PASSED, FilterOutcome
from policy_scheduler.scheduler.framework.status import Status
from policy_scheduler.scheduler.nodetable import NodeTable

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """numFeasibleNodesToFind, including the adaptive default (50 - nodes/125, floor 5%)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


# Chunked filtering: the first chunk covers to_find plus a margin for rejected nodes; later
# chunks follow the pass rate seen so far. After MAX_CHUNKS - 1 guesses the rest goes at once.
_CHUNK_MARGIN = 32
MAX_CHUNKS = 4


def first_chunk(to_find: int, count: int) -> int:
    size = to_find + to_find // 8 + _CHUNK_MARGIN
    return count if size * 2 > count else size


def next_chunk(to_find: int, found: int, evaluated: int, count: int) -> int:
    missing = to_find + 1 - found  # one past to_find proves where the search stops
    if found == 0:
        # Not one of the first to_find + 1/8 + margin nodes passed: to_find + 1 more passing
        # nodes are all but impossible, so every node will be filtered; do it in one pass (a
        # pod that fits nowhere took three).
        return count - evaluated
    return int(missing * evaluated / found * 1.25) + _CHUNK_MARGIN


class Rejections:
    """Rows rejected by Filter in one cycle, kept as filter outcomes.

    Only a pod that fits nowhere needs the per-node statuses (FitError, preemption), so the
    Diagnosis entries are built then, not on every successful cycle.
    """

    __slots__ = ("_parts", "nominated_row")

    def __init__(self) -> None:
        self._parts: list[tuple[FilterOutcome, npt.NDArray[np.intp]]] = []
        self.nominated_row: int | None = None  # rejected first, and maybe again in the search

    def add(self, outcome: FilterOutcome, prefix: int) -> None:
        """Record the failed rows among the first `prefix` rows of `outcome`."""
        failed = np.flatnonzero(outcome.status_ref[:prefix] != PASSED)
        if len(failed):
            self._parts.append((outcome, failed))

    def count(self) -> int:
        """How many distinct nodes were rejected."""
        total = sum(len(failed) for _, failed in self._parts)
        row = self.nominated_row
        if row is not None and any(np.any(o.rows[failed] == row) for o, failed in self._parts[1:]):
            total -= 1
        return total

    def fill(self, diagnosis: Diagnosis, table: NodeTable) -> None:
        """Hand the rejected nodes to diagnosis.node_to_status in bulk, and note the rejecting
        plugins. A nominated node rejected again by the search keeps the search's status."""
        if not self._parts:
            return
        rows: list[npt.NDArray[np.intp]] = []
        codes: list[npt.NDArray[np.intp]] = []
        statuses: list[Status] = []
        for outcome, failed in self._parts:
            refs = outcome.status_ref[failed].astype(np.intp)
            present = np.bincount(refs, minlength=len(outcome.statuses))
            for ref in np.flatnonzero(present).tolist():
                diagnosis.add_plugin_status(outcome.statuses[ref])
            rows.append(outcome.rows[failed])
            codes.append(refs + len(statuses))
            statuses.extend(outcome.statuses)
        self._parts = []
        all_rows = np.concatenate(rows)
        all_codes = np.concatenate(codes)
        if self.nominated_row is not None and len(rows) > 1 and np.any(all_rows[1:] == self.nominated_row):
            all_rows, all_codes = all_rows[1:], all_codes[1:]  # rows[0] is the nominated node alone
        diagnosis.node_to_status.extend_bulk(table.names_array()[all_rows], all_codes, statuses)
