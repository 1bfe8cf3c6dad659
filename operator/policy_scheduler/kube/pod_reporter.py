"""SchedulerHooks for a real cluster: pod conditions, nominations, events, metrics, profile stats.

The scheduling loop calls these synchronously; API writes are queued and done by a small pool
of writer tasks. Writes for the same pod coalesce, so a pod that fails a hundred times while
a write is pending costs one write, and a pod has at most one write in flight (with its
retries), so an older status can never land after a newer one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects.cluster_objects import PodConditionInfo
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.fence import UNFENCED, Fence, NotLeading
from policy_scheduler.kube.podstatus import (
    POD_SCHEDULED,
    patch_status,
    set_nominated_node,
    set_unschedulable_condition,
)
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.observability import metrics
from policy_scheduler.observability.profile_stats import ProfileStats
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

# Opt-in per profile (pendingSummaryAnnotation): nodes per reason, never a per-node dump.
PENDING_SUMMARY_ANNOTATION = "policy-scheduler.io/pending-summary"


@dataclass(slots=True)
class _Failure:
    pod: Pod
    reason: str
    message: str
    nominated: str | None
    summary: str | None = None  # for the pending-summary annotation, when the profile wants it


class PodReporter:
    def __init__(
        self,
        api: ApiClient,
        events: EventRecorder,
        *,
        fence: Fence = UNFENCED,
        on_preempt: Callable[[Pod, PostFilterResult, Framework], None] | None = None,
        writers: int = DEFAULTS.pod_status_writers,
        summary_for: Callable[[Pod], str | None] | None = None,
    ) -> None:
        self.summary_for = summary_for
        self.writers = writers
        self.api = api
        self.events = events
        self.fence = fence  # only the leader writes pod status (conditions, nominations)
        self.on_preempt = on_preempt
        self.stats: dict[str, ProfileStats] = {}
        self._pending: dict[str, _Failure] = {}
        self._writing: set[str] = set()  # pods whose write (retries included) is in flight
        # The last verdict written for each pending pod; None: its last write's fate is unknown.
        self._written: dict[str, tuple[str, str] | None] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._nomination_tasks: set[asyncio.Task[None]] = set()

    def stats_for(self, scheduler_name: str) -> ProfileStats:
        stats = self.stats.get(scheduler_name)
        if stats is None:
            stats = self.stats[scheduler_name] = ProfileStats()
        return stats

    # ---- SchedulerHooks ------------------------------------------------------------------------

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self._pending.pop(pod.key, None)
        self._written.pop(pod.key, None)
        self.stats_for(framework.scheduler_name).record_scheduled(pod.key)
        self.events.scheduled(pod, node_name)
        if PENDING_SUMMARY_ANNOTATION in pod.annotations and self.fence.may_act():
            self._spawn(self._annotate(pod, None))  # no longer pending: the summary would mislead

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        if framework is not None:
            self.stats_for(framework.scheduler_name).record_failure(pod.key, message)
        summary = None
        if framework is not None and framework.profile.pending_summary_annotation and self.summary_for:
            summary = self.summary_for(pod)
        self._pending[pod.key] = _Failure(pod, reason, message, nominated_node, summary)
        self._wake.set()
        self.events.failed_scheduling(pod, message)

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        stats = self.stats_for(framework.scheduler_name)
        stats.preemptions += 1
        metrics.preemption_victims.observe(len(result.victims))  # attempts: MetricsObserver
        for member, node_name in result.nominations:  # a gang's other members (the preemptor's
            self._nominate(member, node_name)  # own nomination goes with its failure)
        if self.on_preempt is not None:
            self.on_preempt(pod, result, framework)

    def nomination_cleared(self, pod: Pod) -> None:
        self._nominate(pod, "")

    def _nominate(self, pod: Pod, node_name: str) -> None:
        if self.fence.may_act():
            self._spawn(self._write_nomination(pod, node_name))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._nomination_tasks.add(task)
        task.add_done_callback(self._nomination_tasks.discard)

    async def _annotate(self, pod: Pod, summary: str | None) -> None:
        """Set (or, with None, remove) the pending-summary annotation; pods/status takes metadata."""
        body = {"metadata": {"annotations": {PENDING_SUMMARY_ANNOTATION: summary}}}
        try:
            await patch_status(self.api, pod.namespace, pod.name, body, fence=self.fence)
        except NotLeading:
            log.debug("pending summary not written: not the leader now", extra={"pod": pod.key})
        except Exception as exc:  # the next attempt writes it again
            log.warning("pending summary update failed", extra={"pod": pod.key, "error": str(exc)})

    async def _write_nomination(self, pod: Pod, node_name: str) -> None:
        try:
            await set_nominated_node(self.api, pod.namespace, pod.name, node_name, fence=self.fence)
        except NotLeading:
            log.debug("nomination not written: not the leader now", extra={"pod": pod.key})
        except Exception as exc:  # the next attempt of that pod fixes it anyway
            log.warning("writing nomination failed", extra={"pod": pod.key, "error": str(exc)})

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        profile = framework.scheduler_name
        metrics.schedule_attempts.labels(result, profile).inc()
        metrics.scheduling_attempt_duration.labels(result, profile).observe(seconds)
        self.stats_for(profile).record_latency(seconds)

    def pod_gone(self, pod: Pod) -> None:
        self._pending.pop(pod.key, None)
        self._written.pop(pod.key, None)
        stats = self.stats.get(pod.scheduler_name)
        if stats is not None:
            stats.forget(pod.key)

    # ---- writers ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._writer(), name=f"pod-status-writer-{i}") for i in range(self.writers)
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _next_key(self) -> str | None:
        return next((key for key in self._pending if key not in self._writing), None)

    async def _writer(self) -> None:
        while True:
            key = self._next_key()
            if key is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            failure = self._pending.pop(key)
            if not self.fence.may_act():
                continue
            self._writing.add(key)
            try:
                await self._write(key, failure)
            finally:
                self._writing.discard(key)
                if key in self._pending:
                    self._wake.set()  # a newer status came while this one was written

    async def _write(self, key: str, failure: _Failure) -> None:
        pod = failure.pod
        verdict = (failure.reason, failure.message)
        # What the pod already shows is not written again (upstream's updatePod): a pod failing
        # the same way on every retry costs no write after the first. The pod as last seen may
        # predate our latest write, so it is trusted only if it shows what that write said.
        shown = pod.scheduled_condition
        current = None
        if shown is not None and self._written.get(key, shown[1:]) == shown[1:]:
            current = PodConditionInfo(POD_SCHEDULED, *shown)
        nominated = None if failure.nominated == pod.nominated_node_name else failure.nominated
        self._written[key] = None  # unknown until the write is answered
        try:
            await set_unschedulable_condition(
                self.api,
                pod.namespace,
                pod.name,
                reason=failure.reason,
                message=failure.message,
                current=current,
                nominated_node=nominated,
                uid=pod.uid,
                fence=self.fence,
            )
            if key in self._written:  # not gone or bound meanwhile
                self._written[key] = verdict
            summary = failure.summary
            if summary is not None and pod.annotations.get(PENDING_SUMMARY_ANNOTATION) != summary:
                await self._annotate(pod, summary)
        except NotLeading:
            log.debug("pod status not written: not the leader now", extra={"pod": key})
        except Exception as exc:  # the API said no for good: log, keep scheduling
            log.warning("pod status update failed", extra={"pod": key, "error": str(exc)})
