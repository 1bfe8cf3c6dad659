"""Waiting in async unit tests without fixed wall-clock sleeps."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def settle(rounds: int = 20) -> None:
    """Give the event loop `rounds` turns so every ready task runs until it blocks; no time passes."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def eventually(
    predicate: Callable[[], bool], *, within: float = 5.0, interval: float = 0.005, message: str = ""
) -> None:
    """Poll until `predicate()` holds (for code driven by the loop's own timers); fail after `within` s."""
    try:
        async with asyncio.timeout(within):
            # Polling is the point: the predicate reads state that no event announces.
            while not predicate():  # noqa: ASYNC110
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(message or f"not true within {within}s") from None
