"""Event recorder decisions: keying, aggregation into series, rate limits and bodies.

Only the synchronous half is exercised (what gets queued); nothing talks to a server.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from policy_scheduler.kube import event_objects, events
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.scheduler import model
from tests.fakeclock import FakeClock
from tests.no_api import NO_API

POD = ObjectRef("Pod", "web-1", "ns", "u1")
OTHER = ObjectRef("Pod", "web-2", "ns", "u2")


def recorder(clock: FakeClock, **timings: Any) -> EventRecorder:
    return EventRecorder(
        NO_API, instance="test-1", clock=clock, timings=dataclasses.replace(DEFAULTS.events, **timings)
    )


def queued(rec: EventRecorder) -> list[str]:
    out = []
    while not rec._queue.empty():
        out.append(rec._queue.get_nowait().kind)
    return out


def test_event_key_distinguishes_fields() -> None:
    base = events.event_key(POD, None, "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert base == events.event_key(POD, None, "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert base != events.event_key(OTHER, None, "Warning", "FailedScheduling", "Scheduling", "no nodes")
    assert base != events.event_key(POD, None, "Warning", "FailedScheduling", "Scheduling", "other")
    assert base != events.event_key(POD, None, "Normal", "Scheduled", "Binding", "no nodes")
    assert base != events.event_key(POD, OTHER, "Warning", "FailedScheduling", "Scheduling", "no nodes")


def test_identity_falls_back_to_name() -> None:
    assert ObjectRef("Pod", "a", "ns").identity == "Pod/ns/a"
    assert POD.identity == "u1"


def test_micro_time() -> None:
    assert event_objects.micro_time(0.25) == "1970-01-01T00:00:00.250000Z"


def test_truncate_note() -> None:
    assert event_objects.truncate_note("short") == "short"
    long = event_objects.truncate_note("é" * 2000)
    assert len(long.encode()) <= event_objects.MAX_NOTE_BYTES
    assert long.endswith("...")


def test_event_body() -> None:
    body = event_objects.event_body(
        name="web-1.abc",
        regarding=POD,
        related=OTHER,
        type_="Normal",
        reason="Preempted",
        action="Preempting",
        note="n",
        now=0.5,
        controller="policy-scheduler",
        instance="i",
    )
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web-1.abc", "namespace": "ns"},
        "eventTime": "1970-01-01T00:00:00.500000Z",
        "reportingController": "policy-scheduler",
        "reportingInstance": "i",
        "action": "Preempting",
        "reason": "Preempted",
        "note": "n",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": "ns", "uid": "u1"},
        "related": {"apiVersion": "v1", "kind": "Pod", "name": "web-2", "namespace": "ns", "uid": "u2"},
    }


def test_cluster_scoped_object_events_go_to_default() -> None:
    node = ObjectRef("Node", "n1")
    body = event_objects.event_body(
        name="n1.1",
        regarding=node,
        related=None,
        type_="Normal",
        reason="R",
        action="A",
        note="",
        now=0,
        controller="c",
        instance="i",
    )
    assert body["metadata"]["namespace"] == "default"
    assert "namespace" not in body["regarding"]
    assert "related" not in body


def test_series_patch() -> None:
    assert events.series_patch(3, 0.0) == {
        "series": {"count": 3, "lastObservedTime": "1970-01-01T00:00:00.000000Z"}
    }


def test_repeats_become_a_series() -> None:
    clock = FakeClock()
    rec = recorder(clock)
    for _ in range(5):
        rec.failed_scheduling(POD, "0/3 nodes are available")
        clock.advance(1)
    # One create, one patch when the series starts; later repeats only count.
    assert queued(rec) == ["create", "patch"]
    [series] = rec._series.values()
    assert series.count == 5
    assert series.dirty
    assert series.last_observed == 1_004.0
    rec.flush()
    assert queued(rec) == ["patch"]
    assert not series.dirty


def test_different_note_is_a_new_event() -> None:
    rec = recorder(FakeClock())
    rec.failed_scheduling(POD, "a")
    rec.failed_scheduling(POD, "b")
    rec.scheduled(POD, "n1")
    assert queued(rec) == ["create", "create", "create"]
    notes = sorted(s.body["note"] for s in rec._series.values())
    assert notes == ["Successfully assigned ns/web-1 to n1", "a", "b"]


def test_series_window_expires() -> None:
    clock = FakeClock()
    rec = recorder(clock, series_window=60.0)
    rec.failed_scheduling(POD, "a")
    clock.advance(61)
    rec.failed_scheduling(POD, "a")
    assert queued(rec) == ["create", "create"]
    clock.advance(61)
    rec.flush()
    assert rec._series == {}


def test_global_rate_limit_queues_rather_than_drops() -> None:
    rec = recorder(FakeClock(), qps=1.0, burst=3)
    for i in range(5):
        rec.failed_scheduling(ObjectRef("Pod", f"p{i}", "ns", f"u{i}"), "x")
    assert queued(rec) == ["create"] * 5
    assert rec.dropped == 0


class FakeServer:
    """Stands in for `request`: records when each write was made, answers 201, and can hold
    writes until the test releases them."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.writes: list[tuple[float, str, str]] = []  # (time, method, event name)
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = asyncio.Event()
        self.release.set()
        self.arrived = asyncio.Condition()

    async def __call__(self, api: Any, method: str, path: str, **options: Any) -> tuple[int, bytes]:
        body = options["body"]
        name = body["metadata"]["name"] if method == "POST" else path.rsplit("/", 1)[1]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.writes.append((self.clock(), method, name))
        try:
            async with self.arrived:
                self.arrived.notify_all()
            await self.release.wait()
        finally:
            self.in_flight -= 1
        return 201, b"{}"


def writing_recorder(
    clock: FakeClock, server: FakeServer, monkeypatch: pytest.MonkeyPatch, **timings: Any
) -> EventRecorder:
    monkeypatch.setattr(events, "request", server)
    return EventRecorder(
        NO_API,
        instance="test-1",
        clock=clock,
        sleep=clock.sleep,
        timings=dataclasses.replace(DEFAULTS.events, flush_interval=3600.0, **timings),
    )


async def test_writes_wait_for_the_rate_and_none_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    server = FakeServer(clock)
    rec = writing_recorder(clock, server, monkeypatch, qps=2.0, burst=3, writers=4)
    start = clock()
    for i in range(7):
        rec.scheduled(ObjectRef("Pod", f"p{i}", "ns", f"u{i}"), "n1")
    rec.start()
    try:
        await rec.drain()
    finally:
        await rec.stop()
    times = [at - start for at, _, _ in server.writes]
    assert times == pytest.approx([0, 0, 0, 0.5, 1.0, 1.5, 2.0])  # the burst, then 2 per second
    assert (rec.written, rec.dropped, rec.failed) == (7, 0, 0)


async def test_writers_run_in_parallel_but_one_write_per_series(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    server = FakeServer(clock)
    server.release.clear()  # every write hangs until released
    rec = writing_recorder(clock, server, monkeypatch, writers=4)
    rec.failed_scheduling(POD, "a")
    rec.failed_scheduling(POD, "a")  # the series starts: a patch queued behind the create
    for i in range(3):
        rec.scheduled(ObjectRef("Pod", f"p{i}", "ns", f"u{i}"), "n1")
    rec.start()
    try:
        async with server.arrived:
            # bounded, so that a writer pool that never runs four writes fails instead of hanging
            await asyncio.wait_for(server.arrived.wait_for(lambda: len(server.writes) >= 4), 10)
        # The patch did not overtake the create still in flight: it waits for the flush.
        assert [method for _, method, _ in server.writes] == ["POST"] * 4
        assert server.most_in_flight == 4
        [series] = [s for s in rec._series.values() if s.body["reason"] == "FailedScheduling"]
        assert series.dirty
        server.release.set()
        await rec.drain()
        rec.flush()
        await rec.drain()
    finally:
        await rec.stop()
    assert [method for _, method, name in server.writes if name == series.name] == ["POST", "PATCH"]


def test_per_object_cap() -> None:
    clock = FakeClock()
    rec = recorder(clock, per_object_burst=2, per_object_qps=0.01)
    for i in range(4):
        rec.failed_scheduling(POD, f"note {i}")
    rec.failed_scheduling(OTHER, "note")
    assert queued(rec) == ["create"] * 3
    assert rec.dropped == 2
    clock.advance(100)  # one token back
    rec.failed_scheduling(POD, "later")
    assert queued(rec) == ["create"]


def test_full_queue_drops() -> None:
    rec = recorder(FakeClock(), queue_size=2)
    for i in range(3):
        rec.failed_scheduling(POD, f"n{i}")
    assert rec.dropped == 1
    assert len(rec._series) == 2


def test_event_names_are_unique() -> None:
    rec = recorder(FakeClock())
    names = {rec._event_name("web-1") for _ in range(100)}
    assert len(names) == 100
    assert all(n.startswith("web-1.") for n in names)


def test_helpers_reasons_and_actions() -> None:
    rec = recorder(FakeClock())
    pod = model.Pod("web-1", "ns", uid="u1")
    victim = model.Pod("old", "ns", uid="u9")
    rec.scheduled(pod, "n1")
    rec.failed_scheduling(pod, "nope")
    rec.preempted(victim, pod, "n1")
    got = sorted(
        (s.body["type"], s.body["reason"], s.body["action"], s.body["note"]) for s in rec._series.values()
    )
    assert got == [
        ("Normal", "Preempted", "Preempting", "Preempted by pod u1 on node n1"),
        ("Normal", "Scheduled", "Binding", "Successfully assigned ns/web-1 to n1"),
        ("Warning", "FailedScheduling", "Scheduling", "nope"),
    ]


@pytest.mark.parametrize("count", [2, 3])
def test_series_start_is_queued_at_once_later_repeats_wait_for_the_flush(count: int) -> None:
    clock = FakeClock()
    rec = recorder(clock, qps=0.001, burst=1)
    for _ in range(count):
        rec.failed_scheduling(POD, "a")
    # The rate delays writes, it does not hold the series' first patch back.
    assert queued(rec) == ["create", "patch"]
    [series] = rec._series.values()
    assert series.dirty == (count > 2)
    assert series.count == count


def test_scheduling_events_report_the_profile_and_the_replica() -> None:
    """kube-scheduler records through one recorder per profile: reportingController is the
    schedulerName, reportingInstance "<schedulerName>-<hostname>" (client-go's events); ours has
    the replica's identity in the hostname's place, so two replicas on one host differ."""
    from policy_scheduler.scheduler.model import Pod

    recorders = [EventRecorder(NO_API, instance=f"host-a_{n}") for n in ("uuid-1", "uuid-2")]
    pod = Pod("web", uid="u1", scheduler_name="binpack")
    for recorder in recorders:
        recorder.failed_scheduling(pod, "0/3 nodes are available")
        recorder.scheduled(pod, "n1")
    bodies = [[series.body for series in recorder._series.values()] for recorder in recorders]
    assert {b["reportingController"] for b in bodies[0] + bodies[1]} == {"binpack"}
    assert {b["reportingInstance"] for b in bodies[0]} == {"binpack-host-a_uuid-1"}
    assert {b["reportingInstance"] for b in bodies[1]} == {"binpack-host-a_uuid-2"}
    # Our own events (e.g. about policies) report as the operator, by the same replica.
    recorder = recorders[0]
    recorder.event(ObjectRef("Pod", "x", "ns", "u2"), "Normal", "R", "A", "note")
    last = recorder._series[next(reversed(recorder._series))].body
    assert (last["reportingController"], last["reportingInstance"]) == (
        "policy-scheduler",
        "policy-scheduler-host-a_uuid-1",
    )


def test_reporting_instance_fits_the_api_limit_and_keeps_the_uuid() -> None:
    identity = "h" * 63 + "_0b7c2d52-8f5e-4d0a-9f3e-2a6f1c9d8e7f"
    instance = event_objects.reporting_instance("s" * 63, identity)
    assert len(instance) == event_objects.MAX_REPORTING_INSTANCE
    assert instance.startswith("s" * 63 + "-h")
    assert instance.endswith("_0b7c2d52-8f5e-4d0a-9f3e-2a6f1c9d8e7f")
    assert event_objects.reporting_instance("policy-scheduler", "host_1") == "policy-scheduler-host_1"
