"""Leader election with a coordination.k8s.io Lease (kubernetes-asyncio's LeaseLock).

Only the leader schedules, evicts and writes status. `is_leader()` turns false the moment a
renewal fails, so scheduling stops at once; standbys keep their caches warm meanwhile.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

from policy_scheduler.kube.timings import DEFAULTS, LeaderTimings
from policy_scheduler.observability import metrics

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


class LeaderElector:
    def __init__(
        self,
        api: Any,
        *,
        namespace: str,
        name: str,
        identity: str | None = None,
        timings: LeaderTimings = DEFAULTS.leader,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.timings = timings
        self.on_change = on_change
        self._leading = False
        self._term = 0  # bumped whenever an election ends, so a late start of an old term is void
        self.became_leader = asyncio.Event()

    def is_leader(self) -> bool:
        return self._leading

    @property
    def term(self) -> int:
        """Constant while one period of leadership lasts; a new one has another value."""
        return self._term

    def _set(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        metrics.is_leader.set(1 if leading else 0)
        log.info("leadership changed", extra={"leader": leading, "identity": self.identity})
        if leading:
            self.became_leader.set()
        else:
            self.became_leader.clear()
        if self.on_change is not None:
            self.on_change(leading)

    async def _lead(self, term: int) -> None:
        # The library runs this as a task it may never cancel (when a renewal raises), so it
        # must hold nothing: it only marks leadership, and only for the term that started it.
        if term == self._term:
            self._set(True)

    async def _stopped(self) -> None:
        self._set(False)

    async def run(self) -> None:
        lock = LeaseLock(self.name, self.namespace, self.identity, self.api)
        while True:
            self._term += 1
            config = electionconfig.Config(
                lock,
                lease_duration=self.timings.lease_duration,
                renew_deadline=self.timings.renew_deadline,
                retry_period=self.timings.retry_period,
                onstarted_leading=functools.partial(self._lead, self._term),
                onstopped_leading=self._stopped,
            )
            try:
                await leaderelection.LeaderElection(config).run()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # API trouble: stand down and try again
                log.warning("leader election error", extra={"error": str(exc)})
            finally:
                self._term += 1
                self._set(False)
            # As upstream's elector: a fixed retry period, no backoff (its jitter is the lease).
            await asyncio.sleep(self.timings.retry_period)


class AlwaysLeader:
    """--no-leader-elect: a single replica leads unconditionally."""

    def __init__(self) -> None:
        self.became_leader = asyncio.Event()
        self.became_leader.set()
        metrics.is_leader.set(1)

    def is_leader(self) -> bool:
        return True

    @property
    def term(self) -> int:
        return 0

    async def run(self) -> None:
        await asyncio.Event().wait()


class Leadership(Protocol):
    became_leader: asyncio.Event

    def is_leader(self) -> bool: ...

    @property
    def term(self) -> int: ...


class LeadershipGate:
    """Scheduling as a leader whose caches follow the server.

    A leader that lost its lease in an API server outage can get it back before its watches
    have reconnected; its cache then lacks what happened meanwhile (pods bound by the other
    replica, pods deleted), and it would bind pods already bound or overfill nodes.
    kube-scheduler exits on a lost lease and lists everything anew; we stay up as a warm
    standby, so each period of leadership starts only once every cache is current
    (`caches_current`). A standby whose watches never broke starts at once.
    """

    def __init__(self, leader: Leadership, caches_current: Callable[[], Awaitable[object]]) -> None:
        self.leader = leader
        self.caches_current = caches_current
        self._ready_term: int | None = None

    def should_schedule(self) -> bool:
        return self.leader.is_leader() and self._ready_term == self.leader.term

    async def until_ready(self) -> None:
        while not self.should_schedule():
            await self.leader.became_leader.wait()
            term = self.leader.term
            await self.caches_current()
            if self.leader.is_leader() and self.leader.term == term:
                self._ready_term = term
                log.info("leading with current caches", extra={"term": term})
