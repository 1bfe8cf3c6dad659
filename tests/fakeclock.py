"""A clock that moves only when a test says so, for code that takes a clock (and a sleep) as a seam."""

from __future__ import annotations

import asyncio

WALL_EPOCH = 1_700_000_000.0  # what time.time() reads when the monotonic clock reads 0


class FakeClock:
    """Monotonic and wall time that advance together, by `advance` or by the fake `sleep`.

    Calling the clock reads the monotonic time, so an instance is itself a `Callable[[], float]`
    clock. `sleep` records the wait, advances the time and yields to the event loop once, so other
    tasks run as if the time had passed, without waiting for it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return WALL_EPOCH + self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "time does not go back"
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(seconds, 0.0))
        await asyncio.sleep(0)
