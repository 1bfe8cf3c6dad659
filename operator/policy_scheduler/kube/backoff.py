"""Exponential backoff with jitter, shared by the informers and the status writers."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class Backoff:
    """Delays initial·factor^n capped at `cap`, each drawn from [d·(1-jitter), d].

    Jitter spreads the retries of many clients (or many informers in one process) after a
    shared outage instead of having them all return at the same instant.
    """

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.5
    rng: Callable[[], float] = field(default=random.random, repr=False)
    attempts: int = 0

    def peek(self) -> float:
        """The un-jittered delay the next call to `next()` is based on."""
        return min(self.cap, self.initial * self.factor**self.attempts)

    def next(self) -> float:
        base = self.peek()
        self.attempts += 1
        return base * (1.0 - self.jitter * self.rng())

    def reset(self) -> None:
        self.attempts = 0
