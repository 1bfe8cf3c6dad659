"""The noop-events contender writes the Scheduled event kube-scheduler and we write per bind."""

from __future__ import annotations

from pathlib import Path

from policy_scheduler.bench_e2e import contenders
from policy_scheduler.bench_e2e.noop_binder import scheduled_event
from policy_scheduler.kube.events import ObjectRef, event_body


def test_the_event_is_the_one_the_schedulers_write() -> None:
    ours = event_body(
        name="web-1.1",
        regarding=ObjectRef("Pod", "web-1", "ns"),
        related=None,
        type_="Normal",
        reason="Scheduled",
        action="Binding",
        note="Successfully assigned ns/web-1 to node-3",
        now=0.0,
        controller="bench-0",
        instance="bench-0-host",
    )
    noop = scheduled_event("bench-0", "ns", "web-1", "node-3")
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
