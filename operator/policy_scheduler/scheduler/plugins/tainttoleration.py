"""TaintToleration: filter on NoSchedule/NoExecute taints, score by untolerated PreferNoSchedule.

Both are evaluated once per distinct taint set of the table (table.taint_sets), then indexed
by each row's taint set id, so the per-node work is a single numpy gather.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.batch import TOLERATIONS_SIGNER, tolerations_signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    ClusterEventWithHint,
    QueueingHint,
    taint_events,
    unexpected_objects,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
    default_normalize,
)
from policy_scheduler.scheduler.framework.status import SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Node, Pod, Taint, Toleration
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.deferred_resize import DeferredResizePreFilter

ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
PRE_SCORE_KEY = "PreScoreTaintToleration"
NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
_MAX_CACHED_TOLERATION_SETS = 1024

Tolerations = tuple[Toleration, ...]


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """TolerationsTolerateTaint (TaintTolerationComparisonOperators is alpha and off in v1.35)."""
    return any(t.tolerates(taint) for t in tolerations)


def has_untolerated_do_not_schedule_taint(taints: Iterable[Taint], tolerations: Tolerations) -> bool:
    """FindMatchingUntoleratedTaint with helper.DoNotScheduleTaintsFilterFunc."""
    return any(t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerates(tolerations, t) for t in taints)


def count_untolerated_prefer_no_schedule(taints: Iterable[Taint], tolerations: Tolerations) -> int:
    return sum(1 for t in taints if t.effect == PREFER_NO_SCHEDULE and not tolerates(tolerations, t))


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> Tolerations:
    """getAllTolerationPreferNoSchedule: an empty effect tolerates every effect."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


class _PerTaintSet:
    """Values per taint set id for one toleration list, extended as the table interns new sets."""

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._luts: dict[tuple[str, Tolerations], IntArray] = {}

    def lookup(
        self,
        table: NodeTable,
        kind: str,
        tolerations: Tolerations,
        evaluate: Callable[[tuple[Taint, ...], Tolerations], int],
    ) -> IntArray:
        if self._table is not table or len(self._luts) > _MAX_CACHED_TOLERATION_SETS:
            self._table = table
            self._luts = {}
        key = (kind, tolerations)
        lut = self._luts.get(key)
        done = 0 if lut is None else len(lut)
        if lut is None or done < len(table.taint_sets):
            new = np.fromiter(
                (evaluate(taints, tolerations) for taints in table.taint_sets[done:]),
                dtype=np.int64,
                count=len(table.taint_sets) - done,
            )
            lut = new if lut is None else np.concatenate([lut, new])
            self._luts[key] = lut
        return lut


class TaintToleration(DeferredResizePreFilter, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "TaintToleration"
    node_only = True  # reads the node object only
    signs_pods = True

    def __init__(self, handle: Handle, args: Mapping[str, Any]) -> None:
        super().__init__(handle, args)
        self._per_taint_set = _PerTaintSet()

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((TOLERATIONS_SIGNER, tolerations_signature(pod)),)

    def _untolerated(self, pod: Pod) -> IntArray:
        """Per taint set of the table: 1 where the pod does not tolerate a NoSchedule/NoExecute taint."""
        return self._per_taint_set.lookup(
            self.table,
            "filter",
            pod.tolerations,
            lambda ts, tol: int(has_untolerated_do_not_schedule_taint(ts, tol)),
        )

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        failed = self._untolerated(pod)[self.table.taint_set[rows]].astype(np.bool_)
        return FilterResult.reject_where(failed, unresolvable(ERR_REASON_UNTOLERATED))

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        untolerated = self._untolerated(pod)[int(self.table.taint_set[row])]
        return unresolvable(ERR_REASON_UNTOLERATED) if untolerated else SUCCESS

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        state.write(PRE_SCORE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        tolerations = state.read(PRE_SCORE_KEY)
        if tolerations is None:
            tolerations = prefer_no_schedule_tolerations(pod.tolerations)
        lut = self._per_taint_set.lookup(
            self.table, "score", tolerations, count_untolerated_prefer_no_schedule
        )
        return lut[self.table.taint_set[rows]]

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize(scores, reverse=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return taint_events(self._after_node_change, self._after_pod_toleration_change)

    @staticmethod
    def _after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Node):
            return QueueingHint.QUEUE
        was_untolerated = old is None or has_untolerated_do_not_schedule_taint(old.taints, pod.tolerations)
        is_untolerated = has_untolerated_do_not_schedule_taint(new.taints, pod.tolerations)
        return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.SKIP

    @staticmethod
    def _after_pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.SKIP
