"""The API server's version (GET /version), read at start and again while the operator runs.

An upgraded control plane changes the answer; during a rolling upgrade of several API servers
the answer may alternate between two versions, so a new version counts only once it was read
`confirmations` times in a row. Which semantics follow from it is the core's decision
(scheduler/versioning/semantics.py); this module only reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, call
from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

VERSION_PATH = "/version"


@dataclass(frozen=True, slots=True)
class ServerVersionTimings:
    # An upgrade is noticed within about interval x confirmations.
    interval: float = 60.0
    confirmations: int = 2
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(initial=0.5, cap=5.0, max_attempts=4))


class _Info(msgspec.Struct):
    gitVersion: str = ""


async def read_server_version(api: ApiClient, retry: RetryPolicy) -> str:
    """The API server's gitVersion (e.g. "v1.37.2"); ApiError when it cannot be read."""

    async def once() -> Answer:
        return await call(api, "GET", VERSION_PATH)

    try:
        answer = await with_retries(once, retry, connection_errors=CONNECTION_ERRORS, what="get /version")
    except CONNECTION_ERRORS as exc:
        raise ApiError(0, type(exc).__name__, str(exc)) from exc
    if not 200 <= answer.status < 300:
        raise ApiError.from_answer(answer)
    version = git_version(answer.body)
    if version is None:
        raise ApiError(answer.status, "BadVersion", f"/version has no gitVersion: {answer.body[:200]!r}")
    return version


def git_version(body: bytes) -> str | None:
    """The gitVersion of a /version answer; None when there is none."""
    try:
        info = msgspec.json.decode(body, type=_Info)
    except msgspec.DecodeError:
        return None
    return info.gitVersion or None


# on_version(gitVersion or None, why it is None)
OnVersion = Callable[[str | None, str], None]


class ServerVersionWatch:
    """Reads /version at start (`initial`) and every interval (`run`); tells `on_version` the
    first answer and every confirmed change."""

    def __init__(
        self, api: ApiClient, on_version: OnVersion, timings: ServerVersionTimings | None = None
    ) -> None:
        self.api = api
        self.on_version = on_version
        self.timings = timings or ServerVersionTimings()
        self.current: str | None = None
        self._candidate: str | None = None
        self._seen = 0

    async def _read(self) -> tuple[str | None, str]:
        try:
            return await read_server_version(self.api, self.timings.retry), ""
        except ApiError as exc:
            return None, str(exc)

    async def initial(self) -> None:
        version, why = await self._read()
        self.current = version
        if version is None:
            log.warning("the API server's version could not be read", extra={"error": why})
        self.on_version(version, why)

    def observe(self, version: str | None) -> bool:
        """One periodic answer; True when it confirms a change (then `current` is it). A failed
        read changes nothing: the version last known stays."""
        if version is None or version == self.current:
            self._candidate, self._seen = None, 0
            return False
        if version != self._candidate:
            self._candidate, self._seen = version, 0
        self._seen += 1
        # Nothing was known (the first read failed): the first answer counts at once.
        if self.current is not None and self._seen < self.timings.confirmations:
            return False
        self.current, self._candidate, self._seen = version, None, 0
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.timings.interval)
            version, why = await self._read()
            if version is None:
                log.debug("re-reading the API server's version failed", extra={"error": why})
            if self.observe(version):
                log.info("the API server's version changed", extra={"version": version})
                self.on_version(version, "")
