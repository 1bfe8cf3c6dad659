"""The noop-events contender writes the Scheduled event our EventRecorder writes per bind."""

from __future__ import annotations

from pathlib import Path

from policy_scheduler.bench_e2e import contenders
from policy_scheduler.bench_e2e.noop_binder import scheduled_event
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.events import EventRecorder
from tests.no_api import NO_API


def test_the_event_is_the_one_the_recorder_writes() -> None:
    recorder = EventRecorder(NO_API, instance="unused")
    recorder.scheduled(ObjectRef("Pod", "web-1", "ns"), "node-3")
    [series] = recorder._series.values()
    ours = series.body
    noop = scheduled_event("policy-scheduler", "ns", "web-1", "node-3")
    assert noop.keys() == ours.keys()
    fields = ("apiVersion", "kind", "action", "reason", "note", "type", "reportingController", "regarding")
    assert {k: noop[k] for k in fields} == {k: ours[k] for k in fields}
    assert noop["metadata"]["namespace"] == "ns"
    assert noop["metadata"]["name"].startswith("web-1.")


def test_noop_events_runs_only_when_asked_for() -> None:
    assert contenders.NOOP_EVENTS in contenders.ALL
    assert contenders.NOOP_EVENTS not in contenders.DEFAULT
    argv = contenders.launch(contenders.NOOP_EVENTS, Path("k"), "bench-0", Path(".")).argv
    assert "--events" in argv
    assert "--events" not in contenders.launch(contenders.NOOP, Path("k"), "b", Path(".")).argv
