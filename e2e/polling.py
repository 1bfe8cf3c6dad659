"""The one way e2e tests wait for the cluster: poll a check until it holds, or sample that it keeps holding."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.5) -> T:
    """Poll until `check` returns something truthy and return it; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@overload
async def wait_until_async(
    what: str, check: Callable[[], Awaitable[T | None]], within: float = ..., interval: float = ...
) -> T: ...
@overload
async def wait_until_async(
    what: str, check: Callable[[], T | None], within: float = ..., interval: float = ...
) -> T: ...
async def wait_until_async(
    what: str,
    check: Callable[[], Awaitable[T | None]] | Callable[[], T | None],
    within: float = 30.0,
    interval: float = 0.2,
) -> T:
    """`wait_until` for async tests; `check` may be a coroutine function."""
    deadline = time.monotonic() + within
    last: T | None = None
    while time.monotonic() < deadline:
        result = check()
        last = await result if inspect.isawaitable(result) else result
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {within:.0f}s waiting for {what} (last: {last!r})")


def holds_for(what: str, check: Callable[[], bool], seconds: float, interval: float = 0.5) -> None:
    """`check` holds at every sample for `seconds` (it may assert itself, for a precise message)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), what
        time.sleep(interval)
