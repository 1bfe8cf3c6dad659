"""The evictor: one job per preemptor, its gate, and the preemptor's requeue.

The scheduling cycle calls `submit()` and moves on; one task per preemptor then evicts its
victims (runner.py). While that task runs the DefaultPreemption PreEnqueue gate
(`in_progress`) keeps the preemptor from preempting again; when it ends the preemptor is
requeued, at once or after a growing delay when the candidate failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from policy_scheduler.kube.client import call
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.api import CallFn, EvictionApi
from policy_scheduler.kube.eviction.dry_run import DryRunMemory
from policy_scheduler.kube.eviction.job import End, Job
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.eviction.nominations import Nominations
from policy_scheduler.kube.eviction.reporting import Reporter
from policy_scheduler.kube.eviction.runner import Runner
from policy_scheduler.kube.fence import UNFENCED, Fence, NotLeading
from policy_scheduler.kube.retry import Sleep
from policy_scheduler.kube.timings import DEFAULTS, EvictionTimings
from policy_scheduler.policy.eviction_settings import EvictionRecord, EvictionSettings
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


class Policies(Protocol):
    """Where a profile's eviction settings come from, and where records go."""

    def settings_for_scheduler(self, scheduler_name: str) -> EvictionSettings: ...

    def record(self, policy: str | None, entry: EvictionRecord) -> None: ...


class PendingPods(Protocol):
    """The scheduler's view of unassigned pods."""

    def pending(self, key: str) -> Pod | None: ...

    def requeue(self, pod: Pod) -> None: ...


class _NoPods:
    """Before `attach`: no pod is pending."""

    def pending(self, key: str) -> Pod | None:
        return None

    def requeue(self, pod: Pod) -> None:
        return None


class Evictor:
    def __init__(
        self,
        api: ApiClient,
        events: EventRecorder,
        *,
        fence: Fence = UNFENCED,
        policies: Policies,
        timings: EvictionTimings = DEFAULTS.eviction,
        call_fn: CallFn = call,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.fence = fence  # only the leader preempts; each write asks it again
        self.policies = policies
        self.pods: PendingPods = _NoPods()
        self.timings = timings
        self.clock = clock
        self.reporter = Reporter(events, policies.record)
        self.limiters = Limiters()
        self.runner = Runner(
            EvictionApi(api, retry=timings.api_retry, call_fn=call_fn, sleep=sleep, fence=fence),
            self.reporter,
            self.limiters,
            timings=timings,
            clock=clock,
            still_waiting=self._still_waiting,
        )
        self.nominations = Nominations(
            api,
            pod_lookup=lambda key: self.pods.pending(key),
            fence=fence,
            clock=clock,
            settle=timings.nomination_settle,
            poll=timings.nomination_poll,
        )
        self.dry_runs = DryRunMemory(timings.dry_run_memory, clock)
        self._jobs: dict[str, Job] = {}  # preemptor uid -> its running job
        self._tasks: set[asyncio.Task[None]] = set()
        self._retries: dict[str, int] = {}  # preemptor uid -> abandoned attempts in a row
        self._held: dict[str, float] = {}  # preemptor uid -> when its retry gate opens (clock)

    def attach(self, pods: PendingPods) -> None:
        """Connect the scheduler's pods (built after the evictor, whose gate it uses)."""
        self.pods = pods

    # ---- called by the scheduler and the informers (synchronous) --------------------------------

    def on_preempt(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        """PodReporter's on_preempt: (pod, PostFilterResult, Framework)."""
        self.submit(pod, tuple(result.victims), result.nominated_node_name, framework.scheduler_name)

    def submit(self, preemptor: Pod, victims: Sequence[Pod], node: str, scheduler_name: str) -> None:
        if not victims or not self.fence.may_act():
            return
        settings = self.policies.settings_for_scheduler(scheduler_name)
        job = Job(preemptor, tuple(victims), node, scheduler_name, settings)
        running = self._jobs.get(preemptor.uid)
        if running is not None:
            if running.dry_run:
                running.newer = job  # its nomination needs clearing too, once written
            else:
                log.debug("preemption already in progress", extra={"pod": preemptor.key})
            return
        self._jobs[preemptor.uid] = job
        task = asyncio.get_running_loop().create_task(self._run(job), name=f"evict-for-{preemptor.key}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def in_progress(self, pod: Pod) -> bool:
        """The `preemption_in_progress` service: gate the preemptor while its evictions run,
        and while it waits to retry after a failed candidate or a dry run."""
        job = self._jobs.get(pod.uid)
        if job is not None and not job.dry_run:
            return True
        return self._held.get(pod.uid, 0.0) > self.clock()

    def pod_deleted(self, pod: Pod) -> None:
        """An evicted pod is gone (frees maxInFlight), or a preemptor is (forget its retries)."""
        self._retries.pop(pod.uid, None)
        self.dry_runs.forget(pod.uid)
        self._held.pop(pod.uid, None)
        if self.limiters.gone(pod.uid):
            self.runner.notify()

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def drain(self) -> None:
        """Wait for the running jobs (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # ---- one preemptor ----------------------------------------------------------------------------

    async def _run(self, job: Job) -> None:
        end = End.STALE
        try:
            if job.dry_run:
                await self._dry_run(job)
                return
            end = await self.runner.evict_all(job)
            if end is End.ABANDONED:
                await self.nominations.clear(job)
            elif end is End.DONE:
                await self.nominations.visible(job)
        except asyncio.CancelledError:
            raise
        except NotLeading:
            log.info(
                "preemption stopped: this replica may no longer act as the leader",
                extra={"pod": job.preemptor.key},
            )
            end = End.STALE
        except Exception:
            log.exception("preemption failed", extra={"pod": job.preemptor.key})
            end = End.ABANDONED
        finally:
            self._jobs.pop(job.preemptor.uid, None)
        self._after(job, end)

    def _after(self, job: Job, end: End) -> None:
        """Ungate the preemptor: at once when it only waits for its victims to go (or there is
        nothing left to do), after a growing delay when this candidate failed, and never
        before the server's Retry-After."""
        uid = job.preemptor.uid
        if end is not End.ABANDONED:
            self._retries.pop(uid, None)
            self._requeue_now(job.preemptor)
            return
        attempts = self._retries.get(uid, 0)
        self._retries[uid] = attempts + 1
        delay = min(self.timings.requeue_cap, self.timings.requeue_initial * 2**attempts)
        self._hold(job.preemptor, max(delay, job.retry_after or 0.0))

    def _hold(self, preemptor: Pod, seconds: float) -> None:
        """Keep the preemptor gated for `seconds`, then requeue it.

        Clearing a nomination requeues the pod at once (the engine frees the room it held), and
        the queue pops from backoff when idle: without this hold the pod would preempt again
        immediately, in a loop."""
        self._held[preemptor.uid] = max(self._held.get(preemptor.uid, 0.0), self.clock() + seconds)
        asyncio.get_running_loop().call_later(seconds, self._release, preemptor)

    def _release(self, preemptor: Pod) -> None:
        until = self._held.get(preemptor.uid)
        if until is None or until > self.clock() + 0.05:
            return  # gone, or held longer meanwhile: a later timer releases it
        del self._held[preemptor.uid]
        self._requeue_now(preemptor)

    def _requeue_now(self, preemptor: Pod) -> None:
        current = self.pods.pending(preemptor.key)
        if current is not None and current.uid == preemptor.uid and not current.node_name:
            self.pods.requeue(current)

    def _still_waiting(self, job: Job) -> bool:
        """The preemptor exists, is the same pod, is not bound or terminating, and we lead."""
        current = self.pods.pending(job.preemptor.key)
        return (
            self.fence.may_act()
            and current is not None
            and current.uid == job.preemptor.uid
            and not current.node_name
            and not current.terminating
        )

    async def _dry_run(self, job: Job) -> None:
        while True:
            if self.dry_runs.is_new(job):
                self.reporter.would_evict(job)
            self._hold(job.preemptor, self.timings.dry_run_retry)
            await self.nominations.clear(job)
            newer, job.newer = job.newer, None
            if newer is None:
                return
            job = self._jobs[job.preemptor.uid] = newer
