"""Prometheus metrics with kube-scheduler's names (plus a `profile` label) and our own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

_LATENCY_BUCKETS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10)

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
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
pending_pods = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type.",
    ["queue"],
    registry=REGISTRY,
)
preemption_attempts = Counter(
    "scheduler_preemption_attempts_total", "Total preemption attempts.", ["profile"], registry=REGISTRY
)
preemption_victims = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims.",
    ["profile"],
    buckets=(1, 2, 4, 8, 16, 32, 64),
    registry=REGISTRY,
)
extension_point_duration = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=_LATENCY_BUCKETS,
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
is_leader = Gauge("policy_scheduler_leader", "1 when this replica holds the lease.", registry=REGISTRY)
