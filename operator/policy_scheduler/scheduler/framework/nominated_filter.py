"""Filtering with nominated pods (upstream's RunFilterPluginsWithNominatedPods), in batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin
from policy_scheduler.scheduler.framework.outcomes import PASSED, FilterOutcome
from policy_scheduler.scheduler.framework.status import Status, error, filter_failure
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import Rows

if TYPE_CHECKING:
    from policy_scheduler.scheduler.framework.runtime import Framework


class NominatedPodsFilter:
    """A framework's filter pass that counts nominated pods of equal or higher priority."""

    def __init__(self, fw: Framework) -> None:
        self.fw = fw
        # (nominated priorities object, table rows_generation, highest nominated priority per row)
        self._cache: tuple[Mapping[str, int], int, npt.NDArray[np.int64]] | None = None

    def run(self, state: CycleState, pod: Pod, rows: Rows) -> FilterOutcome:
        """RunFilterPluginsWithNominatedPods in batch: nodes with nominated pods of equal or higher
        priority must pass both with those pods placed and without them.

        Upstream runs the pass with the nominated pods first, so when it fails its status is the
        node's status even if the pass without them failed too.
        """
        outcome = self.fw.run_filters(state, pod, rows)
        positions = self._rows_with_nominations(rows, pod)
        if not positions:
            return outcome
        nominator = self.fw.handle.nominator
        nodes = self.fw.handle.table.nodes
        added: list[tuple[int, int, list[Pod]]] = []  # (position, row, pods to add there)
        for i, row in zip(positions, rows[positions].tolist(), strict=True):
            nominated = self._eligible(pod, row, nominator.nominated_pods_for_node(nodes[row].name))
            if nominated:
                added.append((i, row, nominated))
        adjusted = self.fw.adjusting_filter(state)
        if adjusted is not None:
            self._override_by_adjusted_filter(state, pod, outcome, added, adjusted)
            return outcome
        if not self.has_active_extensions(state):
            statuses = self._filter_rows_with_added_pods(state, pod, added)
        else:
            statuses = [self.filter_with_added_pods(state, pod, row, pods) for _, row, pods in added]
        for (i, _, _), status in zip(added, statuses, strict=True):
            if not status.is_success:
                outcome.statuses.append(status)
                outcome.status_ref[i] = len(outcome.statuses) - 1
        return outcome

    def _override_by_adjusted_filter(
        self,
        state: CycleState,
        pod: Pod,
        outcome: FilterOutcome,
        added: list[tuple[int, int, list[Pod]]],
        adjusted: FilterPlugin,
    ) -> None:
        """The pass with nominated pods for all their rows at once, nothing placed on the table
        (see Framework.adjusting_filter). Every other running filter reads only the node, so with
        the nominated pods it decides as it did without them: a row's status changes only where
        the pass without them got as far as `adjusted` and `adjusted` now fails."""
        if not added:
            return
        order = [p.name for p in self.fw.points.filter if p.name not in state.skip_filter]
        at = order.index(adjusted.name)
        position_of = {name: k for k, name in enumerate(order)}
        positions = np.asarray([i for i, _, _ in added], dtype=np.intp)
        result = adjusted.filter_adjusted(state, pod, outcome.rows[positions], [pods for _, _, pods in added])
        # Where the pass without nominated pods stopped: the failing plugin's place (one lookup
        # per distinct status, not per row), or past the end where it passed.
        place_of_status = np.asarray(
            [position_of.get(s.plugin, len(order)) for s in outcome.statuses] + [len(order)], dtype=np.intp
        )
        refs = outcome.status_ref[positions]
        reached = place_of_status[np.where(refs == PASSED, len(outcome.statuses), refs)]
        failed = ~result.passed
        override = failed & (reached >= at)
        if override.any():
            # One status per distinct failure of `adjusted`, shared by its rows (as the batch
            # filter pass shares them), not one per row.
            assert result.status_index is not None
            used, local = np.unique(result.status_index[override], return_inverse=True)
            base = len(outcome.statuses)
            outcome.statuses.extend(filter_failure(result.statuses[k], adjusted.name) for k in used.tolist())
            outcome.status_ref[positions[override]] = base + local.reshape(-1)
        metrics = self.fw.plugin_metrics
        if metrics is not None:
            # The pass with nominated pods evaluates each plugin up to where it stops.
            stops = np.where(override, at, reached)
            for k, name in enumerate(order):
                metrics.evaluated(self.fw.scheduler_name, name, "Filter", int(np.count_nonzero(stops >= k)))

    def run_row(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin | None = None,
        removed: Sequence[Pod] = (),
    ) -> Status:
        """`run` on one row, as upstream orders it: with the nominated pods first (a failure
        there is the node's status), then without them. With `adjusted` (the framework's
        adjusting_filter), nothing is placed on the table and `removed` counts as taken off."""
        nominated = self.nominated_on(row, pod)
        if nominated:
            if adjusted is not None:
                status = self.fw.filter_row(state, pod, row, adjusted, nominated, removed)
            else:
                status = self.filter_with_added_pods(state, pod, row, nominated)
            if not status.is_success:
                return status
        return self.fw.filter_row(state, pod, row, adjusted, (), removed)

    def nominated_on(self, row: int, pod: Pod) -> list[Pod]:
        """The nominated pods addGENominatedPods would place on this row for `pod`."""
        tops = self.fw.handle.nominator.nominated_priorities()
        if not tops:
            return []
        name = self.fw.handle.table.nodes[row].name
        if tops.get(name, pod.priority - 1) < pod.priority:
            return []
        return self._eligible(pod, row, self.fw.handle.nominator.nominated_pods_for_node(name))

    def _eligible(self, pod: Pod, row: int, candidates: Sequence[Pod]) -> list[Pod]:
        on_node = self.fw.handle.table.pods[row]
        return [
            p
            for p in candidates
            if p.priority >= pod.priority
            and p.uid != pod.uid
            and p.key != pod.key
            # already on the node (a gang preemption's scratch placement): counted once
            and p.key not in on_node
        ]

    def _rows_with_nominations(self, rows: Rows, pod: Pod) -> list[int]:
        """Positions of rows whose node holds a nominated pod of priority >= the pod's, in row
        order (upstream's addGENominatedPods adds nothing elsewhere).

        Few rows (preemption's one-node dry runs) are looked up by name; many rows go through
        a per-row array of the highest nominated priority, rebuilt only when the nominations
        or the rows change.
        """
        tops = self.fw.handle.nominator.nominated_priorities()
        if not tops:
            return []
        if len(rows) <= len(tops):
            nodes = self.fw.handle.table.nodes
            return [
                i
                for i, row in enumerate(rows.tolist())
                if tops.get(nodes[row].name, pod.priority - 1) >= pod.priority
            ]
        top_by_row = self._top_by_row(tops)
        positions: list[int] = np.flatnonzero(top_by_row[rows] >= pod.priority).tolist()
        return positions

    def _top_by_row(self, tops: Mapping[str, int]) -> npt.NDArray[np.int64]:
        table = self.fw.handle.table
        cached = self._cache
        if cached is not None and cached[0] is tops and cached[1] == table.rows_generation:
            return cached[2]
        # Below any int32 priority: rows without nominations never qualify.
        top_by_row = np.full(len(table), np.iinfo(np.int64).min, dtype=np.int64)
        for name, priority in tops.items():
            row = table.index.get(name)
            if row is not None:
                top_by_row[row] = priority
        self._cache = (tops, table.rows_generation, top_by_row)
        return top_by_row

    def has_active_extensions(self, state: CycleState) -> bool:
        """Whether a PreFilter plugin with AddPod/RemovePod extensions runs for this pod: then the
        cycle state depends on which pods are added and each node needs its own state."""
        return any(p.has_extensions and p.name not in state.skip_filter for p in self.fw.points.pre_filter)

    def _filter_rows_with_added_pods(
        self, state: CycleState, pod: Pod, added: list[tuple[int, int, list[Pod]]]
    ) -> list[Status]:
        """The pass with nominated pods for many nodes at once. Without active PreFilter
        extensions the cycle state does not depend on the added pods, and filters read only
        their own row of the table, so placing every node's nominated pods together and
        filtering those rows in one batch gives each node the status it would get alone."""
        table = self.fw.handle.table
        placed: list[tuple[Pod, int]] = []
        with self.fw.trial_placements(state):
            try:
                for _, row, pods in added:
                    for other in pods:
                        table.add_pod(other, row)
                        placed.append((other, row))
                rows = np.asarray([row for _, row, _ in added], dtype=np.intp)
                batch = self.fw.run_filters(state.clone(), pod, rows)
                return [batch.status_at(j) for j in range(len(added))]
            finally:
                for other, row in placed:
                    table.remove_pod(other, row)

    def filter_with_added_pods(self, state: CycleState, pod: Pod, row: int, added: list[Pod]) -> Status:
        """One node with its nominated pods placed (and the PreFilter extensions told, on a
        clone of the state); everything is undone before returning."""
        table = self.fw.handle.table
        trial_state = state.clone()
        placed: list[Pod] = []
        with self.fw.trial_placements(state):
            try:
                for other in added:
                    table.add_pod(other, row)
                    placed.append(other)
                    status = self.fw.run_pre_filter_add_pod(trial_state, pod, other, row)
                    if not status.is_success:
                        return error(f"adding nominated pod {other.key}: {status.message}")
                return self.fw.filter_row(trial_state, pod, row)
            finally:
                for other in placed:
                    table.remove_pod(other, row)
