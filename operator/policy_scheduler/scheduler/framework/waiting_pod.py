"""Pods held at Permit (upstream's waitingPod): allowed or rejected by plugin, or timed out."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.scheduler.framework.durations import go_duration
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Pod

MAX_PERMIT_WAIT_SECONDS = 15 * 60.0  # upstream's maxTimeout for Permit waits


@dataclass(slots=True)
class WaitingPod:
    """A pod held at Permit; plugins allow or reject it by name, or their timeout rejects it."""

    pod: Pod
    deadlines: dict[str, float]
    result: asyncio.Future[Status] | None = None
    waits: dict[str, float] = field(default_factory=dict)  # plugin -> wait in seconds, for messages
    outcome: Status | None = None

    def allow(self, plugin: str) -> None:
        self.deadlines.pop(plugin, None)
        if not self.deadlines:
            self._finish(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _finish(self, status: Status) -> None:
        if self.outcome is not None:
            return
        self.outcome = status
        if self.result is not None and not self.result.done():
            self.result.set_result(status)

    async def wait(self, clock: Any = time.monotonic) -> Status:
        if self.outcome is not None:
            return self.outcome
        self.result = asyncio.get_running_loop().create_future()
        while self.outcome is None:
            deadline = min(self.deadlines.values())
            try:
                return await asyncio.wait_for(asyncio.shield(self.result), max(0.0, deadline - clock()))
            except TimeoutError:
                self.expire(clock())
        return self.outcome

    def expire(self, now: float) -> None:
        """Reject the pod if a plugin's wait is over at `now`."""
        for plugin, deadline in list(self.deadlines.items()):
            if self.outcome is None and now >= deadline:
                waited = go_duration(self.waits.get(plugin, 0.0))
                self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")
