"""Concurrency that starts small and grows by one with each request that succeeds (TCP's slow start).

At start the request pool has no connection. A burst of binds would open all of them at once,
each with a TLS handshake on both sides of a machine that is busy with start-up, and the first
bind would wait in that line: 0.06-0.5 s from its POST to its answer at 5000 nodes (issue 12).
Starting with a few requests in flight and adding one per successful request doubles the
concurrency with each round trip, so the pool fills within a few round trips, the first
requests leave on the first connections, and later ones reuse them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class SlowStart:
    def __init__(self, initial: int, limit: int) -> None:
        if initial < 1 or limit < initial:
            raise ValueError(f"slow start needs 1 <= initial <= limit, got {initial} and {limit}")
        self.capacity = initial
        self.limit = limit
        self._slots = asyncio.Semaphore(initial)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the requests in flight for the block's duration."""
        async with self._slots:
            yield
        if self.capacity < self.limit:
            self.capacity += 1
            self._slots.release()
