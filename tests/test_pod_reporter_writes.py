"""PodReporter's status writes: one write in flight per pod, newer statuses coalesce behind it.

Two writers on the same pod at once (a new failure while the last write was still retrying)
doubled the write rate in a 5xx storm and could land the older status last."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest.mock import Mock

import pytest

from policy_scheduler.kube import pod_reporter
from policy_scheduler.kube.pod_reporter import PodReporter
from tests.builders import make_pod


class SlowWrites:
    """Stands in for set_unschedulable_condition: each write waits until released."""

    def __init__(self) -> None:
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.landed: list[tuple[str, str]] = []  # (pod, message) in the order writes finished
        self.release = asyncio.Event()

    async def __call__(self, api: Any, namespace: str, name: str, *, message: str, **_: Any) -> None:
        self.in_flight[name] = self.in_flight.get(name, 0) + 1
        self.peak[name] = max(self.peak.get(name, 0), self.in_flight[name])
        try:
            await self.release.wait()
            self.landed.append((name, message))
        finally:
            self.in_flight[name] -= 1


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_pod_has_one_write_in_flight_and_its_newest_status_lands_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes = SlowWrites()
    monkeypatch.setattr(pod_reporter, "set_unschedulable_condition", writes)
    reporter = PodReporter(None, Mock(), writers=4)
    reporter.start()
    try:
        a, b = make_pod("a"), make_pod("b")
        reporter.failed(a, "Unschedulable", "first", None, None)
        await settle()
        assert writes.in_flight == {"a": 1}
        reporter.failed(a, "Unschedulable", "second", None, None)
        reporter.failed(a, "Unschedulable", "third", None, None)  # coalesces with "second"
        reporter.failed(b, "Unschedulable", "other pod", None, None)
        await settle()
        assert writes.in_flight == {"a": 1, "b": 1}  # b is not held up by a
        writes.release.set()
        for _ in range(10):
            await settle()
        assert writes.peak == {"a": 1, "b": 1}
        assert [m for pod, m in writes.landed if pod == "a"] == ["first", "third"]
        assert ("b", "other pod") in writes.landed
    finally:
        await reporter.stop()
