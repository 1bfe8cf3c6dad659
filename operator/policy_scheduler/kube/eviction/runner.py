"""Evicting one preemptor's victims, one at a time, within the policy's rate limits.

For each victim: re-check that the preemptor still waits, take a rate-limit token, evict it
through the Eviction API so PodDisruptionBudgets are honoured, then mark it DisruptionTarget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from policy_scheduler.kube.eviction.api import DEFAULT_GRACE, EvictionApi, Outcome, Result, grace_period
from policy_scheduler.kube.eviction.job import End, Job
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.eviction.reporting import Reporter
from policy_scheduler.kube.fence import NotLeading
from policy_scheduler.kube.timings import EvictionTimings
from policy_scheduler.policy.eviction_settings import BLOCKED_BY_BUDGET, FAILED, RATE_LIMITED
from policy_scheduler.scheduler.model import Pod

log = logging.getLogger(__name__)


class Runner:
    def __init__(
        self,
        api: EvictionApi,
        reporter: Reporter,
        limiters: Limiters,
        *,
        timings: EvictionTimings,
        clock: Callable[[], float],
        still_waiting: Callable[[Job], bool],
    ) -> None:
        self.api = api
        self.reporter = reporter
        self.limiters = limiters
        self.timings = timings
        self.clock = clock
        self.still_waiting = still_waiting
        self._changed: asyncio.Future[None] | None = None

    async def evict_all(self, job: Job) -> End:
        reason = job.settings.unavailable_reason
        if reason is not None:
            return self._unavailable(job, reason)
        for victim in job.victims:
            if not self.still_waiting(job):
                log.info(
                    "preemptor no longer pending; evicting nothing more", extra={"pod": job.preemptor.key}
                )
                return End.STALE
            if victim.terminating:
                continue  # its deletion already started, as upstream skips it
            end = await self._evict(job, victim)
            if end is not End.DONE:
                return end
        return End.DONE

    def _unavailable(self, job: Job, reason: str) -> End:
        """Fail safe: the profile's policy cannot be used, so nothing is evicted under it."""
        victims = [v for v in job.victims if not v.terminating]
        for victim in victims:
            self.reporter.record(job, victim, FAILED, reason, metric="blocked")
        if victims:
            self.reporter.blocked(job, victims[0], reason)
        log.warning("eviction policy unavailable; evicting nothing", extra={"pod": job.preemptor.key})
        return End.ABANDONED

    async def _evict(self, job: Job, victim: Pod) -> End:
        # The victim as the scheduler saw it, not read again (as kube-scheduler, one call less
        # per victim): one gone or replaced since is answered 404 or 409 by the Eviction API
        # (its preconditions carry the uid), and evicting one whose deletion started since only
        # confirms it.
        granted = await self._acquire(job, victim)
        if granted is not End.DONE:
            return granted
        pod_grace = victim.termination_grace_period_seconds
        grace = grace_period(pod_grace, job.settings.config.max_grace_period_seconds)
        # Take the maxInFlight slot before the eviction: the victim's deletion may be seen while
        # the calls below are still awaited, and only a slot already taken is freed by it.
        limiter = self.limiters.get(job.settings.policy_name, job.settings.limits)
        if limiter is not None:
            seconds = grace if grace is not None else pod_grace if pod_grace is not None else DEFAULT_GRACE
            limiter.evicted(victim.uid, self.clock() + seconds + self.timings.in_flight_slack)
        try:
            result = await self._remove(job, victim, grace)
        except NotLeading:
            if limiter is not None:
                limiter.gone(victim.uid)  # refused before it went out: nothing was evicted
            raise
        if result.outcome is not Outcome.EVICTED and limiter is not None:
            limiter.gone(victim.uid)  # nothing was evicted: give the slot back
        if result.outcome is Outcome.GONE:
            return End.DONE
        if result.outcome is not Outcome.EVICTED:
            if result.outcome is not Outcome.BUDGET:
                self.reporter.record(job, victim, FAILED, result.message)
                log.warning("eviction failed", extra={"victim": victim.key, "error": result.message})
            job.retry_after = result.retry_after
            self.reporter.blocked(job, victim, result.message)
            return End.ABANDONED
        # Set after the API accepted: the Eviction API writes its own DisruptionTarget reason,
        # and a pod whose eviction is refused must not be marked as disrupted.
        await self.api.mark_disruption_target(victim.namespace, victim.name, victim.uid, job.scheduler_name)
        self.reporter.evicted(job, victim)
        return End.DONE

    async def _remove(self, job: Job, victim: Pod, grace: int | None) -> Result:
        """Evict; under BestEffort, delete when a budget refuses (as kube-scheduler deletes).
        BUDGET comes back only under Enforce, after being recorded."""
        result = await self.api.evict(victim.namespace, victim.name, victim.uid, grace)
        if result.outcome not in (Outcome.BUDGET, Outcome.MULTIPLE_BUDGETS):
            return result
        recorded = BLOCKED_BY_BUDGET if result.outcome is Outcome.BUDGET else FAILED
        self.reporter.record(job, victim, recorded, result.message)
        log.info(
            "eviction refused by a disruption budget", extra={"victim": victim.key, "error": result.message}
        )
        if job.settings.config.enforce_budgets:
            return Result(Outcome.BUDGET, result.message, result.retry_after)
        return await self.api.delete(victim.namespace, victim.name, victim.uid, grace)

    # ---- rate limits --------------------------------------------------------------------------------

    async def _acquire(self, job: Job, victim: Pod) -> End:
        """Wait for the policy's limits (bounded); DONE when granted."""
        deadline = self.clock() + self.timings.max_rate_wait
        limited = False
        while True:
            limiter = self.limiters.get(job.settings.policy_name, job.settings.limits)
            wait = 0.0 if limiter is None else limiter.try_acquire(victim.namespace, job.node, self.clock())
            if wait == 0:
                return End.DONE
            if not limited:
                limited = True
                self.reporter.record(job, victim, RATE_LIMITED)
            remaining = deadline - self.clock()
            if remaining <= 0:
                log.info("eviction deferred by the rate limit", extra={"victim": victim.key})
                return End.ABANDONED
            await self._wait_change(min(wait, remaining, self.timings.rate_poll))
            if not self.still_waiting(job):
                return End.STALE

    def notify(self) -> None:
        """An evicted pod went away: waiters re-check the limits now."""
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    async def _wait_change(self, seconds: float) -> None:
        """Sleep `seconds`, or less if an evicted pod goes away meanwhile."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._changed), seconds)
