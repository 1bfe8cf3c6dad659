"""A token bucket: `burst` requests at once, then `rate` per second on average."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBucket:
    rate: float
    burst: int
    tokens: float = field(default=-1.0)
    last: float | None = None

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = float(self.burst)

    def _refill(self, now: float) -> None:
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now if self.last is None else max(self.last, now)

    def allow(self, now: float) -> bool:
        """Take a token if one is available at time `now` (seconds, any monotonic origin)."""
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def full(self, now: float) -> bool:
        """Idle long enough to have refilled: an equivalent fresh bucket could replace it."""
        self._refill(now)
        return self.tokens >= self.burst
