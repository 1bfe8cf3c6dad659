"""Prometheus metrics with kube-scheduler v1.35's names, labels and buckets, and our own.

Series that mirror queue and cache state (scheduler_cache_size, scheduler_unschedulable_pods,
scheduler_queue_incoming_pods_total) are read from the engine at scrape time by
scheduler_metrics.EngineCollector.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

REGISTRY = CollectorRegistry(auto_describe=True)
# prometheus_client's default collectors, as kube-scheduler's registry has Go's and the process':
# process_* (CPU, memory, file descriptors), python_gc_* and python_info.
for _collector in (PROCESS_COLLECTOR, GC_COLLECTOR, PLATFORM_COLLECTOR):
    REGISTRY.register(_collector)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """component-base's metrics.ExponentialBuckets."""
    return tuple(start * factor**i for i in range(count))


schedule_attempts = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result.",
    ["result", "profile"],
    registry=REGISTRY,
)
scheduling_attempt_duration = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
scheduling_algorithm_duration = Histogram(
    "scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
permit_wait_duration = Histogram(
    "scheduler_permit_wait_duration_seconds",
    "Duration of waiting on permit.",
    ["result"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
queueing_hint_execution_duration = Histogram(
    "scheduler_queueing_hint_execution_duration_seconds",
    "Duration for running a queueing hint function of a plugin.",
    ["plugin", "event", "hint"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
pending_pods = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type.",
    ["queue"],
    registry=REGISTRY,
)
preemption_attempts = Counter(
    "scheduler_preemption_attempts_total",
    "Total preemption attempts in the cluster till now",
    registry=REGISTRY,
)
preemption_victims = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7),
    registry=REGISTRY,
)
pod_scheduling_sli_duration = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
    "might involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
pod_scheduling_attempts = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
    registry=REGISTRY,
)
pod_scheduled_after_flush = Counter(
    "scheduler_pod_scheduled_after_flush",
    "Number of pods that were successfully scheduled after being flushed from unschedulableEntities "
    "due to timeout. This metric helps detect potential queueing hint misconfigurations or event "
    "handling issues.",
    registry=REGISTRY,
)
# The volume binder's series (k8s.io/kubernetes pkg/scheduler/framework/plugins/volumebinding/
# metrics): the cache counter is registered and never incremented there either.
volume_scheduling_stage_errors = Counter(
    "scheduler_volume_scheduling_stage_error",
    "Volume scheduling stage error count",
    ["operation"],
    registry=REGISTRY,
)
volume_binder_cache_requests = Counter(
    "scheduler_volume_binder_cache_requests",
    "Total number for request volume binding cache",
    ["operation"],
    registry=REGISTRY,
)


def count_volume_stage_failures(operation: str, count: int) -> None:
    volume_scheduling_stage_errors.labels(operation).inc(count)


plugin_execution_duration = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)


class PluginEvaluations(Collector):
    """scheduler_plugin_evaluation_total kept as plain counts and read at scrape time: a cycle
    makes dozens of increments, and a prometheus_client Counter takes a lock for each."""

    def __init__(self) -> None:
        # (plugin, extension point, profile) -> evaluations
        self.counts: collections.Counter[tuple[str, str, str]] = collections.Counter()

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "scheduler_plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            labels=["plugin", "extension_point", "profile"],
        )
        for labels, value in dict(self.counts).items():  # a copy: the loop may add while we read
            family.add_metric(list(labels), value)
        yield family


plugin_evaluation = PluginEvaluations()
REGISTRY.register(plugin_evaluation)
extension_point_duration = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
evictions = Counter(
    "policy_scheduler_evictions_total",
    "Evictions requested by preemption, by result "
    "(evicted, blocked_by_budget, rate_limited, dry_run, blocked: policy unavailable, error).",
    ["result", "policy"],
    registry=REGISTRY,
)
policy_reloads = Counter(
    "policy_scheduler_policy_reloads_total",
    "Policy objects applied or rejected, by kind and result (accepted, rejected, deleted).",
    ["kind", "result"],
    registry=REGISTRY,
)
leader_election_master_status = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
    "indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    ["name"],
    registry=REGISTRY,
)
# client-go's REST client metrics (k8s.io/component-base/metrics/prometheus/restclient), for every
# request and watch of kube/client.py.
rest_client_request_duration = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
    registry=REGISTRY,
)
rest_client_requests = Counter(
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)
is_leader = Gauge(
    "policy_scheduler_leader",
    "1 while this replica may act as the leader: it holds the lease, valid by its own clock.",
    registry=REGISTRY,
)
fenced_writes = Counter(
    "policy_scheduler_fenced_writes_total",
    "Writes only the leader makes, refused because this replica's lease was not valid by its own clock.",
    ["resource"],
    registry=REGISTRY,
)
leader_election_errors = Counter(
    "policy_scheduler_leader_election_errors_total",
    "Lease reads and writes that failed, by reason (Forbidden, NamespaceNotFound, Conflict, Unreachable...).",
    ["reason"],
    registry=REGISTRY,
)
nodes_under_pressure = Gauge(
    "policy_scheduler_nodes_under_pressure",
    "Nodes whose kubelet, as modelled from their usage, reports the condition (MemoryPressure, "
    "DiskPressure, PIDPressure).",
    ["condition"],
    registry=REGISTRY,
)
node_usage_age = Gauge(
    "policy_scheduler_node_usage_age_seconds",
    "Age of the oldest node usage sample in use (metrics.k8s.io or the kubelet's Summary API).",
    registry=REGISTRY,
)
nodes_without_usage = Gauge(
    "policy_scheduler_nodes_without_usage",
    "Nodes without any usage sample: no node-pressure signal can be evaluated for them.",
    registry=REGISTRY,
)
relief_evictions = Counter(
    "policy_scheduler_pressure_relief_evictions_total",
    "Evictions by pressure relief, by policy, signal and result (evicted, dry_run, blocked_by_budget, "
    "rate_limited, error).",
    ["policy", "signal", "result"],
    registry=REGISTRY,
)
nodes_relieved = Gauge(
    "policy_scheduler_pressure_relief_nodes",
    "Nodes pressure relief holds under pressure, by policy; nodes it cannot relieve for lack of fresh "
    "usage have state=no_usage.",
    ["policy", "state"],
    registry=REGISTRY,
)
