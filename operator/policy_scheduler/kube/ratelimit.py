"""A token bucket: `burst` requests at once, then `rate` per second on average.

The one bucket of the adapters: event writes (events.py) and eviction limits
(eviction/limiter.py). Times come from the injected clock, or are passed in by a caller that
already read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBucket:
    rate: float
    burst: int
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    tokens: float = field(default=-1.0)
    last: float | None = None

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = float(self.burst)

    def _refill(self, now: float | None) -> None:
        now = self.clock() if now is None else now
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now if self.last is None else max(self.last, now)

    def delay(self, now: float | None = None) -> float:
        """Seconds until a token is available (0: one is); takes nothing."""
        self._refill(now)
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def take(self) -> None:
        """Spend a token `delay()` said was there."""
        self.tokens -= 1.0

    def give_back(self) -> None:
        """Return a token `take()` spent on something that did not happen."""
        self.tokens = min(float(self.burst), self.tokens + 1.0)

    def allow(self, now: float | None = None) -> bool:
        """Take a token if one is available now."""
        if self.delay(now) > 0:
            return False
        self.take()
        return True

    def full(self, now: float | None = None) -> bool:
        """Idle long enough to have refilled: an equivalent fresh bucket could replace it."""
        self._refill(now)
        return self.tokens >= self.burst
