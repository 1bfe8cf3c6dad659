"""WorkQueue: dedupe per key, no key processed twice at once, per-key backoff with jitter and a
cap, periodic resync. A fake clock drives it; nothing sleeps."""

from __future__ import annotations

import asyncio

import pytest

from policy_scheduler.controllers.workqueue import WorkQueue
from tests.fakeclock import FakeClock


def drain(queue: WorkQueue[str]) -> list[str]:
    out = []
    while (key := queue.poll()) is not None:
        out.append(key)
        queue.done(key)
    return out


def make(
    keys: list[str] | None = None, jitter: float = 0.0, rng: float = 0.0
) -> tuple[WorkQueue[str], FakeClock]:
    clock = FakeClock()
    known = keys if keys is not None else []
    queue: WorkQueue[str] = WorkQueue(
        lambda: known,
        resync_seconds=30.0,
        base_delay=1.0,
        max_delay=8.0,
        jitter=jitter,
        clock=clock,
        rng=lambda: rng,
    )
    return queue, clock


def test_a_key_is_queued_once_in_fifo_order() -> None:
    queue, _ = make()
    for key in ("a", "b", "a", "c", "b"):
        queue.add(key)
    assert len(queue) == 3
    assert drain(queue) == ["a", "b", "c"]


def test_a_key_added_while_processing_is_processed_again_after_done() -> None:
    queue, _ = make()
    queue.add("a")
    assert queue.poll() == "a"
    queue.add("a")  # changed meanwhile
    assert queue.poll() is None  # never twice at once
    queue.done("a")
    assert queue.poll() == "a"


def test_backoff_doubles_per_key_up_to_the_cap_and_forget_resets_it() -> None:
    queue, _ = make()
    delays = [queue.retry("a") for _ in range(5)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert queue.retry("b") == 1.0  # per key
    queue.forget("a")
    assert queue.retry("a") == 1.0
    assert queue.retries("a") == 1


def test_jitter_spreads_retries_within_bounds() -> None:
    queue, _ = make(jitter=0.1, rng=0.5)
    assert queue.retry("a") == pytest.approx(1.05)
    capped, _ = make(jitter=0.1, rng=1.0)
    for _ in range(10):
        delay = capped.retry("a")
    assert delay == 8.0  # the cap holds with jitter


def test_a_retried_key_is_due_only_after_its_delay() -> None:
    queue, clock = make()
    queue.retry("a")  # due in 1 s
    assert queue.poll() is None
    assert queue.next_due() == 1.0
    clock.advance(0.99)
    assert queue.poll() is None
    clock.advance(0.01)
    assert drain(queue) == ["a"]


def test_an_immediate_add_overrides_a_pending_retry() -> None:
    queue, clock = make()
    queue.retry("a")
    queue.add("a")
    assert drain(queue) == ["a"]
    clock.advance(5)
    assert drain(queue) == []  # the delayed copy is gone: processed once


def test_the_earlier_of_two_delays_wins() -> None:
    queue, clock = make()
    queue.add_after("a", 5)
    queue.add_after("a", 2)
    clock.advance(2)
    assert drain(queue) == ["a"]
    clock.advance(3)
    assert drain(queue) == []


def test_periodic_resync_adds_every_known_key() -> None:
    queue, clock = make(keys=["x", "y"])
    assert drain(queue) == []
    clock.advance(29.9)
    assert drain(queue) == []
    clock.advance(0.1)
    assert drain(queue) == ["x", "y"]
    clock.advance(29.9)
    assert drain(queue) == []  # the period restarted
    queue.resync()  # e.g. leadership gained: at once
    assert drain(queue) == ["x", "y"]


async def test_get_waits_for_an_add() -> None:
    queue, _ = make()
    waiter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.add("a")
    assert await asyncio.wait_for(waiter, timeout=1) == "a"
    queue.done("a")
