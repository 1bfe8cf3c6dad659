"""The engine's state and cycle reports as kube-scheduler's Prometheus metrics.

MetricsObserver is a CycleObserver and PluginMetrics for the core; EngineCollector reads the
queue and cache when Prometheus scrapes, so the scheduling loop pays nothing for those series.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from policy_scheduler.observability import metrics
from policy_scheduler.scheduler.diagnosis_recorder import CycleObserver
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.queue.changes import event_label

# plugin_evaluation_total covers these points only; upstream counts a preemption attempt each
# time DefaultPreemption's PostFilter runs, whatever it finds.
EVALUATED_POINTS = frozenset({"PreFilter", "Filter", "PreScore", "Score"})
DEFAULT_PREEMPTION = "DefaultPreemption"
POD_POPPED = "PodPopped"  # metrics.PodPoppedInFlightEvent
MAX_ATTEMPTS_LABEL = 15  # upstream's getAttemptsLabel caps the attempts label at "15+"


def attempts_label(attempts: int) -> str:
    return f"{MAX_ATTEMPTS_LABEL}+" if attempts >= MAX_ATTEMPTS_LABEL else str(attempts)


class MetricsObserver(CycleObserver):
    """Per-attempt metrics: the SLI latency and attempts of bound pods, per-plugin counters."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock  # the queue's clock: initial_attempt_timestamp comes from it
        self._hints: dict[tuple[str, str, str], Any] = {}

    def bound(self, info: QueuedPodInfo, profile: str, node_name: str) -> None:
        metrics.pod_scheduling_attempts.observe(info.attempts)
        if info.initial_attempt_timestamp is not None:
            seconds = self.clock() - info.initial_attempt_timestamp
            metrics.pod_scheduling_sli_duration.labels(attempts_label(info.attempts)).observe(seconds)

    def algorithm_finished(self, profile: str, seconds: float) -> None:
        metrics.scheduling_algorithm_duration.observe(seconds)

    def permit_waited(self, result: str, seconds: float) -> None:
        metrics.permit_wait_duration.labels(result).observe(seconds)

    def hint_ran(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """A queueing hint ran (the queue's HintObserver)."""
        series = self._hints.get((plugin, event, hint))
        if series is None:
            series = self._hints[plugin, event, hint] = metrics.queueing_hint_execution_duration.labels(
                plugin, event, hint
            )
        series.observe(seconds)

    # ---- PluginMetrics ---------------------------------------------------------------------------

    def evaluated(self, profile: str, plugin: str, point: str, count: int) -> None:
        if point in EVALUATED_POINTS:
            metrics.plugin_evaluation.counts[plugin, point, profile] += count
        elif point == "PostFilter" and plugin == DEFAULT_PREEMPTION:
            metrics.preemption_attempts.inc()

    def executed(self, plugin: str, point: str, code: str, seconds: float) -> None:
        metrics.plugin_execution_duration.labels(plugin, point, code).observe(seconds)


class EngineCollector(Collector):
    """scheduler_cache_size, scheduler_unschedulable_pods and scheduler_queue_incoming_pods_total,
    computed from the engine at scrape time."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        cache = GaugeMetricFamily(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        for kind, size in self.engine.cache.sizes().items():
            cache.add_metric([kind], size)
        yield cache

        unschedulable = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
            "for all plugins that caused it to not schedule and so this metric have meaning only when "
            "broken down by plugin.",
            labels=["plugin", "profile"],
        )
        for (plugin, profile), count in sorted(self.unschedulable_by_plugin().items()):
            unschedulable.add_metric([plugin, profile], count)
        yield unschedulable

        inflight = GaugeMetricFamily(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            labels=["event"],
        )
        for label, count in sorted(self.inflight_events().items()):
            inflight.add_metric([label], count)
        yield inflight

        incoming = CounterMetricFamily(
            "scheduler_queue_incoming_pods",  # the client adds _total
            "Number of pods added to scheduling queues by event and queue type.",
            labels=["queue", "event"],
        )
        for (queue, event), count in sorted(self.engine.queue.incoming.items()):
            incoming.add_metric([queue, event], count)
        yield incoming

    def inflight_events(self) -> Counter[str]:
        """The queue's in-flight log as upstream counts it: a PodPopped per pod being scheduled,
        and each event recorded meanwhile by its label."""
        counts: Counter[str] = Counter()
        for item in self.engine.queue.active.in_flight_log():
            counts[POD_POPPED if isinstance(item, Pod) else event_label(item.event)] += 1
        return counts

    def unschedulable_by_plugin(self) -> Counter[tuple[str, str]]:
        """Pods in unschedulablePods per rejecting (or gating) plugin, as upstream counts them."""
        counts: Counter[tuple[str, str]] = Counter()
        for info in self.engine.queue.unschedulable:
            plugins = (
                {info.gating_plugin} if info.gated else info.unschedulable_plugins | info.pending_plugins
            )
            for plugin in plugins:
                counts[(plugin, info.pod.scheduler_name)] += 1
        return counts


def register_engine(engine: Engine, registry: CollectorRegistry = metrics.REGISTRY) -> Callable[[], None]:
    """Export `engine`'s state; returns the function that stops exporting it."""
    collector = EngineCollector(engine)
    registry.register(collector)
    return lambda: registry.unregister(collector)
