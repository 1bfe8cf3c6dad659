"""client-go's workqueue metrics (k8s.io/component-base/metrics/prometheus/workqueue) for our
controllers' work queues: the same names, `name` label, help and buckets.

Counts and durations are observed as they happen (WorkQueueMetrics is a WorkQueueObserver);
depth, unfinished work and the longest running processor are read from the queues at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from policy_scheduler.observability import metrics
from policy_scheduler.observability.metrics import exponential_buckets

DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)

adds = Counter(
    "workqueue_adds", "Total number of adds handled by workqueue", ["name"], registry=metrics.REGISTRY
)
retries = Counter(
    "workqueue_retries", "Total number of retries handled by workqueue", ["name"], registry=metrics.REGISTRY
)
queue_duration = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    ["name"],
    buckets=DURATION_BUCKETS,
    registry=metrics.REGISTRY,
)
work_duration = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=DURATION_BUCKETS,
    registry=metrics.REGISTRY,
)


class QueueState(Protocol):
    name: str

    def __len__(self) -> int: ...

    def work_in_progress(self) -> list[float]: ...


class WorkQueueMetrics:
    """One queue's counters and histograms (a controllers.workqueue.WorkQueueObserver)."""

    def __init__(self, name: str) -> None:
        self._adds = adds.labels(name)
        self._retries = retries.labels(name)
        self._queued = queue_duration.labels(name)
        self._work = work_duration.labels(name)

    def added(self) -> None:
        self._adds.inc()

    def taken(self, queued_seconds: float) -> None:
        self._queued.observe(queued_seconds)

    def finished(self, work_seconds: float) -> None:
        self._work.observe(work_seconds)

    def retried(self) -> None:
        self._retries.inc()


class WorkQueueCollector(Collector):
    """workqueue_depth, workqueue_unfinished_work_seconds and
    workqueue_longest_running_processor_seconds of `queues`, when Prometheus scrapes."""

    def __init__(self, queues: Callable[[], list[QueueState]]) -> None:
        self.queues = queues

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=["name"],
        )
        for queue in self.queues():
            running = queue.work_in_progress()
            depth.add_metric([queue.name], len(queue))
            unfinished.add_metric([queue.name], sum(running))
            longest.add_metric([queue.name], max(running, default=0.0))
        yield depth
        yield unfinished
        yield longest


def register_queues(
    queues: Callable[[], list[QueueState]], registry: CollectorRegistry = metrics.REGISTRY
) -> Callable[[], None]:
    """Export the queues' state; returns the function that stops exporting it."""
    collector = WorkQueueCollector(queues)
    registry.register(collector)
    return lambda: registry.unregister(collector)
