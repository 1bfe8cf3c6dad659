"""EvictionHeadroom: a score plugin preferring nodes whose real usage leaves headroom above
their eviction thresholds, so new pods stay off nodes heading for node-pressure eviction.

For each configured signal with usage data:

    headroom = available - demand - threshold      room = capacity - threshold
    score    = 100 * clamp(headroom / room, 0, 1)   (0 when there is no room at all)

where `threshold` is the highest of the node's own thresholds on the signal (when the usage
store knows its kubelet's) and the plugin's `thresholds`, and `demand` is the pod's request of
the signal's resource (memory for memory signals, ephemeral-storage for nodefs; none for
inodes, PIDs and image layers) plus the requests of the node's pods that the usage sample does
not include yet. A signal without usage data, or with data older than `maxUsageAgeSeconds`,
scores NEUTRAL_SCORE. The node's score is the weighted mean over the signals.
Off unless a profile enables it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE, Handle, ScorePlugin, SignFragments
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.evictionheadroom.args import EvictionHeadroomArgs
from policy_scheduler.scheduler.pressure.headroom import DEMAND_RESOURCE, DEMAND_RESOURCES, NodeUsageStore

NEUTRAL_SCORE = MAX_NODE_SCORE // 2
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _Columns:
    """Per configured signal (first axis) and table row: the usage store as arrays."""

    key: tuple[int, int]
    available: FloatArray
    capacity: FloatArray
    level: FloatArray
    known: BoolArray
    time: FloatArray  # nan: unknown
    measured: dict[str, FloatArray]  # per demand resource; nan: unknown


class EvictionHeadroom(ScorePlugin):
    name = "EvictionHeadroom"
    signs_pods = True
    args_type = EvictionHeadroomArgs

    def __init__(self, handle: Handle, args: EvictionHeadroomArgs) -> None:
        super().__init__(handle, args)
        self.typed = args
        self._floors = self.typed.floors()
        self._weights = np.asarray([s.weight for s in self.typed.signals], dtype=np.int64)
        self._columns: _Columns | None = None

    @property
    def store(self) -> NodeUsageStore:
        return self.handle.services.node_usage

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return (("EvictionHeadroom", tuple(pod.requests.get(r, 0) for r in DEMAND_RESOURCES)),)

    def _sync(self) -> _Columns:
        table, store = self.table, self.store
        key = (table.rows_generation, store.generation)
        if self._columns is not None and self._columns.key == key:
            return self._columns
        signals = [s.name for s in self.typed.signals]
        n = len(table)
        shape = (len(signals), n)
        available, capacity = np.zeros(shape), np.ones(shape)
        level, time = np.zeros(shape), np.full(shape, np.nan)
        known = np.zeros(shape, dtype=np.bool_)
        measured = {r: np.full(n, np.nan) for r in DEMAND_RESOURCES}
        for row, node in enumerate(table.nodes[:n]):
            usage = store.get(node.name)
            if usage is None:
                continue
            for resource, value in (usage.measured_requests or {}).items():
                if resource in measured:
                    measured[resource][row] = value
            for i, signal in enumerate(signals):
                observed = usage.observations.get(signal)
                if observed is None:
                    continue
                known[i, row] = True
                available[i, row], capacity[i, row] = observed.available, observed.capacity
                level[i, row] = usage.level(signal, self._floors.get(signal)) or 0
                time[i, row] = observed.time if observed.time is not None else np.nan
        self._columns = _Columns(key, available, capacity, level, known, time, measured)
        return self._columns

    def _unmeasured(self, cols: _Columns, resource: str, rows: Rows, minus: int = 0) -> FloatArray:
        """Requests of the rows' pods (less `minus`) beyond those the usage sample includes."""
        index = self.table.resource_row(resource)
        if index is None:
            return np.zeros(len(rows))
        requested = self.table.requested[index, rows].astype(np.float64) - minus
        measured = cols.measured[resource][rows]
        return np.where(np.isnan(measured), 0.0, np.maximum(requested - measured, 0.0))

    def _fresh(self, cols: _Columns, rows: Rows) -> BoolArray:
        known = cols.known[:, rows]
        limit = self.typed.max_usage_age_seconds
        if not limit:
            return known
        times = cols.time[:, rows]
        now = self.handle.clock()
        with np.errstate(invalid="ignore"):
            return known & (np.isnan(times) | (now - times <= limit))

    def signal_scores(self, pod: Pod, rows: Rows, counted: bool = False) -> tuple[IntArray, BoolArray]:
        """Per configured signal and row: the score, and whether it had (fresh) usage data.
        `counted`: the rows' requests include the pod's own (it is bound or assumed there), which
        then count once, as when it was scored."""
        cols = self._sync()
        fresh = self._fresh(cols, rows)
        scores = np.full((len(self.typed.signals), len(rows)), NEUTRAL_SCORE, dtype=np.int64)
        demand_of = {
            r: float(pod.requests.get(r, 0))
            + self._unmeasured(cols, r, rows, pod.requests.get(r, 0) if counted else 0)
            for r in DEMAND_RESOURCES
        }
        for i, s in enumerate(self.typed.signals):
            resource = DEMAND_RESOURCE.get(s.name)
            demand = demand_of[resource] if resource is not None else np.zeros(len(rows))
            level = cols.level[i, rows]
            room = cols.capacity[i, rows] - level
            headroom = cols.available[i, rows] - demand - level
            with np.errstate(divide="ignore", invalid="ignore"):
                fraction = np.where(room > 0, np.clip(headroom / room, 0.0, 1.0), 0.0)
            scores[i] = np.where(
                fresh[i], np.floor(fraction * MAX_NODE_SCORE).astype(np.int64), NEUTRAL_SCORE
            )
        return scores, fresh

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        if len(rows) == 0:
            return np.zeros(0, dtype=np.int64)
        scores, _ = self.signal_scores(pod, rows)
        total: IntArray = (scores * self._weights[:, None]).sum(axis=0) // int(self._weights.sum())
        return total

    def reasons(self, pod: Pod, node_name: str) -> list[str]:
        """Why `node_name` scores what it does for `pod`, one line per signal (for explain)."""
        if node_name not in self.table:
            return [f"node {node_name} is not known"]
        row = np.asarray([self.table.row(node_name)], dtype=np.intp)
        counted = any(p.key == pod.key for p in self.table.pods_on(int(row[0])))
        scores, fresh = self.signal_scores(pod, row, counted)
        cols = self._sync()
        lines: list[str] = []
        for i, s in enumerate(self.typed.signals):
            score = int(scores[i, 0])
            if not fresh[i, 0]:
                why = "no usage data" if not cols.known[i, row[0]] else "usage data too old"
                lines.append(f"{s.name}: {why}: neutral score {score}")
                continue
            available, level = cols.available[i, row[0]], cols.level[i, row[0]]
            lines.append(
                f"{s.name}: {math.floor(available)} available, eviction threshold {math.floor(level)}: "
                f"score {score} (weight {s.weight})"
            )
        return lines
