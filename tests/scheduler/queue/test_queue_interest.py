"""The queue's isEventOfInterest cache: cached per framework mapping, never stale after a
profile change."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.model import Node
from policy_scheduler.scheduler.queue import hints, profile_hints
from tests.scheduler.queue.test_queue import (
    NODE_ADD,
    StubFramework,
    make_queue,
    queue_hint,
    unschedulable_pod,
)


def test_interest_is_computed_once_per_event_and_framework_set(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    real = hints.is_event_of_interest

    def counting(event: object, maps: object) -> bool:
        calls.append(event)
        return real(event, maps)  # type: ignore[arg-type]

    monkeypatch.setattr(profile_hints, "is_event_of_interest", counting)
    q, clock = make_queue()
    info = unschedulable_pod(q, "p", "P")
    for _ in range(3):
        q.node_added(Node("n"))
    assert calls == [NODE_ADD]  # nobody registered Node/Add: asked once, answered from the cache
    assert q.where(info.pod) == "unschedulable"

    # A new framework mapping that registers the event is seen at once.
    q._frameworks = {
        "default-scheduler": StubFramework(events={"P": [ClusterEventWithHint(NODE_ADD, queue_hint)]})
    }
    clock.advance(20)
    q.node_added(Node("n2"))
    assert calls == [NODE_ADD, NODE_ADD]
    assert q.where(info.pod) != "unschedulable"
