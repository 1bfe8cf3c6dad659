"""The retry helper and token bucket: the pure timing pieces of the API adapters, with a fake
clock and sleep (no wall-clock waits)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from policy_scheduler.kube.ratelimit import TokenBucket
from policy_scheduler.kube.retry import Answer, Backoff, RetryPolicy, parse_retry_after, with_retries
from policy_scheduler.kube.timings import DEFAULTS
from tests.fakeclock import FakeClock


class Server:
    """Answers in order, the last one for ever; counts the calls."""

    def __init__(self, *answers: Answer | BaseException) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def __call__(self) -> Answer:
        self.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


async def run(server: Server, policy: RetryPolicy, clock: FakeClock, draw: float = 1.0) -> Answer:
    return await with_retries(
        server,
        policy,
        connection_errors=(ConnectionError,),
        sleep=clock.sleep,
        clock=clock.monotonic,
        rng=lambda: draw,
    )


# ---- the backoff schedule ---------------------------------------------------------------------------


def test_backoff_ceiling_doubles_up_to_cap() -> None:
    backoff = Backoff(RetryPolicy(initial=0.5, factor=2.0, cap=30.0), rng=lambda: 1.0)
    assert [backoff.next() for _ in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.5, 0.999])
def test_full_jitter_stays_within_zero_and_the_ceiling(draw: float) -> None:
    policy = RetryPolicy(initial=1.0, cap=8.0)
    backoff = Backoff(policy, rng=lambda: draw)
    delays = [backoff.next() for _ in range(10)]
    assert delays == [draw * policy.ceiling(n) for n in range(10)]
    assert all(0.0 <= d <= 8.0 for d in delays)


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_informer_backoff_is_client_gos_reflector_backoff(draw: float) -> None:
    """800 ms doubling to 30 s, each delay in [d, 2d): never a fast loop against a dead server."""
    backoff = Backoff(DEFAULTS.informer.retry, rng=lambda: draw)
    delays = [backoff.next() for _ in range(8)]
    for n, delay in enumerate(delays):
        d = min(0.8 * 2**n, 30.0)
        assert d <= delay < 2 * d


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_a_status_write_and_its_retries_are_never_a_burst(draw: float) -> None:
    """Delays in [0.1, 0.2) s doubling: however the jitter falls, one write's five attempts
    take at least 1.5 s and at most four of them land in any second."""
    policy = DEFAULTS.api.status_patch_retry
    assert policy.max_attempts == 5
    backoff = Backoff(policy, rng=lambda: draw)
    times = [0.0]
    for _ in range(policy.max_attempts - 1):
        times.append(times[-1] + backoff.next())
    assert times[-1] >= 1.5
    assert all(later - earlier > 1.0 for earlier, later in zip(times, times[4:], strict=False))
    assert all(later - earlier >= 0.1 for earlier, later in itertools.pairwise(times))


def test_backoff_reset() -> None:
    backoff = Backoff(RetryPolicy(initial=0.5), rng=lambda: 1.0)
    backoff.next()
    backoff.next()
    assert backoff.next() == 2.0
    backoff.reset()
    assert backoff.next() == 0.5


def test_retry_after_is_a_floor_for_the_delay() -> None:
    backoff = Backoff(RetryPolicy(initial=1.0, cap=4.0), rng=lambda: 1.0)
    assert backoff.next(retry_after=7.0) == 7.0  # the server's wish wins over the cap
    assert backoff.next(retry_after=0.5) == 2.0  # but never shortens the backoff


# ---- Retry-After ------------------------------------------------------------------------------------


def test_parse_retry_after_seconds_and_http_date() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    assert parse_retry_after("3", now) == 3.0
    assert parse_retry_after(" 120 ", now) == 120.0
    later = format_datetime(datetime(2025, 1, 1, 12, 0, 42, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(later, now) == 42.0
    earlier = format_datetime(datetime(2025, 1, 1, 11, 0, 0, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(earlier, now) == 0.0
    assert parse_retry_after(None, now) is None
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("-1", now) is None


# ---- with_retries -----------------------------------------------------------------------------------


async def test_retry_after_on_429_and_503_is_honoured() -> None:
    clock = FakeClock(now=0.0)
    server = Server(Answer(429, b"", 5.0), Answer(503, b"", 2.0), Answer(200, b"ok"))
    answer = await run(server, RetryPolicy(initial=0.1, cap=1.0), clock)
    assert answer.status == 200
    assert server.calls == 3
    assert clock.sleeps == [5.0, 2.0]


@pytest.mark.parametrize("status", [400, 403, 404, 409, 422])
async def test_a_4xx_that_cannot_succeed_is_not_retried(status: int) -> None:
    clock = FakeClock(now=0.0)
    server = Server(Answer(status, b"", 1.0), Answer(200, b""))
    answer = await run(server, RetryPolicy(), clock)
    assert answer.status == status
    assert server.calls == 1
    assert clock.sleeps == []


async def test_an_answer_the_caller_calls_final_is_not_retried() -> None:
    server = Server(Answer(429, b"budget"), Answer(200, b""))
    answer = await with_retries(
        server, RetryPolicy(), final=lambda a: a.body == b"budget", sleep=FakeClock(now=0.0).sleep
    )
    assert answer.status == 429
    assert server.calls == 1


async def test_attempts_are_bounded_and_the_last_answer_returned() -> None:
    clock = FakeClock(now=0.0)
    server = Server(Answer(500, b"boom"))
    answer = await run(server, RetryPolicy(initial=1.0, cap=3.0, max_attempts=4), clock)
    assert (answer.status, answer.body) == (500, b"boom")
    assert server.calls == 4
    assert clock.sleeps == [1.0, 2.0, 3.0]


async def test_deadline_bounds_an_unbounded_policy() -> None:
    clock = FakeClock(now=0.0)
    server = Server(Answer(503, b""))
    await run(server, RetryPolicy(initial=1.0, cap=4.0, max_attempts=None, deadline=10.0), clock)
    assert clock.sleeps == [1.0, 2.0, 4.0]  # a fourth wait (4 s) would end past the deadline
    assert server.calls == 4


async def test_a_retry_after_beyond_the_policys_bound_is_left_to_the_caller() -> None:
    clock = FakeClock(now=0.0)
    server = Server(Answer(429, b"", 600.0), Answer(200, b""))
    answer = await run(server, RetryPolicy(max_retry_after=30.0), clock)
    assert (answer.status, answer.retry_after) == (429, 600.0)
    assert server.calls == 1
    assert clock.sleeps == []


async def test_connection_errors_are_retried_then_raised() -> None:
    clock = FakeClock(now=0.0)
    recovered = Server(ConnectionError("reset"), Answer(201, b""))
    assert (await run(recovered, RetryPolicy(initial=0.5), clock)).status == 201
    assert clock.sleeps == [0.5]
    down = Server(ConnectionError("refused"))
    with pytest.raises(ConnectionError):
        await run(down, RetryPolicy(max_attempts=3), FakeClock(now=0.0))
    assert down.calls == 3


# ---- the token bucket -------------------------------------------------------------------------------


def test_token_bucket_burst_then_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3)
    assert [bucket.allow(0.0) for _ in range(4)] == [True, True, True, False]
    assert not bucket.allow(0.4)  # 0.8 tokens
    assert bucket.allow(0.5)  # 1.0 token
    assert not bucket.allow(0.5)


def test_token_bucket_delay_says_when_without_taking() -> None:
    bucket = TokenBucket(rate=0.1, burst=1)
    assert bucket.delay(0.0) == 0.0
    assert bucket.delay(0.0) == 0.0  # asking takes nothing
    bucket.take()
    assert bucket.delay(4.0) == pytest.approx(6.0)


def test_token_bucket_uses_the_injected_clock() -> None:
    clock = FakeClock(now=0.0)
    bucket = TokenBucket(rate=1.0, burst=1, clock=clock.monotonic)
    assert bucket.allow()
    assert not bucket.allow()
    clock.advance(1.0)
    assert bucket.allow()


def test_token_bucket_refill_is_capped() -> None:
    bucket = TokenBucket(rate=1.0, burst=2)
    assert bucket.allow(0.0)
    assert bucket.allow(0.0)
    assert bucket.full(100.0)
    assert [bucket.allow(100.0) for _ in range(3)] == [True, True, False]


def test_token_bucket_ignores_clock_going_back() -> None:
    bucket = TokenBucket(rate=1.0, burst=1)
    assert bucket.allow(10.0)
    assert not bucket.allow(5.0)
    assert not bucket.allow(10.5)
    assert bucket.allow(11.0)
