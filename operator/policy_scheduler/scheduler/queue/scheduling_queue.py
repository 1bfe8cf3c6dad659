"""The asyncio face of the queue: a pop() that waits for work and the periodic flushers.

All methods must be called from the event loop's thread (the core is not locked).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import TypedDict, Unpack

from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.queue.core import PriorityQueue
from policy_scheduler.scheduler.queue.nominator import PodNominator
from policy_scheduler.scheduler.queue.types import Clock, FrameworkSource

log = logging.getLogger(__name__)

BACKOFF_FLUSH_INTERVAL_SECONDS = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL_SECONDS = 30.0


class QueueOptions(TypedDict, total=False):
    """PriorityQueue's keyword options, passed through unchanged."""

    pod_max_in_unschedulable_pods_seconds: float
    pop_from_backoff: bool
    nominator: PodNominator | None


class QueueClosed(Exception):
    """pop() on a closed queue."""


class SchedulingQueue(PriorityQueue):
    """PriorityQueue plus `await pop()`, `run_flushers()` and `close()`."""

    def __init__(self, frameworks: FrameworkSource, clock: Clock, **options: Unpack[QueueOptions]) -> None:
        super().__init__(frameworks, clock, **options)
        self._work = asyncio.Event()
        self._stopped = asyncio.Event()

    def _broadcast(self) -> None:
        self._work.set()

    async def pop(self) -> QueuedPodInfo:
        """Wait for the next pod to schedule; raises QueueClosed once close() was called."""
        while True:
            if self.closed:
                raise QueueClosed
            info = self.try_pop()
            if info is not None:
                return info
            # No await between the empty check and clear(), so no wake-up can be missed.
            self._work.clear()
            await self._work.wait()

    def close(self) -> None:
        """Stop: wake pop() waiters (they raise QueueClosed), stop the flushers, end in-flight tracking."""
        self.closed = True
        self.active.done_all()
        self._work.set()
        self._stopped.set()

    async def run_flushers(
        self,
        backoff_interval: float = BACKOFF_FLUSH_INTERVAL_SECONDS,
        unschedulable_interval: float = UNSCHEDULABLE_FLUSH_INTERVAL_SECONDS,
    ) -> None:
        """Run until close(): backoffQ -> activeQ every second (first tick aligned to the next whole
        second, the backoff ordering window), leftover unschedulable pods every 30 s."""
        loop = asyncio.get_running_loop()
        now = self.clock()
        first_delay = backoff_interval
        if self.pop_from_backoff:  # align the ticks with the 1 s backoff ordering window
            first_delay = min(first_delay, math.floor(now) + 1 - now)
        next_backoff = loop.time() + first_delay
        next_unschedulable = loop.time() + unschedulable_interval
        while not self.closed:
            delay = max(0.0, min(next_backoff, next_unschedulable) - loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), delay)
            if self.closed:
                return
            current = loop.time()
            if current >= next_backoff:
                self._guarded(self.flush_backoff_completed)
                missed = math.floor((current - next_backoff) / backoff_interval)
                next_backoff += backoff_interval * (missed + 1)
            if current >= next_unschedulable:
                self._guarded(self.flush_unschedulable_leftover)
                next_unschedulable = current + unschedulable_interval

    @staticmethod
    def _guarded(flush: Callable[[], None]) -> None:
        try:
            flush()
        except Exception:
            log.exception("scheduling queue flush failed")
