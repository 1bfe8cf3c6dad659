"""A small work queue for controllers, in the manner of client-go's: keys, not events.

- a key is queued at most once; added again while being processed, it is queued once more
  when `done` (so no change is lost and no key is processed twice at once);
- `retry` re-adds a key after a per-key exponential backoff with jitter and a cap; `forget`
  resets the key's backoff once it succeeded;
- every `resync_seconds` all the keys the owner knows (`resync()`) are re-added, repairing
  whatever an event missed.

With `observer`, it reports what client-go's workqueue metrics count (adds, time queued, time
processed, retries); depth and work in progress are read from the queue itself
(observability/workqueue_metrics.py).

Single event loop, no threads. The clock is injectable: `poll` never waits, so tests drive
the queue with a fake clock; `get` waits on the loop for the next key.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)

BASE_DELAY = 0.5
MAX_DELAY = 60.0
JITTER = 0.1  # up to +10%: retries of keys that failed together spread out


class WorkQueueObserver(Protocol):
    def added(self) -> None: ...

    def taken(self, queued_seconds: float) -> None: ...

    def finished(self, work_seconds: float) -> None: ...

    def retried(self) -> None: ...


class WorkQueue(Generic[K]):
    def __init__(
        self,
        resync: Callable[[], Iterable[K]] = lambda: (),
        *,
        name: str = "",
        observer: WorkQueueObserver | None = None,
        resync_seconds: float,  # the owner's resync period (MirrorTimings.resync for mirrors)
        base_delay: float = BASE_DELAY,
        max_delay: float = MAX_DELAY,
        jitter: float = JITTER,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._keys = resync
        self.name = name
        self.observer = observer
        self._queued_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}  # keys being processed, since when
        self.resync_seconds = resync_seconds
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self.clock = clock
        self.rng = rng
        self._ready: dict[K, None] = {}  # FIFO without duplicates
        self._delayed: dict[K, float] = {}  # key -> when it is due
        self._processing: set[K] = set()
        self._dirty: set[K] = set()  # added while being processed
        self._failures: dict[K, int] = {}
        self._next_resync = clock() + resync_seconds
        self._wake = asyncio.Event()

    # ---- adding ----------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        self._delayed.pop(key, None)  # due now: an earlier due time wins
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._ready:
            self._ready[key] = None
            self._wake.set()
            if self.observer is not None:
                self.observer.added()
                self._queued_at[key] = self.clock()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        due = self.clock() + delay
        if key not in self._ready and due < self._delayed.get(key, float("inf")):
            self._delayed[key] = due
            self._wake.set()  # a waiting `get` may need to wake up earlier

    def retry(self, key: K) -> float:
        """Re-add `key` after its backoff; returns the delay."""
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        if self.observer is not None:
            self.observer.retried()
        delay = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1) * (1 + self.jitter * self.rng()))
        self.add_after(key, delay)
        return delay

    def retries(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        """`key` succeeded: its next failure starts the backoff over."""
        self._failures.pop(key, None)

    def resync(self) -> None:
        """Re-add every known key now (e.g. on gaining leadership) and restart the period."""
        for key in self._keys():
            self.add(key)
        self._next_resync = self.clock() + self.resync_seconds

    # ---- taking ----------------------------------------------------------------------------------

    def poll(self) -> K | None:
        """The next key due now (then being processed until `done`), or None. Never waits."""
        now = self.clock()
        if now >= self._next_resync:
            self.resync()
        for key, due in list(self._delayed.items()):
            if due <= now:
                del self._delayed[key]
                self.add(key)
        if not self._ready:
            return None
        key = next(iter(self._ready))
        del self._ready[key]
        self._processing.add(key)
        if self.observer is not None:
            self._started_at[key] = now
            self.observer.taken(now - self._queued_at.pop(key, now))
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None and self.observer is not None:
            self.observer.finished(self.clock() - started)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def next_due(self) -> float:
        """Seconds until a delayed key or the resync is due (0: something is ready)."""
        if self._ready:
            return 0.0
        due = min([self._next_resync, *self._delayed.values()])
        return max(0.0, due - self.clock())

    async def get(self) -> K:
        """Wait for the next key; the caller must call `done(key)` afterwards."""
        while True:
            self._wake.clear()
            key = self.poll()
            if key is not None:
                return key
            with contextlib.suppress(TimeoutError):  # a delayed key or the resync is due
                await asyncio.wait_for(self._wake.wait(), timeout=self.next_due())

    def __len__(self) -> int:
        return len(self._ready)

    def work_in_progress(self) -> list[float]:
        """Seconds each key being processed has been (with an observer)."""
        now = self.clock()
        return [now - started for started in self._started_at.values()]
