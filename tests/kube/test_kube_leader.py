"""LeaderElector with a fake clock and an in-memory Lease: client-go's election (acquire, renew,
conflicts, expiry of an observed record by the local clock), and fencing: acting stops
renewDeadline after the last successful renewal was *sent*, at once when the replica learns it
lost, and after an event-loop pause longer than the margin until it has renewed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from policy_scheduler.kube.leader import AlwaysLeader, LeaderElector, default_identity
from policy_scheduler.kube.leadership_gate import LeadershipGate
from policy_scheduler.kube.lease import LeaderRecord, LeaseError, StoredLease
from policy_scheduler.kube.timings import LeaderTimings
from policy_scheduler.scheduler.framework.interfaces import NotLeading
from tests.aio import settle
from tests.fakeclock import FakeClock

TIMINGS = LeaderTimings(lease_duration=15, renew_deadline=10.0, retry_period=2.0)


class FakeLeases:
    """One Lease in memory with the API server's rules: a write names the resourceVersion it read
    and is refused with 409 when the Lease has changed since. `latency` advances the clock during a
    request (the answer arrives that much later); `failure` makes every request fail."""

    namespace = "ns"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.stored: StoredLease | None = None
        self.version = 100
        self.latency = 0.0
        self.failure: LeaseError | None = None
        self.requests: list[str] = []

    def describe(self) -> str:
        return "ns/lease"

    async def _request(self, verb: str) -> None:
        self.requests.append(verb)
        self.clock.advance(self.latency)
        await asyncio.sleep(0)
        if self.failure is not None:
            raise LeaseError(verb, self.failure.status, self.failure.reason, self.failure.message)

    def _store(self, record: LeaderRecord) -> StoredLease:
        self.version += 1
        self.stored = StoredLease(record, str(self.version), {"spec": record.spec_fields()})
        return self.stored

    async def get(self, request_timeout: float) -> StoredLease | None:
        await self._request("get")
        return self.stored

    async def create(self, record: LeaderRecord, request_timeout: float) -> StoredLease:
        await self._request("create")
        if self.stored is not None:
            raise LeaseError("create", 409, "AlreadyExists", "leases exists")
        return self._store(record)

    async def update(self, current: StoredLease, record: LeaderRecord, request_timeout: float) -> StoredLease:
        await self._request("update")
        if self.stored is None or self.stored.resource_version != current.resource_version:
            raise LeaseError("update", 409, "Conflict", "the object has been modified")
        return self._store(record)

    def take_over(self, holder: str) -> None:
        """Another replica writes the Lease (e.g. after it expired in its eyes)."""
        transitions = self.stored.record.transitions + 1 if self.stored else 0
        self._store(LeaderRecord(holder, 15, "t", "t", transitions))


def elector(leases: FakeLeases, clock: FakeClock, identity: str = "me", **kw: Any) -> LeaderElector:
    kw.setdefault("sleep", clock.sleep)
    made = LeaderElector(leases, identity=identity, timings=TIMINGS, clock=clock, wall=clock.time, **kw)
    made.note_loop_running()
    return made


def run_for(clock: FakeClock, seconds: float, *electors: LeaderElector) -> None:
    """Let `seconds` pass with the event loop running (its ticker noting it) all along."""
    end = clock.now + seconds
    while clock.now < end - 1e-9:
        clock.advance(min(TIMINGS.loop_tick, end - clock.now))
        for one in electors:
            one.note_loop_running()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(now=1000.0)


@pytest.fixture
def leases(clock: FakeClock) -> FakeLeases:
    return FakeLeases(clock)


# ---- acquire, renew, validity by the local clock -------------------------------------------------------


async def test_acquires_a_missing_lease_and_acts_until_the_renew_deadline(
    clock: FakeClock, leases: FakeLeases
) -> None:
    me = elector(leases, clock)
    assert await me.try_acquire_or_renew()
    assert leases.requests == ["get", "create"]
    assert leases.stored is not None
    assert (leases.stored.record.holder, leases.stored.record.lease_duration) == ("me", 15)
    assert me.may_act()
    assert me.became_leader.is_set()
    assert me.lease_version == 101  # the catch-up target: the write that started the term
    term = me.term
    run_for(clock, 9.9, me)
    assert me.may_act()
    run_for(clock, 0.1, me)  # renewDeadline after the create was sent: the margin (5 s) before expiry
    assert not me.may_act()
    assert me.term != term
    assert not me.became_leader.is_set()
    with pytest.raises(NotLeading):
        me.check()


async def test_validity_counts_from_when_the_renewal_was_sent_not_answered(
    clock: FakeClock, leases: FakeLeases
) -> None:
    me = elector(leases, clock)
    assert await me.try_acquire_or_renew()
    clock.advance(2)
    me.note_loop_running()
    sent = clock.now
    leases.latency = 3.0  # the answer comes 3 s after the request left
    assert await me.try_acquire_or_renew()
    assert leases.requests[-1] == "update"  # the leader's fast path: no GET
    me.note_loop_running()
    run_for(clock, sent + TIMINGS.renew_deadline - clock.now - 0.01, me)
    assert me.may_act()
    clock.advance(0.01)
    assert not me.may_act()


async def test_a_renewal_within_the_term_keeps_the_term(clock: FakeClock, leases: FakeLeases) -> None:
    me = elector(leases, clock)
    await me.try_acquire_or_renew()
    term, version = me.term, me.lease_version
    for _ in range(5):
        clock.advance(2)
        me.note_loop_running()
        assert await me.try_acquire_or_renew()
    assert (me.term, me.lease_version) == (term, version)  # no new catch-up needed
    assert me.may_act()
    assert leases.stored is not None
    assert leases.stored.record.transitions == 0


async def test_a_standby_waits_a_lease_duration_of_an_unchanged_record_by_its_own_clock(
    clock: FakeClock, leases: FakeLeases
) -> None:
    leader = elector(leases, clock, "leader")
    standby = elector(leases, clock, "standby")
    await leader.try_acquire_or_renew()
    assert not await standby.try_acquire_or_renew()  # held, observed just now
    for _ in range(3):  # the leader keeps renewing: the standby keeps observing a new record
        clock.advance(5)
        leader.note_loop_running()
        await leader.try_acquire_or_renew()
        assert not await standby.try_acquire_or_renew()
    # The leader freezes; its record stays as it was. 15 s after the standby saw it change...
    clock.advance(14.9)
    assert not await standby.try_acquire_or_renew()
    clock.advance(0.2)
    standby.note_loop_running()
    assert await standby.try_acquire_or_renew()
    assert leases.stored is not None
    assert (leases.stored.record.holder, leases.stored.record.transitions) == ("standby", 1)
    assert standby.may_act()
    # The frozen leader's own clock ran too: it stopped acting 5 s before the standby could take over.
    assert not leader.may_act()


async def test_of_two_standbys_reading_the_same_record_only_one_takes_it(
    clock: FakeClock, leases: FakeLeases
) -> None:
    leases.take_over("gone")
    a, b = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert not await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.advance(16)
    a.note_loop_running()
    b.note_loop_running()
    results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert a.may_act() != b.may_act()


async def test_the_leader_stops_acting_at_once_when_it_learns_another_holds_the_lease(
    clock: FakeClock, leases: FakeLeases
) -> None:
    me = elector(leases, clock)
    await me.try_acquire_or_renew()
    changes: list[bool] = []
    me.on_change = changes.append
    leases.take_over("other")  # e.g. after this replica was partitioned away
    clock.advance(2)
    me.note_loop_running()
    assert me.may_act()  # it does not know yet
    assert not await me.try_acquire_or_renew()  # 409 on the fast path, then GET: held by "other"
    assert leases.requests[-2:] == ["update", "get"]
    assert not me.may_act()
    assert changes == [False]
    assert leases.stored is not None
    assert leases.stored.record.holder == "other"


async def test_renewals_that_keep_failing_end_the_term_at_the_renew_deadline(
    clock: FakeClock, leases: FakeLeases
) -> None:
    me = elector(leases, clock)
    await me.try_acquire_or_renew()
    acquired = clock.now
    leases.failure = LeaseError("update", 0, "ClientConnectorError", "connection refused")
    await me._lead()  # renews every retry period until it gives up
    assert clock.now == pytest.approx(acquired + TIMINGS.renew_deadline)
    assert not me.may_act()
    assert leases.requests.count("get") >= 4  # tried every retry period (fast path, then GET)


# ---- pauses of the event loop --------------------------------------------------------------------------


async def test_a_pause_longer_than_the_margin_stops_acting_until_renewed_in_a_new_term(
    clock: FakeClock, leases: FakeLeases
) -> None:
    me = elector(leases, clock)
    await me.try_acquire_or_renew()
    term, version = me.term, me.lease_version
    clock.advance(TIMINGS.margin + 0.5)  # the loop did not run: a frozen process, a stopped VM
    assert not me.may_act()  # the first thing to run after it sees the gap
    assert not me.became_leader.is_set()
    me.note_loop_running()
    assert not me.may_act()  # still: until it has renewed
    clock.advance(0.1)
    me.note_loop_running()
    assert await me.try_acquire_or_renew()
    assert me.may_act()
    assert me.term > term  # the gate catches the caches up again
    assert me.lease_version > version


async def test_a_pause_shorter_than_the_margin_changes_nothing(clock: FakeClock, leases: FakeLeases) -> None:
    me = elector(leases, clock)
    await me.try_acquire_or_renew()
    term = me.term
    clock.advance(TIMINGS.margin - 0.5)
    assert me.may_act()
    me.note_loop_running()
    assert me.term == term


async def test_after_a_pause_the_leader_renews_at_once(clock: FakeClock, leases: FakeLeases) -> None:
    async def never(seconds: float) -> None:  # the retry period never ends by itself here
        await asyncio.Event().wait()

    me = elector(leases, clock, sleep=never)
    await me.try_acquire_or_renew()
    renewing = asyncio.create_task(me._lead())
    await settle()  # parked in its retry-period pause
    count = len(leases.requests)
    clock.advance(TIMINGS.margin + 1)
    me.note_loop_running()  # the ticker sees the gap and wakes the renewal
    await settle()
    assert leases.requests[count:] == ["update"]
    assert me.may_act()
    renewing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await renewing


# ---- errors: one clear line, rate-limited -----------------------------------------------------------


async def test_refused_by_rbac_logs_one_clear_line_per_interval(
    clock: FakeClock, leases: FakeLeases, caplog: pytest.LogCaptureFixture
) -> None:
    me = elector(leases, clock)
    leases.failure = LeaseError(
        "get", 403, "Forbidden", 'leases.coordination.k8s.io "lease" is forbidden: User "x" cannot get'
    )
    caplog.set_level(logging.INFO, logger="policy_scheduler.kube.leader")
    for _ in range(10):  # 20 s of attempts
        assert not await me.try_acquire_or_renew()
        clock.advance(2)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    message = errors[0].getMessage()
    assert "forbidden to get Lease ns/lease" in message
    assert "grant get, create and update on leases.coordination.k8s.io in namespace ns" in message
    assert not any(r.exc_info for r in caplog.records)
    clock.advance(TIMINGS.error_log_interval)
    assert not await me.try_acquire_or_renew()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert getattr(errors[1], "failed_attempts", None) == 10  # since the previous line


async def test_a_missing_namespace_is_named(
    clock: FakeClock, leases: FakeLeases, caplog: pytest.LogCaptureFixture
) -> None:
    me = elector(leases, clock)

    async def refuse(record: LeaderRecord, request_timeout: float) -> StoredLease:
        raise LeaseError("create", 404, "NotFound", 'namespaces "ns" not found')

    leases.create = refuse  # type: ignore[method-assign]
    assert not await me.try_acquire_or_renew()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "namespace ns does not exist" in error.getMessage()
    assert "--lease-namespace" in error.getMessage()


# ---- release ----------------------------------------------------------------------------------------


async def test_a_released_lease_is_taken_at_once(clock: FakeClock, leases: FakeLeases) -> None:
    leader, standby = elector(leases, clock, "leader"), elector(leases, clock, "standby")
    await leader.try_acquire_or_renew()
    assert not await standby.try_acquire_or_renew()
    await leader.release()
    assert not leader.may_act()
    assert leases.stored is not None
    assert (leases.stored.record.holder, leases.stored.record.lease_duration) == ("", 1)
    assert await standby.try_acquire_or_renew()


def test_default_identity_is_hostname_and_a_uuid() -> None:
    import socket

    first, second = default_identity(), default_identity()
    host, _, unique = first.rpartition("_")
    assert host == socket.gethostname()
    assert len(unique) == 36
    assert first != second


# ---- LeadershipGate: a term starts once the caches have caught up with its Lease write ---------------


class _Leadership:
    def __init__(self) -> None:
        self.became_leader = asyncio.Event()
        self.lease_version = 0
        self._term = 0
        self._leading = False

    def is_leader(self) -> bool:
        return self._leading

    @property
    def term(self) -> int:
        return self._term

    def lead(self, version: int) -> None:
        self._term += 1
        self._leading = True
        self.lease_version = version
        self.became_leader.set()

    def lose(self) -> None:
        self._term += 1
        self._leading = False
        self.became_leader.clear()


class _CatchUp:
    def __init__(self) -> None:
        self.asked: list[int] = []
        self.release = asyncio.Event()

    async def __call__(self, version: int) -> None:
        self.asked.append(version)
        await self.release.wait()


async def test_each_term_waits_for_the_caches_to_reach_its_lease_write() -> None:
    leadership, catch_up = _Leadership(), _CatchUp()
    gate = LeadershipGate(leadership, catch_up)
    ready = asyncio.create_task(gate.until_ready())
    leadership.lead(version=500)
    await settle()
    assert catch_up.asked == [500]
    assert not gate.should_schedule()  # leading, but not caught up
    catch_up.release.set()
    await ready
    assert gate.should_schedule()
    leadership.lose()
    assert not gate.should_schedule()
    catch_up.release.clear()
    ready = asyncio.create_task(gate.until_ready())
    leadership.lead(version=900)
    await settle()
    assert catch_up.asked == [500, 900]
    assert not gate.should_schedule()  # a new term catches up again
    catch_up.release.set()
    await ready
    assert gate.should_schedule()


async def test_a_term_that_ended_while_catching_up_never_opens_the_gate() -> None:
    leadership, catch_up = _Leadership(), _CatchUp()
    gate = LeadershipGate(leadership, catch_up)
    ready = asyncio.create_task(gate.until_ready())
    leadership.lead(version=10)
    await settle()
    leadership.lose()
    catch_up.release.set()
    await settle()
    assert not ready.done()  # caught up, but that term is over
    leadership.lead(version=20)
    await ready
    assert gate.should_schedule()
    assert catch_up.asked[-1] == 20


async def test_always_leader_schedules_once_the_caches_are_current() -> None:
    catch_up = _CatchUp()
    catch_up.release.set()
    always = AlwaysLeader()
    gate = LeadershipGate(always, catch_up)
    await gate.until_ready()
    assert gate.should_schedule()
    assert catch_up.asked == [0]
    always.check()  # never refuses
