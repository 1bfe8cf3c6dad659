"""Batched status writes for our custom resources.

Callers set the desired status of an object whenever they like; a flusher writes at most one
merge patch per object per interval, so a busy scheduler costs a few writes a second, not one
per pod. The patch sets the status whole: a merge patch merges objects key by key, so every key
the object holds (as last observed, or as last written) that the new status lacks is removed
explicitly; otherwise a stale key would survive, e.g. in status.lastAcceptedSpec.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from policy_scheduler.kube.client import CONNECTION_ERRORS, MERGE_PATCH, ApiError, request
from policy_scheduler.kube.fence import UNFENCED, Fence, NotLeading
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.policy.constants import GROUP, VERSION

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


class StatusWriter:
    def __init__(
        self,
        api: ApiClient,
        *,
        interval: float = DEFAULTS.status_interval,
        fence: Fence = UNFENCED,
    ) -> None:
        self.api = api
        self.interval = interval
        self.fence = fence  # only the leader writes status
        self._desired: dict[tuple[str, str], dict[str, Any]] = {}
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        self._observed: dict[tuple[str, str], dict[str, Any]] = {}
        self.writes = 0

    def observe(self, plural: str, name: str, status: Any) -> None:
        """The status as a watch event shows it: the keys a write must remove."""
        if isinstance(status, dict):
            self._observed[(plural, name)] = status

    def set(self, plural: str, name: str, status: dict[str, Any]) -> None:
        self._desired[(plural, name)] = status

    def desired(self, plural: str, name: str) -> dict[str, Any]:
        """The status last set for the object (KeyError if none)."""
        return self._desired[(plural, name)]

    def forget(self, plural: str, name: str) -> None:
        self._desired.pop((plural, name), None)
        self._written.pop((plural, name), None)
        self._observed.pop((plural, name), None)

    async def flush(self) -> None:
        if not self.fence.may_act():
            return
        for key, status in list(self._desired.items()):
            if self._written.get(key) == status:
                continue
            plural, name = key
            path = f"/apis/{GROUP}/{VERSION}/{plural}/{quote(name, safe='')}/status"
            patch = replacing_patch(status, self._observed.get(key), self._written.get(key))
            outcome = await patch_status(self.api, path, patch, f"{plural}/{name}", self.fence)
            if outcome == "gone":
                self.forget(plural, name)
            elif outcome == "written":
                self.writes += 1
                self._written[key] = status

    async def run(self) -> None:
        await flush_every(self.interval, self.flush)


Outcome = Literal["written", "gone", "failed"]


async def patch_status(
    api: ApiClient, path: str, status: Any, what: str, fence: Fence, content_type: str = MERGE_PATCH
) -> Outcome:
    """One merge patch of a status subresource; a failure (or a refusal by the fence) is logged
    and left to the next flush."""
    try:
        code, body = await request(
            api, "PATCH", path, body={"status": status}, content_type=content_type, fence=fence
        )
    except NotLeading:
        log.debug("status not written: not the leader now", extra={"object": what})
        return "failed"
    except CONNECTION_ERRORS as exc:
        log.warning("status write failed", extra={"object": what, "error": str(exc)})
        return "failed"
    if code == 404:
        return "gone"
    if not 200 <= code < 300:
        error = ApiError.from_response(code, body)
        log.warning("status write refused", extra={"object": what, "error": str(error)})
        return "failed"
    return "written"


async def flush_every(interval: float, flush: Callable[[], Awaitable[None]]) -> None:
    while True:
        await asyncio.sleep(interval)
        await flush()


def replacing_patch(new: Any, *olds: Any) -> Any:
    """A JSON merge patch (RFC 7396) that sets `new` whole over any of `olds`: keys of an old
    object that `new` lacks become null, at every level; lists and scalars are replaced."""
    if not isinstance(new, dict):
        return new
    dicts = [old for old in olds if isinstance(old, dict)]
    patch: dict[str, Any] = {key: None for old in dicts for key in old if key not in new}
    for key, value in new.items():
        patch[key] = replacing_patch(value, *(old.get(key) for old in dicts))
    return patch
