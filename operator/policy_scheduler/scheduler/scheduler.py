"""schedule_one: a synchronous scheduling cycle on the live node table, then an async binding cycle.

The scheduling cycle never awaits, so it sees a consistent state of the cache without copying
it. It assumes the chosen node in the table before returning; the binding cycle (permit wait,
pre-bind, bind, post-bind) runs as its own task and forgets the assumption if binding fails.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from policy_scheduler.scheduler.cache import Cache
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, FitError
from policy_scheduler.scheduler.framework.events import ASSIGNED_POD_DELETE
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult, QueuedPodInfo
from policy_scheduler.scheduler.framework.runtime import Framework, FrameworkError, ScoreOutcome
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import Rows

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class SchedulingError(RuntimeError):
    """Anything that is not "the pod does not fit": reported with reason SchedulerError."""


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """numFeasibleNodesToFind, including the adaptive default (50 - nodes/125, floor 5%)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingQueue(Protocol):
    def done(self, uid: str) -> None: ...

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, scheduling_cycle: int) -> None: ...

    def move_all_to_active_or_backoff(self, event: object, old: object, new: object) -> None: ...

    def activate_nominated(self, pod: Pod, node_name: str) -> None: ...

    def delete_nominated(self, pod: Pod) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...


class SchedulerHooks(Protocol):
    """Side effects the scheduler asks for; the operator writes them to the API, simulate to memory."""

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None: ...

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None: ...

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None: ...

    def nomination_cleared(self, pod: Pod) -> None: ...

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None: ...


class NullHooks:
    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        pass

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        pass

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        pass

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        pass


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: ScoreOutcome | None = None
    feasible_rows: Rows | None = None


@dataclass(slots=True)
class BindingTask:
    """What a successful scheduling cycle hands to the binding cycle."""

    info: QueuedPodInfo
    framework: Framework
    state: CycleState
    assumed: Pod
    node_name: str
    started: float = field(default_factory=time.monotonic)


class Scheduler:
    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        frameworks: Mapping[str, Framework] | Callable[[], Mapping[str, Framework]],
        *,
        hooks: SchedulerHooks | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.cache = cache
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
    def table(self):  # type: ignore[no-untyped-def]
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
        if pod.malformed:
            self._fail(framework, info, REASON_UNSCHEDULABLE, pod.malformed, None, started, "unschedulable")
            return None
        try:
            result = self.schedule_pod(framework, state, pod)
        except FitError as fit:
            nominated = self._post_filter(framework, state, pod, fit.diagnosis)
            info.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            info.pending_plugins = set(fit.diagnosis.pending_plugins)
            self._fail(framework, info, REASON_UNSCHEDULABLE, str(fit), nominated, started, "unschedulable")
            return None
        except (SchedulingError, FrameworkError) as exc:
            self._fail(framework, info, REASON_SCHEDULER_ERROR, str(exc), None, started, "error")
            return None
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
        elif not status.is_success and status.reasons:
            diagnosis.post_filter_msg = status.message
        if result is not None and result.nominated_node_name:
            self._clear_lower_nominations(pod, result.nominated_node_name)
            self.hooks.preempting(pod, result, framework)
            return result.nominated_node_name
        return None

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
        if not status.is_success:
            framework.run_unreserve(state, assumed, node_name)
            self.cache.forget_pod(assumed)
            self._fail(framework, info, self._reason(status), status.message, None, started, "error")
            return None
        status = framework.run_permit(state, assumed, node_name)
        if status.code not in (Code.SUCCESS, Code.WAIT):
            framework.run_unreserve(state, assumed, node_name)
            self.cache.forget_pod(assumed)
            self._fail(framework, info, self._reason(status), status.message, None, started, "unschedulable")
            return None
        return BindingTask(info, framework, state, assumed, node_name, started)

    @staticmethod
    def _reason(status: Status) -> str:
        return REASON_UNSCHEDULABLE if status.is_rejected else REASON_SCHEDULER_ERROR

    def _fail(
        self,
        framework: Framework,
        info: QueuedPodInfo,
        reason: str,
        message: str,
        nominated: str | None,
        started: float,
        result: str,
    ) -> None:
        # A new nomination from preemption, or clear a stale one (upstream's NominatingInfo).
        if nominated or info.pod.nominated_node_name:
            self.queue.activate_nominated(info.pod, nominated or "")
        self.queue.add_unschedulable_if_not_present(info, self.scheduling_cycle)
        self.hooks.failed(info.pod, reason, message, nominated, framework)
        self.hooks.cycle_finished(framework, result, time.monotonic() - started)

    def schedule_pod(self, framework: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
        table = self.cache.table
        if len(table) == 0:
            raise SchedulingError(NO_NODES_AVAILABLE)
        feasible, diagnosis = self.find_nodes_that_fit(framework, state, pod)
        if len(feasible) == 0:
            raise FitError(pod.key, len(table), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(table.nodes[int(feasible[0])].name, evaluated, 1, None, feasible)
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
            scores = ScoreOutcome(np.ones(len(feasible), dtype=np.int64), {})
        best = np.flatnonzero(scores.total == scores.total.max())
        chosen = int(feasible[best[int(self.rng.integers(len(best)))]])
        return ScheduleResult(table.nodes[chosen].name, evaluated, len(feasible), scores, feasible)

    def find_nodes_that_fit(
        self, framework: Framework, state: CycleState, pod: Pod
    ) -> tuple[Rows, Diagnosis]:
        table = self.cache.table
        diagnosis = Diagnosis()
        narrowed, status, plugins = framework.run_pre_filter(state, pod)
        diagnosis.unschedulable_plugins = set(plugins)
        empty: Rows = np.empty(0, dtype=np.intp)
        if not status.is_success:
            if not status.is_rejected:
                raise SchedulingError(status.message)
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message
            diagnosis.add_plugin_status(status)
            return empty, diagnosis

        if pod.nominated_node_name and pod.nominated_node_name in table:
            row = np.asarray([table.row(pod.nominated_node_name)], dtype=np.intp)
            outcome = framework.run_filters_with_nominated_pods(state, pod, row)
            if outcome.passed[0]:
                return row, diagnosis
            self._record_rejections(outcome.rows, outcome, diagnosis, ~outcome.passed)

        rows = table.order()
        if narrowed is not None and narrowed.node_names is not None:
            allowed = narrowed.node_names
            rows = np.asarray([r for r in rows if table.nodes[r].name in allowed], dtype=np.intp)
            names = " ".join(sorted(plugins))
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{names}]",)
            )
        feasible, processed = self._find_nodes_that_pass_filters(framework, state, pod, rows, diagnosis)
        if len(table):
            self.next_start_node_index = (self.next_start_node_index + processed) % len(table)
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self, framework: Framework, state: CycleState, pod: Pod, rows: Rows, diagnosis: Diagnosis
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
        started = time.perf_counter()
        outcome = framework.run_filters_with_nominated_pods(state, pod, rotated)
        framework.timed("Filter", started)
        failure = outcome.error()
        if failure is not None:
            raise SchedulingError(failure.message)
        passed = outcome.passed
        found = np.cumsum(passed)
        processed = count
        if found[-1] > to_find:
            # Stop where the to_find-th feasible node was found, as the upstream search does.
            processed = int(np.searchsorted(found, to_find)) + 1
        window = slice(0, processed)
        self._record_rejections(rotated[window], outcome, diagnosis, ~passed[window])
        return rotated[window][passed[window]], processed

    def _record_rejections(
        self, rows: Rows, outcome: object, diagnosis: Diagnosis, failed: np.ndarray
    ) -> None:
        from policy_scheduler.scheduler.framework.runtime import FilterOutcome

        assert isinstance(outcome, FilterOutcome)
        table = self.cache.table
        for i in np.flatnonzero(failed):
            status = outcome.status_at(int(i))
            diagnosis.node_to_status[table.nodes[int(rows[i])].name] = status
            diagnosis.add_plugin_status(status)

    # ---- the binding cycle (asynchronous) ----------------------------------------------------------

    def start_binding(self, task: BindingTask) -> asyncio.Task[None]:
        running = asyncio.get_running_loop().create_task(self.binding_cycle(task))
        self.binding_tasks.add(running)
        running.add_done_callback(self.binding_tasks.discard)
        return running

    async def binding_cycle(self, task: BindingTask) -> None:
        framework, state, pod, node = task.framework, task.state, task.assumed, task.node_name
        try:
            status = await framework.wait_on_permit(pod)
            if status.is_success:
                started = time.perf_counter()
                status = await framework.run_pre_bind(state, pod, node)
                framework.timed("PreBind", started, status)
            if status.is_success:
                started = time.perf_counter()
                status = await framework.run_bind(state, pod, node)
                framework.timed("Bind", started, status)
                if status.code == Code.SKIP:
                    status = Status(Code.ERROR, ("no bind plugin bound the pod",))
        except Exception as exc:  # a plugin bug must not kill the scheduler
            log.exception("binding cycle failed", extra={"pod": pod.key})
            status = Status(Code.ERROR, (str(exc),))
        if not status.is_success:
            framework.run_unreserve(state, pod, node)
            self.cache.forget_pod(pod)
            # The assumed pod freed its place: pods waiting for room may fit now.
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
            self._fail(
                framework, task.info, self._reason(status), status.message, None, task.started, "error"
            )
            return
        self.cache.finish_binding(pod)
        framework.run_post_bind(state, pod, node)
        self.queue.done(pod.uid)
        self.hooks.scheduled(pod, node, framework)
        self.hooks.cycle_finished(framework, "scheduled", time.monotonic() - task.started)

    async def drain_binding(self) -> None:
        while self.binding_tasks:
            await asyncio.gather(*list(self.binding_tasks), return_exceptions=True)
