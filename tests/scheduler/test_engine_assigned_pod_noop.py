"""Assigned-pod updates that change nothing the model holds skip the cache and the queue."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from policy_scheduler.apiobjects import convert, structs
from policy_scheduler.kube.informer import Informer
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, Resource
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.queue.changes import pod_scheduling_properties_change
from tests.no_api import NO_API


@pytest.fixture
def setup(monkeypatch: pytest.MonkeyPatch) -> tuple[Engine, Pod, list[str], list[ClusterEvent]]:
    engine = Engine()
    engine.node_added(Node(name="n1", allocatable={"cpu": 4000, "memory": 2**33, "pods": 110}))
    pod = Pod(
        name="p",
        uid="u",
        labels={"app": "a"},
        node_name="n1",
        phase="Running",
        resource_version="1",
        containers=(Container(name="c", requests={"cpu": 100}),),
    )
    engine.pod_added(pod)
    cache_calls: list[str] = []
    events: list[ClusterEvent] = []
    real_update = engine.cache.update_pod
    real_updated = engine.queue.assigned_pod_updated

    def update_pod(p: Pod) -> None:
        cache_calls.append(p.resource_version)
        real_update(p)

    def assigned_pod_updated(old: Pod, new: Pod) -> None:  # the events the queue offers its hints
        events.extend(pod_scheduling_properties_change(new, old))
        real_updated(old, new)

    monkeypatch.setattr(engine.cache, "update_pod", update_pod)
    monkeypatch.setattr(engine.queue, "assigned_pod_updated", assigned_pod_updated)
    return engine, pod, cache_calls, events


def test_status_only_update_skips_cache_and_queue(setup: Any) -> None:
    engine, pod, cache_calls, events = setup
    engine.pod_updated(pod, dataclasses.replace(pod, resource_version="2"))
    assert cache_calls == []
    assert events == []
    stored = engine.cache.get_pod(pod.key)
    assert stored is not None
    assert stored.resource_version == "2"


def test_label_change_still_reaches_cache_and_hints(setup: Any) -> None:
    engine, pod, cache_calls, events = setup
    engine.pod_updated(pod, dataclasses.replace(pod, labels={"app": "b"}, resource_version="2"))
    assert cache_calls == ["2"]
    assert events == [ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE_POD_LABEL)]
    stored = engine.cache.get_pod(pod.key)
    assert stored is not None
    assert stored.labels == {"app": "b"}


def test_phase_change_updates_the_cache(setup: Any) -> None:
    engine, pod, cache_calls, _ = setup
    engine.pod_updated(pod, dataclasses.replace(pod, phase="Succeeded", resource_version="2"))
    assert cache_calls == ["2"]


def test_not_skipped_when_a_plugin_wants_generic_assigned_pod_updates(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, pod, cache_calls, events = setup
    monkeypatch.setattr(engine.queue, "is_event_of_interest", lambda event: True)
    engine.pod_updated(pod, dataclasses.replace(pod, resource_version="2"))
    assert cache_calls == ["2"]
    assert events == [ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE)]


def _line(kind: str, rv: str, restarts: int, labels: dict[str, str]) -> bytes:
    obj = {
        "metadata": {"name": "w", "namespace": "ns", "uid": "uw", "resourceVersion": rv, "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "c", "ready": True, "restartCount": restarts}],
        },
    }
    return json.dumps({"type": kind, "object": obj}).encode()


def test_watch_lines_status_only_skipped_label_change_flows(setup: Any) -> None:
    engine, _, cache_calls, events = setup
    inf: Informer[structs.Pod, Pod] = Informer(
        NO_API,
        "/api/v1/pods",
        structs.Pod,
        convert.pod_from_api_or_malformed,
        on_add=engine.pod_added,
        on_update=engine.pod_updated,
        on_delete=engine.pod_deleted,
    )
    inf._handle_line(_line("ADDED", "10", 0, {"app": "a"}))
    events.clear()
    inf._handle_line(_line("MODIFIED", "11", 1, {"app": "a"}))
    assert cache_calls == []
    assert events == []
    stored = engine.cache.get_pod("ns/w")
    assert stored is not None
    assert stored.resource_version == "11"
    inf._handle_line(_line("MODIFIED", "12", 1, {"app": "b"}))
    assert cache_calls == ["12"]
    assert events == [ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE_POD_LABEL)]
