"""A preemptor's nomination: waiting until the reporter's write shows, and clearing it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from policy_scheduler.kube.eviction.api import API_FAILURES
from policy_scheduler.kube.eviction.job import Job
from policy_scheduler.kube.fence import Fence, NotLeading
from policy_scheduler.kube.podstatus import set_nominated_node
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


class Nominations:
    def __init__(
        self,
        api: ApiClient,
        *,
        pod_lookup: Callable[[str], Pod | None],
        fence: Fence,
        clock: Callable[[], float],
        settle: float,
        poll: float,
    ) -> None:
        self.api = api
        self.pod_lookup = pod_lookup
        self.fence = fence
        self.clock = clock
        self.settle = settle
        self.poll = poll

    async def visible(self, job: Job, *, newer: bool = False) -> bool:
        """Wait (bounded) until our pod cache shows the nomination the reporter writes; False
        when the preemptor is gone or bound meanwhile. `newer`: only a version written after
        the cycle that submitted the job counts (an older write may show the same node).

        Both callers need that write to have landed: a retry that does not see its nomination
        would preempt again instead of waiting for its terminating victims, and a clear written
        before it would be undone by it."""
        deadline = self.clock() + self.settle
        submitted = job.preemptor.resource_version
        while True:
            current = self.pod_lookup(job.preemptor.key)
            if current is None or current.uid != job.preemptor.uid or current.node_name:
                return False
            landed = current.nominated_node_name == job.node and (
                not newer or not submitted or current.resource_version != submitted
            )
            if landed or self.clock() >= deadline:
                return True
            await asyncio.sleep(self.poll)

    async def clear(self, job: Job) -> None:
        if not await self.visible(job, newer=True) or not self.fence.may_act():
            return
        preemptor = job.preemptor
        try:
            await set_nominated_node(self.api, preemptor.namespace, preemptor.name, "", fence=self.fence)
        except NotLeading:
            log.debug("nomination not cleared: not the leader now", extra={"pod": preemptor.key})
        except API_FAILURES as exc:
            log.warning("cannot clear nomination", extra={"pod": preemptor.key, "error": str(exc)})
