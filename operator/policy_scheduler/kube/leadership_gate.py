"""The gate the scheduling loop passes each period of leadership: it opens once the caches have
caught up with the Lease write that began the period (kube/leader.py holds the election)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

log = logging.getLogger(__name__)


class Leadership(Protocol):
    became_leader: asyncio.Event
    lease_version: int

    def is_leader(self) -> bool: ...

    @property
    def term(self) -> int: ...


class LeadershipGate:
    """Scheduling as a leader whose caches include everything written before its term began.

    A replica that takes the Lease, or renews it after a pause, may hold caches that lack writes
    of the previous leader (pods it bound, victims it evicted): scheduling from them would bind
    pods twice or overfill nodes. kube-scheduler exits on a lost lease and lists everything
    anew; we stay up as a warm standby, so each term starts only once `catch_up(version)` has
    returned: every essential informer has seen the term's Lease write's resourceVersion (by
    events, a bookmark or a consistent list), and every watch is open.
    """

    def __init__(self, leader: Leadership, catch_up: Callable[[int], Awaitable[object]]) -> None:
        self.leader = leader
        self.catch_up = catch_up
        self._ready_term: int | None = None

    def should_schedule(self) -> bool:
        return self._ready_term == self.leader.term and self.leader.is_leader()

    async def until_ready(self) -> None:
        while not self.should_schedule():
            await self.leader.became_leader.wait()
            term, version = self.leader.term, self.leader.lease_version
            started = time.monotonic()
            await self.catch_up(version)
            if self.leader.is_leader() and self.leader.term == term:
                self._ready_term = term
                log.info(
                    "leading with caches caught up",
                    extra={
                        "term": term,
                        "resource_version": version,
                        "catch_up_s": round(time.monotonic() - started, 3),
                    },
                )
