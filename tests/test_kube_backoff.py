"""Backoff schedule and token bucket: the pure timing pieces of the API adapters."""

from __future__ import annotations

import pytest

from policy_scheduler.kube.backoff import Backoff
from policy_scheduler.kube.ratelimit import TokenBucket


def test_backoff_schedule_doubles_up_to_cap() -> None:
    backoff = Backoff(initial=0.5, factor=2.0, cap=30.0, jitter=0.5, rng=lambda: 0.0)
    assert [backoff.next() for _ in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]


def test_backoff_jitter_shortens_within_bounds() -> None:
    backoff = Backoff(initial=1.0, cap=30.0, jitter=0.5, rng=lambda: 1.0)
    assert [backoff.next() for _ in range(3)] == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("draw", [0.0, 0.25, 0.999])
def test_backoff_never_exceeds_cap(draw: float) -> None:
    backoff = Backoff(cap=30.0, rng=lambda: draw)
    delays = [backoff.next() for _ in range(50)]
    assert max(delays) <= 30.0
    assert min(delays) > 0


def test_backoff_reset() -> None:
    backoff = Backoff(initial=0.5, rng=lambda: 0.0)
    backoff.next()
    backoff.next()
    assert backoff.peek() == 2.0
    backoff.reset()
    assert backoff.next() == 0.5


def test_token_bucket_burst_then_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3)
    assert [bucket.allow(0.0) for _ in range(4)] == [True, True, True, False]
    assert not bucket.allow(0.4)  # 0.8 tokens
    assert bucket.allow(0.5)  # 1.0 token
    assert not bucket.allow(0.5)


def test_token_bucket_refill_is_capped() -> None:
    bucket = TokenBucket(rate=1.0, burst=2)
    assert bucket.allow(0.0) and bucket.allow(0.0)
    assert bucket.full(100.0)
    assert [bucket.allow(100.0) for _ in range(3)] == [True, True, False]


def test_token_bucket_ignores_clock_going_back() -> None:
    bucket = TokenBucket(rate=1.0, burst=1)
    assert bucket.allow(10.0)
    assert not bucket.allow(5.0)
    assert not bucket.allow(10.5)
    assert bucket.allow(11.0)
