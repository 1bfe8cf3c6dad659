"""PodReporter's status writes: one write in flight per pod, newer statuses coalesce behind it.

Two writers on the same pod at once (a new failure while the last write was still retrying)
doubled the write rate in a 5xx storm and could land the older status last."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any
from unittest.mock import Mock

import pytest

from policy_scheduler.kube import pod_reporter, podstatus
from policy_scheduler.kube.client import ApiError
from policy_scheduler.kube.pod_reporter import PodReporter
from policy_scheduler.scheduler.model import Pod
from tests.builders import make_pod
from tests.fence import SwitchFence
from tests.no_api import NO_API


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
    reporter = PodReporter(NO_API, Mock(), writers=4)
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


class Patches:
    """Stands in for podstatus.patch_status: records bodies; `refuse` makes the next one fail."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.refuse = False
        self.hold: asyncio.Event | None = None  # when set, writes wait for it

    async def __call__(
        self, api: Any, namespace: str, name: str, body: dict[str, Any], *, fence: Any = None
    ) -> bool:
        if self.hold is not None:
            await self.hold.wait()
        if fence is not None:  # as client.call: a refused write never goes out
            fence.check()
        if self.refuse:
            self.refuse = False
            raise ApiError(503, "ServiceUnavailable", "try again")
        self.bodies.append(body)
        return True


async def drain(reporter: PodReporter) -> None:
    for _ in range(10):
        await settle()
    assert not reporter._pending
    assert not reporter._writing


@pytest.fixture
async def patched(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[PodReporter, Patches]]:
    patches = Patches()
    monkeypatch.setattr(podstatus, "patch_status", patches)
    reporter = PodReporter(NO_API, Mock(), writers=2)
    reporter.start()
    yield reporter, patches
    await reporter.stop()


async def fail(reporter: PodReporter, pod: Pod, message: str, nominated: str | None = None) -> None:
    """The pod's attempt failed as Unschedulable with `message`; its status writes are done."""
    reporter.failed(pod, "Unschedulable", message, nominated, None)
    await drain(reporter)


def showing(message: str, **fields: Any) -> Pod:
    """A pending pod whose status already says PodScheduled=False, Unschedulable, `message`."""
    return make_pod("p", scheduled_condition=("False", "Unschedulable", message), **fields)


async def test_a_verdict_the_pod_already_shows_is_not_written_again(
    patched: tuple[PodReporter, Patches],
) -> None:
    reporter, patches = patched
    await fail(reporter, showing("0/3 nodes are available"), "0/3 nodes are available")
    assert patches.bodies == []
    await fail(reporter, showing("0/3 nodes are available"), "0/4 nodes are available")
    (body,) = patches.bodies
    assert body["status"]["conditions"][0]["message"] == "0/4 nodes are available"
    assert "lastTransitionTime" not in body["status"]["conditions"][0]  # it was False already


async def test_a_pod_without_the_condition_gets_it_with_a_transition_time(
    patched: tuple[PodReporter, Patches],
) -> None:
    reporter, patches = patched
    await fail(reporter, make_pod("p"), "0/3 nodes are available")
    (body,) = patches.bodies
    assert "lastTransitionTime" in body["status"]["conditions"][0]


async def test_the_pod_as_last_seen_is_not_trusted_over_a_newer_write_of_ours(
    patched: tuple[PodReporter, Patches],
) -> None:
    """The watch has not shown our write of B yet: a failure with A again must write A back."""
    reporter, patches = patched
    await fail(reporter, showing("A"), "B")
    await fail(reporter, showing("A"), "A")
    assert [b["status"]["conditions"][0]["message"] for b in patches.bodies] == ["B", "A"]
    await fail(reporter, showing("A"), "A")  # now both agree
    assert len(patches.bodies) == 2


async def test_after_a_failed_write_the_verdict_is_written_even_if_the_pod_seems_to_show_it(
    patched: tuple[PodReporter, Patches],
) -> None:
    """A refused or lost write may or may not have landed; the next failure writes regardless."""
    reporter, patches = patched
    patches.refuse = True
    await fail(reporter, showing("A"), "B")
    assert patches.bodies == []
    await fail(reporter, showing("B"), "B")
    assert len(patches.bodies) == 1


async def test_a_nomination_the_pod_already_has_is_not_written_again(
    patched: tuple[PodReporter, Patches],
) -> None:
    reporter, patches = patched
    await fail(reporter, showing("A", nominated_node_name="n1"), "A", "n1")
    assert patches.bodies == []
    await fail(reporter, showing("A", nominated_node_name="n1"), "A", "n2")
    (body,) = patches.bodies
    assert body["status"]["nominatedNodeName"] == "n2"


async def test_a_pod_gone_while_its_write_was_in_flight_leaves_nothing_behind(
    patched: tuple[PodReporter, Patches],
) -> None:
    reporter, patches = patched
    pod = showing("A")
    patches.hold = asyncio.Event()
    reporter.failed(pod, "Unschedulable", "B", None, None)
    await settle()
    assert reporter._writing == {pod.key}  # the write is under way: gone before it is answered
    reporter.pod_gone(pod)
    patches.hold.set()
    await drain(reporter)
    assert len(patches.bodies) == 1
    assert reporter._written == {}


async def test_a_status_write_the_fence_refuses_is_dropped_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    patches = Patches()
    patches.hold = asyncio.Event()
    monkeypatch.setattr(podstatus, "patch_status", patches)
    fence = SwitchFence()
    reporter = PodReporter(NO_API, Mock(), writers=1, fence=fence)
    reporter.start()
    try:
        reporter.failed(make_pod("p"), "Unschedulable", "decided while leading", None, None)
        await settle()
        fence.open = False  # the lease lapses while the write waits for its turn
        patches.hold.set()
        await drain(reporter)
        assert patches.bodies == []
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        reporter.failed(make_pod("q"), "Unschedulable", "a standby's verdict", None, None)
        await drain(reporter)
        assert patches.bodies == []  # a standby writes no pod status at all
    finally:
        await reporter.stop()
