"""Batched status writes for our custom resources.

Callers set the desired status of an object whenever they like; a flusher writes at most one
merge patch per object per interval, so a busy scheduler costs a few writes a second, not one
per pod.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from policy_scheduler.config import DEFAULTS
from policy_scheduler.kube.client import CONNECTION_ERRORS, MERGE_PATCH, ApiError, request
from policy_scheduler.policy.constants import GROUP, VERSION

log = logging.getLogger(__name__)


class StatusWriter:
    def __init__(
        self,
        api: Any,
        *,
        interval: float = DEFAULTS.status_interval,
        is_leader: Callable[[], bool] = lambda: True,
    ) -> None:
        self.api = api
        self.interval = interval
        self.is_leader = is_leader
        self._desired: dict[tuple[str, str], dict[str, Any]] = {}
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        self.writes = 0

    def set(self, plural: str, name: str, status: dict[str, Any]) -> None:
        self._desired[(plural, name)] = status

    def forget(self, plural: str, name: str) -> None:
        self._desired.pop((plural, name), None)
        self._written.pop((plural, name), None)

    async def flush(self) -> None:
        if not self.is_leader():
            return
        for key, status in list(self._desired.items()):
            if self._written.get(key) == status:
                continue
            plural, name = key
            path = f"/apis/{GROUP}/{VERSION}/{plural}/{quote(name, safe='')}/status"
            try:
                code, body = await request(
                    self.api, "PATCH", path, body={"status": status}, content_type=MERGE_PATCH
                )
            except CONNECTION_ERRORS as exc:
                log.warning("status write failed", extra={"object": f"{plural}/{name}", "error": str(exc)})
                continue
            if code == 404:
                self.forget(plural, name)
                continue
            if not 200 <= code < 300:
                error = ApiError.from_response(code, body)
                log.warning("status write refused", extra={"object": f"{plural}/{name}", "error": str(error)})
                continue
            self.writes += 1
            self._written[key] = status

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.flush()
