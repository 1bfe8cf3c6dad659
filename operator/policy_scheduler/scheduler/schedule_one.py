"""schedule_one: a synchronous scheduling cycle on the live node table, then an async binding cycle.

The scheduling cycle never awaits, so it sees a consistent state of the cache without copying
it. It assumes the chosen node in the table before returning; the binding cycle (permit wait,
pre-bind, bind, post-bind) runs as its own task and forgets the assumption if binding fails.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.binding_cycle import binding_cycle as run_binding_cycle
from policy_scheduler.scheduler.cache import Cache
from policy_scheduler.scheduler.cycle_contracts import (
    BindingTask,
    CycleQueue,
    NullHooks,
    ScheduleResult,
    SchedulerHooks,
)
from policy_scheduler.scheduler.cycle_failure import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    one_node_rejection,
    reason_of,
)
from policy_scheduler.scheduler.filter_search import (
    MAX_CHUNKS,
    Rejections,
    first_chunk,
    next_chunk,
    num_feasible_nodes_to_find,
)
from policy_scheduler.scheduler.framework.batch import Signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, FitError
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.framework.outcomes import PASSED, FilterOutcome, FrameworkError, ScoreOutcome
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable, Rows

if TYPE_CHECKING:
    from policy_scheduler.scheduler.diagnosis_recorder import CycleObserver

log = logging.getLogger(__name__)

NO_NODES_AVAILABLE = "no nodes available to schedule pods"
PLUGIN_METRICS_SAMPLE_PERCENT = 10  # upstream's pluginMetricsSamplePercent

CLEAR = ""  # nominated node value that clears a pod's nomination


@dataclass(slots=True)
class _BatchHint:
    """What findNodesThatFitPod hands schedulePod for opportunistic batching."""

    signature: Signature | None = None
    node: str = ""


def _one_row(table: NodeTable, name: str) -> Rows:
    return np.asarray([table.row(name)], dtype=np.intp)


class SchedulingError(RuntimeError):
    """Anything that is not "the pod does not fit": reported with reason SchedulerError."""


class NoNodesAvailableError(SchedulingError):
    """ErrNoNodesAvailable: upstream reports it as an UnschedulableAndUnresolvable status, so the
    pod's reason is Unschedulable, not SchedulerError."""


class ScheduleOne:
    """Upstream's Scheduler.ScheduleOne: one pod's scheduling cycle, then its binding cycle."""

    def __init__(
        self,
        cache: Cache,
        queue: CycleQueue,
        frameworks: Mapping[str, Framework] | Callable[[], Mapping[str, Framework]],
        *,
        hooks: SchedulerHooks | None = None,
        rng: np.random.Generator | None = None,
        observer: CycleObserver | None = None,
    ) -> None:
        self.cache = cache
        self.observer = observer  # explain recorder, metrics: told about every attempt
        self.queue = queue
        self._frameworks = frameworks
        self.hooks: SchedulerHooks = hooks or NullHooks()
        self.rng = rng or np.random.default_rng()
        self.next_start_node_index = 0
        self.scheduling_cycle = 0
        self.binding_tasks: set[asyncio.Task[None]] = set()

    @property
    def frameworks(self) -> Mapping[str, Framework]:
        return self._frameworks() if callable(self._frameworks) else self._frameworks

    @property
    def table(self) -> NodeTable:
        return self.cache.table

    # ---- the scheduling cycle (synchronous) --------------------------------------------------------

    def schedule_one(self, info: QueuedPodInfo) -> BindingTask | None:
        """Run one scheduling cycle; returns the binding work if a node was assumed."""
        pod = info.pod
        self.scheduling_cycle += 1
        framework = self.frameworks.get(pod.scheduler_name)
        if framework is None:
            # The profile was deleted while the pod was queued; it waits for a profile to return.
            self.hooks.failed(
                pod, REASON_UNSCHEDULABLE, f"no profile for schedulerName {pod.scheduler_name!r}", None, None
            )
            self.queue.add_unschedulable_if_not_present(info, self.scheduling_cycle)
            return None
        if pod.terminating or self.cache.is_assumed(pod):
            self.queue.done(pod.uid)
            return None
        started = time.monotonic()
        state = CycleState()
        # Its own random source: sampling must not change which node ties are broken to.
        state.record_plugin_metrics = random.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        if pod.malformed:
            self.fail(framework, info, REASON_UNSCHEDULABLE, pod.malformed, CLEAR, started, "unschedulable")
            return None
        try:
            result = self.schedule_pod(framework, state, pod)
        except FitError as fit:
            nominated = self._post_filter(framework, state, pod, fit.diagnosis)
            info.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            info.pending_plugins = set(fit.diagnosis.pending_plugins)
            self.fail(
                framework, info, REASON_UNSCHEDULABLE, str(fit), nominated, started, "unschedulable", fit
            )
            return None
        except NoNodesAvailableError as exc:
            self.fail(framework, info, REASON_UNSCHEDULABLE, str(exc), CLEAR, started, "unschedulable")
            return None
        except (SchedulingError, FrameworkError) as exc:
            self.fail(framework, info, REASON_SCHEDULER_ERROR, str(exc), CLEAR, started, "error")
            return None
        if self.observer is not None:
            self.observer.algorithm_finished(framework.scheduler_name, time.monotonic() - started)
            self.observer.node_chosen(
                pod,
                framework.scheduler_name,
                result.node_name,
                self.table,
                result.feasible_rows,
                result.scores,
                result.evaluated_nodes,
            )
        return self._assume_reserve_permit(framework, state, info, result.node_name, started)

    def _post_filter(
        self, framework: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> str | None:
        if not framework.points.post_filter:
            return None
        started = time.perf_counter()
        result, status = framework.run_post_filter(state, pod, diagnosis)
        framework.timed("PostFilter", started, status)
        if status.code == Code.ERROR:
            log.error("post filter failed", extra={"pod": pod.key, "error": status.message})
        elif status.reasons:  # a successful preemption has one from v1.37
            diagnosis.post_filter_msg = status.message
        if result is None:
            return None  # upstream's ModeNoop: a nomination stays as it is
        if result.nominated_node_name:
            self._clear_lower_nominations(pod, result.nominated_node_name)
            for member, node_name in result.nominations:
                self._clear_lower_nominations(member, node_name)
                self.queue.activate_nominated(member, node_name)
            self.hooks.preempting(pod, result, framework)  # writes the members' nominations too
        return result.nominated_node_name  # "" clears a stale nomination

    def _clear_lower_nominations(self, pod: Pod, node_name: str) -> None:
        """prepareCandidate: lower-priority pods nominated to this node lose the nomination,
        since the preemptor takes the room they were waiting for."""
        for other in self.queue.nominated_pods_for_node(node_name):
            if other.priority < pod.priority and other.key != pod.key:
                self.queue.delete_nominated(other)
                self.hooks.nomination_cleared(other)

    def _assume_reserve_permit(
        self, framework: Framework, state: CycleState, info: QueuedPodInfo, node_name: str, started: float
    ) -> BindingTask | None:
        pod = info.pod
        assumed = self.cache.assume_pod(pod, node_name)
        self.queue.delete_nominated(pod)
        status = framework.run_reserve(state, assumed, node_name)
        if status.is_success:
            status = framework.run_permit(state, assumed, node_name)
        if status.code not in (Code.SUCCESS, Code.WAIT):
            framework.run_unreserve(state, assumed, node_name)
            self.cache.forget_pod(assumed)
            message = status.message
            if status.is_rejected:
                message = one_node_rejection(info, node_name, status)
            result = "unschedulable" if status.is_rejected else "error"
            self.fail(framework, info, reason_of(status), message, CLEAR, started, result)
            return None
        return BindingTask(info, framework, state, assumed, node_name, started)

    def fail(
        self,
        framework: Framework,
        info: QueuedPodInfo,
        reason: str,
        message: str,
        nominated: str | None,
        started: float,
        result: str,
        fit: FitError | None = None,
    ) -> None:
        if self.observer is not None:
            num_nodes, diagnosis = (fit.num_all_nodes, fit.diagnosis) if fit is not None else (0, None)
            self.observer.attempt_failed(
                info.pod, framework.scheduler_name, reason, message, num_nodes, diagnosis
            )
        # upstream's NominatingInfo: None keeps the nomination, CLEAR ("") drops it, a name sets it.
        if nominated == CLEAR and not info.pod.nominated_node_name:
            nominated = None  # nothing to clear: no needless status write
        if nominated is not None:
            self.queue.activate_nominated(info.pod, nominated)
        self.queue.add_unschedulable_if_not_present(info, self.scheduling_cycle)
        self.hooks.failed(info.pod, reason, message, nominated, framework)
        self.hooks.cycle_finished(framework, result, time.monotonic() - started)

    def schedule_pod(self, framework: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        table = self.cache.table
        if len(table) == 0:
            raise NoNodesAvailableError(NO_NODES_AVAILABLE)
        hint = _BatchHint()
        feasible, diagnosis, rejected = self._find_nodes_that_fit(framework, state, pod, hint)
        if len(feasible) == 0:
            rejected.fill(diagnosis, table)
            raise FitError(pod.key, len(table), diagnosis)
        evaluated = len(feasible) + rejected.count()
        if len(feasible) == 1:
            name = table.nodes[int(feasible[0])].name
            framework.batch.store(hint.signature, hint.node, name, None, self.scheduling_cycle)
            return ScheduleResult(name, evaluated, 1, None, feasible)
        started = time.perf_counter()
        status = framework.run_pre_score(state, pod, feasible)
        framework.timed("PreScore", started, status)
        if not status.is_success:
            raise SchedulingError(status.message)
        if framework.has_score_plugins:
            started = time.perf_counter()
            scores = framework.run_score(state, pod, feasible)
            framework.timed("Score", started)
        else:
            scores = ScoreOutcome.unscored(len(feasible))
        others: list[str] | None = None
        if hint.signature is None:
            best = np.flatnonzero(scores.total == scores.total.max())
            chosen = int(feasible[best[int(self.rng.integers(len(best)))]])
        else:
            # newSortedNodeScores: by score, ties by a random key; the rest is the batch's ranking.
            randomizer = self.rng.random(len(feasible))
            ranked = feasible[np.lexsort((-randomizer, -scores.total))]
            chosen = int(ranked[0])
            others = table.names_of(ranked[1:].tolist())
        name = table.nodes[chosen].name
        framework.batch.store(hint.signature, hint.node, name, others, self.scheduling_cycle)
        return ScheduleResult(name, evaluated, len(feasible), scores, feasible)

    def find_nodes_that_fit(
        self, framework: Framework, state: CycleState, pod: Pod
    ) -> tuple[Rows, Diagnosis]:
        feasible, diagnosis, rejected = self._find_nodes_that_fit(framework, state, pod)
        rejected.fill(diagnosis, self.cache.table)
        return feasible, diagnosis

    def _find_nodes_that_fit(
        self, framework: Framework, state: CycleState, pod: Pod, hint: _BatchHint | None = None
    ) -> tuple[Rows, Diagnosis, Rejections]:
        """findNodesThatFitPod; the per-node statuses stay in `Rejections` until a FitError needs them.
        With `hint`, the opportunistic batch is asked for a node (and `hint` filled in)."""
        table = self.cache.table
        diagnosis = Diagnosis()
        rejected = Rejections()
        narrowed, status, plugins = framework.run_pre_filter(state, pod)
        diagnosis.unschedulable_plugins = set(plugins)
        empty: Rows = np.empty(0, dtype=np.intp)
        if not status.is_success:
            if not status.is_rejected:
                raise SchedulingError(status.message)
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message
            diagnosis.add_plugin_status(status)
            return empty, diagnosis, rejected

        if hint is not None:
            hint.signature = framework.sign_pod(pod)
            hint.node = framework.batch.node_hint(
                hint.signature,
                self.scheduling_cycle,
                lambda name: (
                    name in table
                    and framework.run_filters(state, pod, _one_row(table, name)).status_at(0).is_rejected
                ),
            )
        # A nominated node (from preemption) is tried first, else the batch's hint.
        first = pod.nominated_node_name or (hint.node if hint is not None else "")
        if first and first in table:
            row = _one_row(table, first)
            outcome = framework.run_filters_with_nominated_pods(state, pod, row)
            if outcome.passed[0]:
                return row, diagnosis, rejected
            rejected.add(outcome, 1)
            rejected.nominated_row = int(row[0])

        rows = table.order()
        if narrowed is not None and narrowed.node_names is not None:
            allowed = np.zeros(len(table), dtype=np.bool_)
            allowed[[table.index[name] for name in narrowed.node_names if name in table.index]] = True
            rows = rows[allowed[rows]]
            names = " ".join(sorted(plugins))
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{names}]",)
            )
        feasible, _ = self._find_nodes_that_pass_filters(framework, state, pod, rows, rejected)
        if len(table):
            # processedNodes = len(feasible) + len(NodeToStatus): a rejected nominated node counts
            # even when the search stopped before reaching it again.
            processed = len(feasible) + rejected.count()
            self.next_start_node_index = (self.next_start_node_index + processed) % len(table)
        return feasible, diagnosis, rejected

    def _find_nodes_that_pass_filters(
        self, framework: Framework, state: CycleState, pod: Pod, rows: Rows, rejected: Rejections
    ) -> tuple[Rows, int]:
        count = len(rows)
        if count == 0:
            return rows, 0
        to_find = num_feasible_nodes_to_find(framework.profile.percentage_of_nodes_to_score, count)
        if not framework.has_score_plugins:
            to_find = 1
        start = self.next_start_node_index % count
        rotated = np.concatenate([rows[start:], rows[:start]]) if start else rows
        if not framework.has_filter_plugins:
            return rotated[:to_find], min(to_find, count)
        # Filter the rotated order in chunks until more than to_find nodes passed: the result is
        # the one filtering every node would give, without filtering nodes that cannot matter.
        started = time.perf_counter()
        outcomes: list[FilterOutcome] = []
        passes: list[npt.NDArray[np.bool_]] = []
        found = evaluated = 0
        size = first_chunk(to_find, count)
        while evaluated < count and found <= to_find:
            if len(outcomes) == MAX_CHUNKS - 1:
                size = count  # enough guessing: take the rest
            chunk = rotated[evaluated : evaluated + size]
            outcome = framework.run_filters_with_nominated_pods(state, pod, chunk)
            failure = outcome.error()
            if failure is not None:
                framework.timed("Filter", started)
                if failure.plugin:  # RunFilterPlugins' wrapping of a plugin's error
                    raise SchedulingError(f'running "{failure.plugin}" filter plugin: {failure.message}')
                raise SchedulingError(failure.message)
            outcomes.append(outcome)
            passes.append(outcome.status_ref == PASSED)
            evaluated += len(outcome.rows)
            found += int(np.count_nonzero(passes[-1]))
            size = next_chunk(to_find, found, evaluated, count)
        framework.timed("Filter", started)
        passed = passes[0] if len(passes) == 1 else np.concatenate(passes)
        processed = evaluated
        if found > to_find:
            # Upstream stops when it meets feasible node to_find+1: that node is not counted, but
            # every node checked before it is (rejected ones too, in NodeToStatus).
            processed = int(np.searchsorted(np.cumsum(passed), to_find + 1))
        offset = 0
        for outcome in outcomes:
            if offset >= processed:
                break
            rejected.add(outcome, min(len(outcome.rows), processed - offset))
            offset += len(outcome.rows)
        return rotated[:processed][passed[:processed]], processed

    # ---- the binding cycle (asynchronous) ----------------------------------------------------------

    async def binding_cycle(self, task: BindingTask) -> None:
        await run_binding_cycle(self, task)

    def start_binding(self, task: BindingTask) -> asyncio.Task[None]:
        running = asyncio.get_running_loop().create_task(self.binding_cycle(task))
        self.binding_tasks.add(running)
        running.add_done_callback(self.binding_tasks.discard)
        return running

    async def drain_binding(self) -> None:
        while self.binding_tasks:
            await asyncio.gather(*list(self.binding_tasks), return_exceptions=True)
