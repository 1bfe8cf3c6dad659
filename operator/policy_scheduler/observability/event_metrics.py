"""kube-scheduler's scheduler_event_handling_duration_seconds: how long the scheduler takes to
take in each informer event (cache, queue, hints), by the event's label as upstream names it
(`UnscheduledPodAdd`, `AssignedPodUpdate`, `NodeDelete`, `storage.k8s.io/CSINodeAdd`, ...).

TimedEvents stands between the informers and the engine; the engine stays free of metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import Histogram

from policy_scheduler.observability import metrics
from policy_scheduler.observability.metrics import exponential_buckets
from policy_scheduler.scheduler.event_sinks import EngineEvents
from policy_scheduler.scheduler.framework.events import Action, Resource
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.storage.events import storage_event
from policy_scheduler.scheduler.storage.lister import StorageObject

event_handling_duration = Histogram(
    "scheduler_event_handling_duration_seconds",
    "Event handling latency in seconds.",
    ["event"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=metrics.REGISTRY,
)


def event_label(resource: Resource | str, action: Action) -> str:
    """framework.ClusterEvent.Label(): the resource, then Add, Update or Delete."""
    verb = "Add" if action == Action.ADD else "Delete" if action == Action.DELETE else "Update"
    return f"{resource}{verb}"


def _pod_resource(pod: Pod) -> Resource:
    return Resource.ASSIGNED_POD if pod.node_name else Resource.UNSCHEDULED_POD


class TimedEvents:
    """The engine's event handlers, each observed by its event label."""

    def __init__(self, engine: EngineEvents, clock: Callable[[], float] = time.perf_counter) -> None:
        self.engine = engine
        self.clock = clock
        self._series: dict[str, Any] = {}

    def _observe(self, label: str, started: float) -> None:
        series = self._series.get(label)
        if series is None:
            series = self._series[label] = event_handling_duration.labels(label)
        series.observe(self.clock() - started)

    def pod_added(self, pod: Pod) -> None:
        started = self.clock()
        self.engine.pod_added(pod)
        self._observe(event_label(_pod_resource(pod), Action.ADD), started)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        started = self.clock()
        self.engine.pod_updated(old, new)
        self._observe(event_label(_pod_resource(old), Action.UPDATE), started)

    def timed_pod_deleted(self, handler: Callable[[Pod], None]) -> Callable[[Pod], None]:
        def deleted(pod: Pod) -> None:
            started = self.clock()
            handler(pod)
            self._observe(event_label(_pod_resource(pod), Action.DELETE), started)

        return deleted

    def node_added(self, node: Node) -> None:
        started = self.clock()
        self.engine.node_added(node)
        self._observe(event_label(Resource.NODE, Action.ADD), started)

    def node_updated(self, old: Node, new: Node) -> None:
        started = self.clock()
        self.engine.node_updated(old, new)
        self._observe(event_label(Resource.NODE, Action.UPDATE), started)

    def node_deleted(self, node: Node) -> None:
        started = self.clock()
        self.engine.node_deleted(node)
        self._observe(event_label(Resource.NODE, Action.DELETE), started)

    def set_namespace_labels(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self.engine.set_namespace_labels(labels)

    def storage_changed(self, old: StorageObject | None, new: StorageObject | None) -> None:
        started = self.clock()
        self.engine.storage_changed(old, new)
        event = storage_event(old, new)
        self._observe(event_label(event.resource, event.action), started)

    def dra_changed(self, resource: Resource, old: object | None, new: object | None) -> None:
        started = self.clock()
        self.engine.dra_changed(resource, old, new)
        action = Action.ADD if old is None else Action.DELETE if new is None else Action.UPDATE
        self._observe(event_label(resource, action), started)
