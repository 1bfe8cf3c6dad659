"""Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics, and fencing by
this replica's own clock.

Election, as client-go's LeaderElector: a standby tries every retryPeriod (jittered by up to
1.2x) and may take the Lease once the record it last observed has stayed unchanged for the
record's leaseDurationSeconds, timed by its own clock from when it observed it (clocks of
different machines are never compared). The leader renews every retryPeriod. Every write is a PUT
of the Lease as last read, conditional on its resourceVersion, so two replicas can never both
write from the same record.

Fencing: the leader may act (`may_act`, `check`: kube.fence asks before each write only the leader
makes) only until renewDeadline after the moment its last successful renewal was *sent*, by its
own clock. A standby can take the Lease no sooner than leaseDuration after it observed that
renewal, which cannot be before it was sent: the difference (the margin) is how long a pause
between a check and its write may last without harm. A renewal that does not succeed within
that time ends the term (kube-scheduler exits then; we stay a warm standby).

Pauses: a ticker notes when the event loop last ran. A gap longer than the margin (a frozen
process, a stopped VM, a long garbage collection) means the watches stalled and the caches are
behind: the replica stops acting until it has renewed, and that renewal starts a new term, which
the gate (kube/leadership_gate.py) only opens once the caches have caught up with it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable

from policy_scheduler.kube.event_objects import micro_time
from policy_scheduler.kube.lease import LeaderRecord, LeaseError, Leases, StoredLease
from policy_scheduler.kube.timings import DEFAULTS, LEADER_JITTER_FACTOR, LeaderTimings
from policy_scheduler.kube.versions import resource_version_number
from policy_scheduler.observability import metrics
from policy_scheduler.scheduler.framework.interfaces import NotLeading

log = logging.getLogger(__name__)

_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def local_clock() -> float:
    """The clock lease validity is timed by: CLOCK_BOOTTIME where there is one (it keeps counting
    while the machine is suspended, which CLOCK_MONOTONIC does not), else the monotonic clock."""
    if _BOOTTIME is None:
        return time.monotonic()
    return time.clock_gettime(_BOOTTIME)


def default_identity() -> str:
    """kube-scheduler's: the hostname and a uuid, distinct for two replicas on one host."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class _ErrorLog:
    """One clear line per lease problem: at once when it starts or changes, then at most once
    per interval while it lasts (with how many attempts failed meanwhile)."""

    def __init__(self, interval: float, clock: Callable[[], float]) -> None:
        self.interval = interval
        self.clock = clock
        self._message = ""
        self._logged_at = -math.inf
        self._since = 0

    def report(self, level: int, message: str) -> None:
        now = self.clock()
        if message == self._message and now - self._logged_at < self.interval:
            self._since += 1
            return
        extra = {"failed_attempts": self._since + 1} if message == self._message else {}
        log.log(level, message, extra=extra)
        self._message, self._logged_at, self._since = message, now, 0

    def clear(self) -> None:
        if self._message:
            log.info("lease reachable again")
        self._message, self._since = "", 0


class LeaderElector:
    def __init__(
        self,
        lease_api: Leases,
        *,
        identity: str | None = None,
        timings: LeaderTimings = DEFAULTS.leader,
        on_change: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = local_clock,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.lease_api = lease_api
        self.identity = identity or default_identity()
        self.timings = timings
        self.on_change = on_change
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.rng = rng
        self.became_leader = asyncio.Event()  # set while a term lasts and the replica may act
        self.lease_version = 0  # the resourceVersion of the write that started the current term
        self._term = 0  # bumped whenever acting starts or stops, so a stale period is void
        self._leading = False  # holds the lease (as far as it knows)
        self._valid_until = -math.inf  # by `clock`: when acting must stop without a renewal
        self._suspect = False  # the event loop paused: renew before acting again
        self._last_tick = clock()
        self._observed: LeaderRecord | None = None
        self._observed_at = -math.inf  # by `clock`: when `_observed` was first seen
        self._lease: StoredLease | None = None  # the Lease as last read or written
        self._wake = asyncio.Event()
        self._errors = _ErrorLog(timings.error_log_interval, clock)

    # ---- fencing ----------------------------------------------------------------------------------

    @property
    def term(self) -> int:
        """Constant while one period of acting lasts; a new one has another value."""
        return self._term

    @property
    def margin(self) -> float:
        return self.timings.margin

    def _hindrance(self, now: float) -> str | None:
        """Why this replica may not act now (None: it may), without changing anything."""
        if not self._leading:
            return "not the leader"
        if now >= self._valid_until:
            return "lease lapsed"
        if self._suspect:
            return "renewing after a pause"
        if now - self._last_tick > self.margin:
            return "event loop paused"
        return None

    def may_act(self) -> bool:
        now = self.clock()
        hindrance = self._hindrance(now)
        if hindrance == "lease lapsed":
            self._stand_down("its lease lapsed by its own clock before it could renew")
        elif hindrance == "event loop paused":
            self._paused(now - self._last_tick)
        return hindrance is None

    def is_leader(self) -> bool:
        return self.may_act()

    def check(self) -> None:
        if not self.may_act():
            lease = self.lease_api.describe()
            raise NotLeading(f"{self.identity} may not act as the leader of lease {lease} now")

    def acting_now(self) -> float:
        """1.0 while this replica may act (for the leader gauge; changes nothing)."""
        return 1.0 if self._hindrance(self.clock()) is None else 0.0

    # ---- state changes ----------------------------------------------------------------------------

    def _new_term(self, acting: bool) -> None:
        self._term += 1
        if acting:
            self.became_leader.set()
        else:
            self.became_leader.clear()
        if self.on_change is not None:
            self.on_change(acting)

    def _stand_down(self, reason: str) -> None:
        if not self._leading:
            return
        self._leading = False
        self._suspect = False
        self._valid_until = -math.inf
        lease = self.lease_api.describe()
        log.info("stopped leading", extra={"reason": reason, "identity": self.identity, "lease": lease})
        self._new_term(False)
        self._wake.set()

    def _paused(self, gap: float) -> None:
        if not self._leading or self._suspect:
            return
        self._suspect = True
        log.warning(
            "event loop paused longer than the lease margin; renewing before acting again",
            extra={"paused_s": round(gap, 3), "margin_s": self.margin},
        )
        self._new_term(False)
        self._wake.set()

    def _wrote(self, stored: StoredLease, sent: float) -> None:
        """Our write of the Lease, sent at `sent`, succeeded."""
        acting = self._hindrance(self.clock()) is None
        self._lease = stored
        self._observed = stored.record
        self._observed_at = self.clock()
        self._valid_until = sent + self.timings.renew_deadline
        self._errors.clear()
        if acting:
            return  # a renewal within the term
        # Acquired, or renewed after a lapse or a pause: a new term, whose caches must catch up.
        self._leading = True
        self._suspect = False
        self.lease_version = resource_version_number(stored.resource_version)
        log.info(
            "leading",
            extra={
                "identity": self.identity,
                "lease": self.lease_api.describe(),
                "transitions": stored.record.transitions,
                "resource_version": stored.resource_version,
            },
        )
        self._new_term(True)

    def _failed(self, exc: LeaseError) -> None:
        metrics.leader_election_errors.labels(exc.label).inc()
        lease = self.lease_api.describe()
        if exc.conflict:
            log.debug("lease written by someone else meanwhile", extra={"lease": lease, "error": str(exc)})
            return
        retry = f"retrying every {self.timings.retry_period:g}s"
        if exc.forbidden:
            message = (
                f"leader election: forbidden to {exc.verb} Lease {lease} ({exc.message}); grant get, "
                f"create and update on leases.coordination.k8s.io in namespace "
                f"{self.lease_api.namespace} (manifests/rbac.yaml); {retry}"
            )
            self._errors.report(logging.ERROR, message)
        elif exc.namespace_missing:
            message = (
                f"leader election: namespace {self.lease_api.namespace} does not exist, so Lease "
                f"{lease} cannot be created; create it or choose another with --lease-namespace; {retry}"
            )
            self._errors.report(logging.ERROR, message)
        else:
            message = f"leader election: cannot {exc.verb} Lease {lease}: {exc}; {retry}"
            self._errors.report(logging.WARNING, message)

    # ---- one attempt ------------------------------------------------------------------------------

    def _record(self, *, acquire_time: str, transitions: int) -> LeaderRecord:
        return LeaderRecord(
            holder=self.identity,
            lease_duration=self.timings.lease_duration,
            acquire_time=acquire_time,
            renew_time=micro_time(self.wall()),
            transitions=transitions,
        )

    def _timeout(self) -> float:
        """A request of the leader must not outlive its lease; a standby's is bounded alike."""
        if self._leading:
            return max(0.1, min(self.timings.renew_deadline, self._valid_until - self.clock()))
        return self.timings.renew_deadline

    async def try_acquire_or_renew(self) -> bool:
        """client-go's tryAcquireOrRenew: True when this replica holds the Lease afterwards."""
        lease = self._lease
        observed = self._observed
        if self._leading and lease is not None and observed is not None:
            # The leader's fast path: write over the Lease as last written.
            record = self._record(acquire_time=observed.acquire_time, transitions=observed.transitions)
            sent = self.clock()
            try:
                self._wrote(await self.lease_api.update(lease, record, self._timeout()), sent)
                return True
            except LeaseError as exc:
                self._failed(exc)  # read it and try again below
        try:
            current = await self.lease_api.get(self._timeout())
            if current is None:
                now = micro_time(self.wall())
                record = LeaderRecord(self.identity, self.timings.lease_duration, now, now, 0)
                sent = self.clock()
                self._wrote(await self.lease_api.create(record, self._timeout()), sent)
                return True
            self._lease = current
            if current.record != self._observed:
                self._observed = current.record
                self._observed_at = self.clock()
            holder = current.record.holder
            expires = self._observed_at + current.record.lease_duration
            if holder and holder != self.identity and self.clock() < expires:
                self._stand_down(f"the lease is held by {holder}")
                self._errors.clear()
                return False
            if holder == self.identity:
                record = self._record(
                    acquire_time=current.record.acquire_time, transitions=current.record.transitions
                )
            else:
                now = micro_time(self.wall())
                record = self._record(acquire_time=now, transitions=current.record.transitions + 1)
            sent = self.clock()
            self._wrote(await self.lease_api.update(current, record, self._timeout()), sent)
            return True
        except LeaseError as exc:
            self._failed(exc)
            return False

    # ---- the loops --------------------------------------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        """Sleep, or less when something needs the loop at once (a renewal after a pause). A wake
        that came while no one slept ends the next pause at once: it is never lost."""
        if not self._wake.is_set():
            sleeping = asyncio.ensure_future(self.sleep(max(0.0, seconds)))
            waiters = [sleeping, asyncio.ensure_future(self._wake.wait())]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
        self._wake.clear()

    def _jittered(self, period: float) -> float:
        return period * (1.0 + LEADER_JITTER_FACTOR * self.rng())

    def note_loop_running(self) -> None:
        """The event loop runs now; if it had not for longer than the margin, that was a pause."""
        now = self.clock()
        if now - self._last_tick > self.margin:
            self._paused(now - self._last_tick)
        self._last_tick = now

    async def _tick(self) -> None:
        while True:
            await self.sleep(self.timings.loop_tick)
            self.note_loop_running()

    async def _lead(self) -> None:
        """Renew every retry period while leading; at once after a pause (`_paused` wakes it)."""
        while self._leading:
            await self._pause(min(self.timings.retry_period, self._valid_until - self.clock()))
            if not self._leading:
                return
            if self.clock() >= self._valid_until:
                self._stand_down("it could not renew its lease within the renew deadline")
                return
            await self.try_acquire_or_renew()

    async def run(self) -> None:
        log.info(
            "leader election",
            extra={
                "identity": self.identity,
                "lease": self.lease_api.describe(),
                "lease_duration_s": self.timings.lease_duration,
                "renew_deadline_s": self.timings.renew_deadline,
                "retry_period_s": self.timings.retry_period,
            },
        )
        ticker = asyncio.create_task(self._tick(), name="leader-loop-ticker")
        try:
            while True:
                if not await self.try_acquire_or_renew():
                    await self._pause(self._jittered(self.timings.retry_period))
                    continue
                await self._lead()
        finally:
            ticker.cancel()
            self._stand_down("leader election stopped")

    async def release(self) -> None:
        """Give the Lease up (client-go's ReleaseOnCancel): called at shutdown once nothing acts
        for this replica any more, so a standby takes over at once instead of after the lease."""
        lease = self._lease
        held = lease is not None and lease.record.holder == self.identity
        self._stand_down("shutting down")
        if not held or lease is None:
            return
        now = micro_time(self.wall())
        record = LeaderRecord("", 1, now, now, lease.record.transitions)
        where = self.lease_api.describe()
        try:
            await self.lease_api.update(lease, record, self.timings.renew_deadline)
            log.info("released the lease", extra={"lease": where})
        except LeaseError as exc:
            log.info("could not release the lease", extra={"lease": where, "error": str(exc)})


class AlwaysLeader:
    """--no-leader-elect: a single replica acts unconditionally."""

    def __init__(self) -> None:
        self.became_leader = asyncio.Event()
        self.became_leader.set()
        self.lease_version = 0

    def may_act(self) -> bool:
        return True

    def is_leader(self) -> bool:
        return True

    def check(self) -> None:
        return None

    def acting_now(self) -> float:
        return 1.0

    @property
    def term(self) -> int:
        return 0

    async def run(self) -> None:
        await asyncio.Event().wait()

    async def release(self) -> None:
        return None
