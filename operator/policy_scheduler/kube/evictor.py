"""Evicting the victims that preemption chose, as the profile's EvictionPolicy allows.

The scheduling cycle calls `submit()` and moves on; one task per preemptor then, for each
victim: re-checks that the preemptor still waits, takes a rate-limit token, marks the victim
DisruptionTarget, and evicts it through the Eviction API so PodDisruptionBudgets are honoured.
While that task runs the DefaultPreemption PreEnqueue gate (`in_progress`) keeps the preemptor
from preempting again; when it ends the preemptor is requeued.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import msgspec

from policy_scheduler import metrics
from policy_scheduler.kube.backoff import Backoff
from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, is_transient, request
from policy_scheduler.kube.events import NORMAL, WARNING, EventRecorder, ObjectRef
from policy_scheduler.kube.podstatus import patch_status, rfc3339, set_nominated_node
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.plugin import PREEMPTION_IN_PROGRESS_SERVICE
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import (
    DEFAULT_POLICY,
    EVICTION_POLICY_SERVICE,
    EvictionPolicyConfig,
)
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import PDBS_SERVICE

log = logging.getLogger(__name__)

# Results as EvictionPolicy status.recentEvictions spells them.
EVICTED = "Evicted"
WOULD_EVICT = "WouldEvict"
BLOCKED_BY_BUDGET = "BlockedByBudget"
RATE_LIMITED = "RateLimited"
FAILED = "Failed"
_METRIC_RESULT = {
    EVICTED: "evicted",
    WOULD_EVICT: "dry_run",
    BLOCKED_BY_BUDGET: "blocked_by_budget",
    RATE_LIMITED: "rate_limited",
    FAILED: "error",
}

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
REASON_DRY_RUN = "PreemptionDryRun"
REASON_BLOCKED = "PreemptionBlocked"

MAX_RATE_WAIT = 120.0  # a victim waits this long for a token, then the preemption is deferred
NOMINATION_SETTLE = 5.0  # how long to wait for the reporter's nomination write before clearing it
IN_FLIGHT_SLACK = 60.0  # an evicted pod still around after its grace period + this stops counting
API_ATTEMPTS = 5
REQUEUE_INITIAL, REQUEUE_CAP = 1.0, 60.0
DRY_RUN_MEMORY = 300.0  # the same dry-run decision for a preemptor is reported again after this
DRY_RUN_RETRY = 30.0  # a preemptor under a dry-run policy retries this often
_API_FAILURES: tuple[type[BaseException], ...] = (ApiError, *CONNECTION_ERRORS)


# ---- policy settings and records -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RateLimits:
    """EvictionPolicy spec.rateLimit; the defaults are the CRD's."""

    evictions_per_minute: int = 60
    burst: int = 10
    max_in_flight: int = 10
    per_namespace_per_minute: int | None = None
    per_node_per_minute: int | None = None


@dataclass(frozen=True, slots=True)
class EvictionSettings:
    policy_name: str | None  # None: no EvictionPolicy, the built-in default
    config: EvictionPolicyConfig = DEFAULT_POLICY
    limits: RateLimits | None = None  # None: unlimited, as kube-scheduler
    unavailable_reason: str | None = None  # the EvictionPolicy cannot be used: evict nothing


DEFAULT_SETTINGS = EvictionSettings(None)


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """One attempt, for the policy's status (recentEvictions and counters)."""

    time: float  # unix seconds
    namespace: str
    name: str
    uid: str
    preemptor_uid: str
    node: str
    result: str
    message: str = ""


def preemption_services(
    pdbs: Callable[[], list[Any]],
    eviction_policy: Callable[[str], EvictionPolicyConfig | None],
    in_progress: Callable[[Pod], bool],
) -> dict[str, Any]:
    """The Engine's `services` for DefaultPreemption: PDB lister, policy lookup, PreEnqueue gate."""
    return {
        PDBS_SERVICE: pdbs,
        EVICTION_POLICY_SERVICE: eviction_policy,
        PREEMPTION_IN_PROGRESS_SERVICE: in_progress,
    }


# ---- pure decisions ----------------------------------------------------------------------------------


class Outcome(enum.Enum):
    EVICTED = "evicted"
    GONE = "gone"  # 404, or a different pod now has the name
    BUDGET = "budget"  # 429 from a PodDisruptionBudget
    THROTTLED = "throttled"  # 429 from API priority and fairness: retry
    MULTIPLE_BUDGETS = "multiple_budgets"  # 500: the Eviction API refuses pods under several budgets
    TRANSIENT = "transient"
    FAILED = "failed"


def _status_text(body: bytes) -> tuple[str, list[str]]:
    """The Status message and its causes' reasons, as far as the body is a Status."""
    try:
        doc = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace"), []
    if not isinstance(doc, dict):
        return "", []
    details = doc.get("details") or {}
    causes = [str(c.get("reason", "")) for c in details.get("causes") or [] if isinstance(c, dict)]
    return str(doc.get("message", "")), causes


def classify(status: int, body: bytes) -> Outcome:
    """What an answer of the Eviction API (or of a pod DELETE) means for the victim."""
    message, causes = _status_text(body)
    if 200 <= status < 300:
        return Outcome.EVICTED
    if status == 404:
        return Outcome.GONE
    if status == 409 and "precondition" in message.lower():
        return Outcome.GONE  # the uid precondition failed: the victim was replaced
    if status == 429:
        if "DisruptionBudget" in causes or "disruption budget" in message.lower():
            return Outcome.BUDGET
        return Outcome.THROTTLED
    if status == 500 and "more than one poddisruptionbudget" in message.lower():
        return Outcome.MULTIPLE_BUDGETS
    if is_transient(status) or status == 409:
        return Outcome.TRANSIENT
    return Outcome.FAILED


def grace_period(pod_grace: int | None, max_grace: int | None) -> int | None:
    """gracePeriodSeconds to send: the pod's own, capped by the policy; None leaves it out."""
    if max_grace is None:
        return None  # the pod's terminationGracePeriodSeconds applies
    return max_grace if pod_grace is None else min(pod_grace, max_grace)


def delete_options(uid: str, grace: int | None) -> dict[str, Any]:
    options: dict[str, Any] = {"preconditions": {"uid": uid}} if uid else {}
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    return options


def eviction_body(namespace: str, name: str, uid: str, grace: int | None) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "deleteOptions": delete_options(uid, grace),
    }


def disruption_target_patch(scheduler_name: str, uid: str, now: float) -> dict[str, Any]:
    """The condition kube-scheduler sets on a victim before deleting it."""
    condition = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
        "lastTransitionTime": rfc3339(now),
    }
    body: dict[str, Any] = {"status": {"conditions": [condition]}}
    if uid:
        body["metadata"] = {"uid": uid}
    return body


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


# ---- rate limits -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Bucket:
    per_minute: int
    burst: int
    tokens: float = -1.0
    last: float | None = None

    def wait(self, now: float) -> float:
        """Seconds until a token is available (0: one is)."""
        if self.tokens < 0:
            self.tokens = float(self.burst)
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.per_minute / 60.0)
        self.last = now if self.last is None else max(self.last, now)
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) * 60.0 / self.per_minute


class Limiter:
    """One policy's limits: a total bucket, optional per-namespace and per-node buckets, and a cap
    on evicted pods not yet gone. A grant takes a token from every bucket, or from none."""

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits
        self.total = _Bucket(limits.evictions_per_minute, limits.burst)
        self.namespaces: dict[str, _Bucket] = {}
        self.nodes: dict[str, _Bucket] = {}
        self.in_flight: dict[str, float] = {}  # victim uid -> when it stops counting

    def _scoped(self, buckets: dict[str, _Bucket], key: str, per_minute: int | None) -> list[_Bucket]:
        if per_minute is None:
            return []
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _Bucket(per_minute, min(self.limits.burst, per_minute))
        return [bucket]

    def try_acquire(self, namespace: str, node: str, now: float) -> float:
        """0.0 when granted; else seconds to wait (math.inf: until an evicted pod is gone)."""
        self.in_flight = {uid: until for uid, until in self.in_flight.items() if until > now}
        if len(self.in_flight) >= self.limits.max_in_flight:
            return math.inf
        buckets = [
            self.total,
            *self._scoped(self.namespaces, namespace, self.limits.per_namespace_per_minute),
            *self._scoped(self.nodes, node, self.limits.per_node_per_minute),
        ]
        wait = max(bucket.wait(now) for bucket in buckets)
        if wait > 0:
            return wait
        for bucket in buckets:
            bucket.tokens -= 1.0
        return 0.0

    def evicted(self, uid: str, until: float) -> None:
        self.in_flight[uid] = until

    def gone(self, uid: str) -> bool:
        return self.in_flight.pop(uid, None) is not None


# ---- the evictor -------------------------------------------------------------------------------------


class _End(enum.Enum):
    DONE = "done"  # every victim is evicted or gone: the preemptor waits for them
    ABANDONED = "abandoned"  # this candidate failed: clear the nomination, retry later
    STALE = "stale"  # the preemptor is gone or bound, or we lost the lease: nothing to do


@dataclass(slots=True)
class _Job:
    preemptor: Pod
    victims: tuple[Pod, ...]
    node: str
    scheduler_name: str
    settings: EvictionSettings
    started: float = field(default_factory=time.monotonic)
    newer: _Job | None = None  # a dry run's preemptor preempted again while this job ran

    @property
    def dry_run(self) -> bool:
        return self.settings.config.dry_run


class _VictimMeta(msgspec.Struct, rename="camel"):
    uid: str = ""
    deletion_timestamp: str | None = None


class _VictimSpec(msgspec.Struct, rename="camel"):
    termination_grace_period_seconds: int | None = None


class _Victim(msgspec.Struct):
    metadata: _VictimMeta = msgspec.field(default_factory=_VictimMeta)
    spec: _VictimSpec = msgspec.field(default_factory=_VictimSpec)


_VICTIM_DECODER = msgspec.json.Decoder(_Victim)

RequestFn = Callable[..., Awaitable[tuple[int, bytes]]]


class Evictor:
    def __init__(
        self,
        api: Any,
        events: EventRecorder,
        *,
        is_leader: Callable[[], bool],
        policy_lookup: Callable[[str], EvictionSettings],
        pod_lookup: Callable[[str], Pod | None],
        requeue: Callable[[Pod], None],
        on_record: Callable[[str | None, EvictionRecord], None] | None = None,
        request_fn: RequestFn = request,
        clock: Callable[[], float] = time.monotonic,
        max_rate_wait: float = MAX_RATE_WAIT,
        nomination_settle: float = NOMINATION_SETTLE,
        dry_run_retry: float = DRY_RUN_RETRY,
    ) -> None:
        self.api = api
        self.events = events
        self.is_leader = is_leader
        self.policy_lookup = policy_lookup
        self.pod_lookup = pod_lookup
        self.requeue = requeue
        self.on_record = on_record
        self.request_fn = request_fn
        self.clock = clock
        self.max_rate_wait = max_rate_wait
        self.nomination_settle = nomination_settle
        self.dry_run_retry = dry_run_retry
        self._jobs: dict[str, _Job] = {}  # preemptor uid -> its running job
        self._tasks: set[asyncio.Task[None]] = set()
        self._limiters: dict[str | None, Limiter] = {}
        self._retries: dict[str, int] = {}  # preemptor uid -> abandoned attempts in a row
        self._dry_runs: dict[str, tuple[tuple[str, frozenset[str]], float]] = {}  # uid -> decision, since
        self._held: dict[str, float] = {}  # preemptor uid -> when its retry gate opens (clock)
        self._changed: asyncio.Future[None] | None = None

    # ---- called by the scheduler and the informers (synchronous) --------------------------------

    def on_preempt(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        """PodReporter's on_preempt: (pod, PostFilterResult, Framework)."""
        self.submit(pod, tuple(result.victims), result.nominated_node_name, framework.scheduler_name)

    def submit(self, preemptor: Pod, victims: Sequence[Pod], node: str, scheduler_name: str) -> None:
        if not victims or not self.is_leader():
            return
        settings = self.policy_lookup(scheduler_name)
        if settings.unavailable_reason is not None:
            log.warning("no eviction", extra={"pod": preemptor.key, "why": settings.unavailable_reason})
            return
        job = _Job(preemptor, tuple(victims), node, scheduler_name, settings)
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
        self._dry_runs.pop(pod.uid, None)
        self._held.pop(pod.uid, None)
        if any([limiter.gone(pod.uid) for limiter in self._limiters.values()]):
            self._notify()

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

    async def _run(self, job: _Job) -> None:
        end = _End.STALE
        try:
            if job.dry_run:
                await self._dry_run(job)
                return
            end = await self._evict_all(job)
            if end is _End.ABANDONED:
                await self._clear_nomination(job)
            elif end is _End.DONE:
                await self._nomination_visible(job)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("preemption failed", extra={"pod": job.preemptor.key})
            end = _End.ABANDONED
        finally:
            self._jobs.pop(job.preemptor.uid, None)
        self._after(job, end)

    def _after(self, job: _Job, end: _End) -> None:
        """Ungate the preemptor: at once when it only waits for its victims to go (or there is
        nothing left to do), after a growing delay when this candidate failed."""
        uid = job.preemptor.uid
        if end is not _End.ABANDONED:
            self._retries.pop(uid, None)
            self._requeue_now(job.preemptor)
            return
        attempts = self._retries.get(uid, 0)
        self._retries[uid] = attempts + 1
        self._hold(job.preemptor, min(REQUEUE_CAP, REQUEUE_INITIAL * 2**attempts))

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
        current = self.pod_lookup(preemptor.key)
        if current is not None and current.uid == preemptor.uid and not current.node_name:
            self.requeue(current)

    def _still_waiting(self, job: _Job) -> bool:
        """The preemptor exists, is the same pod, is not bound or terminating, and we lead."""
        current = self.pod_lookup(job.preemptor.key)
        return (
            self.is_leader()
            and current is not None
            and current.uid == job.preemptor.uid
            and not current.node_name
            and not current.terminating
        )

    async def _evict_all(self, job: _Job) -> _End:
        for victim in job.victims:
            if not self._still_waiting(job):
                log.info(
                    "preemptor no longer pending; evicting nothing more", extra={"pod": job.preemptor.key}
                )
                return _End.STALE
            if victim.terminating:
                continue  # its deletion already started, as upstream skips it
            end = await self._evict_victim(job, victim)
            if end is not _End.DONE:
                return end
        return _End.DONE

    async def _evict_victim(self, job: _Job, victim: Pod) -> _End:
        found = await self._read_victim(victim)
        if found is None or found.metadata.deletion_timestamp is not None:
            return _End.DONE  # gone or already terminating: no eviction needed
        granted = await self._acquire(job, victim)
        if granted is not _End.DONE:
            return granted
        pod_grace = found.spec.termination_grace_period_seconds
        grace = grace_period(pod_grace, job.settings.config.max_grace_period_seconds)
        outcome, message = await self._remove(job, victim, grace)
        if outcome is Outcome.GONE:
            return _End.DONE
        if outcome is not Outcome.EVICTED:
            if outcome is not Outcome.BUDGET:
                self._record(job, victim, FAILED, message)
                log.warning("eviction failed", extra={"victim": victim.key, "error": message})
            note = f"eviction of {victim.key} on node {job.node} refused: {message}; retrying the pod later"
            self.events.event(ObjectRef.for_pod(job.preemptor), WARNING, REASON_BLOCKED, "Preempting", note)
            return _End.ABANDONED
        # Set after the API accepted: the Eviction API writes its own DisruptionTarget reason,
        # and a pod whose eviction is refused must not be marked as disrupted.
        await self._mark_disruption_target(job, victim)
        limiter = self._limiter(job.settings)
        if limiter is not None:
            seconds = grace if grace is not None else pod_grace if pod_grace is not None else 30
            limiter.evicted(victim.uid, self.clock() + seconds + IN_FLIGHT_SLACK)
        self._record(job, victim, EVICTED)
        self.events.preempted(victim, job.preemptor, job.node)
        log.info(
            "evicted preemption victim",
            extra={"victim": victim.key, "preemptor": job.preemptor.key, "node": job.node},
        )
        return _End.DONE

    async def _remove(self, job: _Job, victim: Pod, grace: int | None) -> tuple[Outcome, str]:
        """Evict; under BestEffort, delete when a budget refuses (as kube-scheduler deletes).
        BUDGET comes back only under Enforce, after being recorded."""
        path = pod_path(victim.namespace, victim.name)
        outcome, message = await self._call(
            "POST", path + "/eviction", eviction_body(victim.namespace, victim.name, victim.uid, grace)
        )
        if outcome not in (Outcome.BUDGET, Outcome.MULTIPLE_BUDGETS):
            return outcome, message
        self._record(job, victim, BLOCKED_BY_BUDGET if outcome is Outcome.BUDGET else FAILED, message)
        log.info("eviction refused by a disruption budget", extra={"victim": victim.key, "error": message})
        if job.settings.config.enforce_budgets:
            return Outcome.BUDGET, message
        return await self._call("DELETE", path, delete_options(victim.uid, grace))

    async def _dry_run(self, job: _Job) -> None:
        while True:
            await self._dry_run_one(job)
            newer, job.newer = job.newer, None
            if newer is None:
                return
            job = self._jobs[job.preemptor.uid] = newer

    async def _dry_run_one(self, job: _Job) -> None:
        # Clearing the nomination requeues the preemptor, which then preempts again: report one
        # decision once (for a while), not at every retry.
        decision = (job.node, frozenset(v.uid for v in job.victims))
        now = self.clock()
        self._dry_runs = {k: v for k, v in self._dry_runs.items() if now - v[1] < DRY_RUN_MEMORY}
        seen = self._dry_runs.get(job.preemptor.uid)
        self._dry_runs[job.preemptor.uid] = (
            decision,
            now if seen is None or seen[0] != decision else seen[1],
        )
        if seen is None or seen[0] != decision:
            self._report_dry_run(job)
        self._hold(job.preemptor, self.dry_run_retry)
        await self._clear_nomination(job)

    def _report_dry_run(self, job: _Job) -> None:
        name = job.settings.policy_name or "(default)"
        for victim in job.victims:
            if victim.terminating:
                continue
            self._record(job, victim, WOULD_EVICT)
            note = (
                f"Would be preempted by pod {job.preemptor.uid} on node {job.node} "
                f"(dryRun in EvictionPolicy {name})"
            )
            self.events.event(
                ObjectRef.for_pod(victim),
                NORMAL,
                REASON_DRY_RUN,
                "Preempting",
                note,
                related=ObjectRef.for_pod(job.preemptor),
            )
        log.info(
            "dry run: would evict",
            extra={"preemptor": job.preemptor.key, "node": job.node, "victims": [v.key for v in job.victims]},
        )

    # ---- rate limits --------------------------------------------------------------------------------

    def _limiter(self, settings: EvictionSettings) -> Limiter | None:
        if settings.limits is None:
            return None
        limiter = self._limiters.get(settings.policy_name)
        if limiter is None or limiter.limits != settings.limits:
            fresh = Limiter(settings.limits)
            if limiter is not None:
                fresh.in_flight = limiter.in_flight  # evicted pods still count under new limits
            limiter = self._limiters[settings.policy_name] = fresh
        return limiter

    async def _acquire(self, job: _Job, victim: Pod) -> _End:
        """Wait for the policy's limits (bounded); DONE when granted."""
        deadline = self.clock() + self.max_rate_wait
        limited = False
        while True:
            limiter = self._limiter(job.settings)
            wait = 0.0 if limiter is None else limiter.try_acquire(victim.namespace, job.node, self.clock())
            if wait == 0:
                return _End.DONE
            if not limited:
                limited = True
                self._record(job, victim, RATE_LIMITED)
            remaining = deadline - self.clock()
            if remaining <= 0:
                log.info("eviction deferred by the rate limit", extra={"victim": victim.key})
                return _End.ABANDONED
            await self._wait_change(min(wait, remaining, 5.0))
            if not self._still_waiting(job):
                return _End.STALE

    def _notify(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    async def _wait_change(self, seconds: float) -> None:
        """Sleep `seconds`, or less if an evicted pod goes away meanwhile."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._changed), seconds)

    # ---- API calls ----------------------------------------------------------------------------------

    async def _call(self, method: str, path: str, body: Any = None) -> tuple[Outcome, str]:
        """One logical call with retries of transient failures; (outcome, server message)."""
        backoff = Backoff(initial=0.5, cap=10.0)
        outcome, message = Outcome.TRANSIENT, ""
        for attempt in range(1, API_ATTEMPTS + 1):
            try:
                status, data = await self.request_fn(self.api, method, path, body=body)
            except CONNECTION_ERRORS as exc:
                outcome, message = Outcome.TRANSIENT, f"{type(exc).__name__}: {exc}"
            else:
                outcome, message = classify(status, data), _status_text(data)[0] or f"HTTP {status}"
            if outcome not in (Outcome.TRANSIENT, Outcome.THROTTLED) or attempt == API_ATTEMPTS:
                break
            await asyncio.sleep(backoff.next())
        if outcome in (Outcome.TRANSIENT, Outcome.THROTTLED):
            outcome = Outcome.FAILED  # retries ran out
        return outcome, message

    async def _read_victim(self, victim: Pod) -> _Victim | None:
        """The victim as the API has it now; None when it is gone or replaced. If it cannot be
        read, the snapshot stands in (grace period unknown)."""
        try:
            status, data = await self.request_fn(self.api, "GET", pod_path(victim.namespace, victim.name))
        except CONNECTION_ERRORS:
            status, data = 0, b""
        if status == 404:
            return None
        if status != 200:
            return _Victim(_VictimMeta(victim.uid))
        try:
            found = _VICTIM_DECODER.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return _Victim(_VictimMeta(victim.uid))
        return None if victim.uid and found.metadata.uid != victim.uid else found

    async def _mark_disruption_target(self, job: _Job, victim: Pod) -> None:
        body = disruption_target_patch(job.scheduler_name, victim.uid, time.time())
        try:
            await patch_status(self.api, victim.namespace, victim.name, body)
        except _API_FAILURES as exc:  # informative only: evict anyway
            log.info("cannot set DisruptionTarget", extra={"victim": victim.key, "error": str(exc)})

    async def _nomination_visible(self, job: _Job, *, newer: bool = False) -> bool:
        """Wait (bounded) until our pod cache shows the nomination the reporter writes; False
        when the preemptor is gone or bound meanwhile. `newer`: only a version written after
        the cycle that submitted the job counts (an older write may show the same node).

        Both callers need that write to have landed: a retry that does not see its nomination
        would preempt again instead of waiting for its terminating victims, and a clear written
        before it would be undone by it."""
        deadline = self.clock() + self.nomination_settle
        submitted = job.preemptor.resource_version
        while True:
            current = self.pod_lookup(job.preemptor.key)
            if current is None or current.uid != job.preemptor.uid or current.node_name:
                return False
            landed = current.nominated_node_name == job.node and (
                not newer or not submitted or current.resource_version != submitted
            )
            if landed or self.clock() >= deadline:
                return True
            await asyncio.sleep(0.1)

    async def _clear_nomination(self, job: _Job) -> None:
        if not await self._nomination_visible(job, newer=True) or not self.is_leader():
            return
        try:
            await set_nominated_node(self.api, job.preemptor.namespace, job.preemptor.name, "")
        except _API_FAILURES as exc:
            log.warning("cannot clear nomination", extra={"pod": job.preemptor.key, "error": str(exc)})

    # ---- reporting ----------------------------------------------------------------------------------

    def _record(self, job: _Job, victim: Pod, result: str, message: str = "") -> None:
        policy = job.settings.policy_name
        metrics.evictions.labels(_METRIC_RESULT[result], policy or "").inc()
        if self.on_record is not None:
            self.on_record(
                policy,
                EvictionRecord(
                    time.time(),
                    victim.namespace,
                    victim.name,
                    victim.uid,
                    job.preemptor.uid,
                    job.node,
                    result,
                    message,
                ),
            )
