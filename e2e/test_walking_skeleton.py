"""Issue 2's walking skeleton on the real control plane: profile CR → pods bound, status Ready."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.scheduler.resources import canonical
from polling import wait_until

SCHEDULER = "skeleton-scheduler"
NS = "e2e-skeleton"


def _node_requests(pods: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        used[node]["pods"] += 1
        for c in p["spec"]["containers"]:
            for name, value in ((c.get("resources") or {}).get("requests") or {}).items():
                used[node][name] += canonical(name, value)
    return used


def test_profile_binds_fifty_pods_within_allocatable(operator_process: Any, kubectl: Kubectl) -> None:
    kubectl.apply(namespace(NS), profile("skeleton", SCHEDULER))
    kubectl.create(*(pod(f"p{i:02d}", NS, SCHEDULER, cpu="2", memory="4Gi") for i in range(50)))
    kubectl.create(pod("orphan", NS, "no-such-scheduler"))

    def all_bound() -> list[dict[str, Any]] | None:
        pods = [p for p in kubectl.items("pods", NS) if p["metadata"]["name"] != "orphan"]
        return pods if len(pods) == 50 and all(p["spec"].get("nodeName") for p in pods) else None

    bound = wait_until("50 pods bound", all_bound, timeout=60)
    assert {p["spec"]["nodeName"] for p in bound} <= {n["metadata"]["name"] for n in kubectl.items("nodes")}

    # No node over its allocatable, counting every pod on it (other tests' pods too).
    used = _node_requests(kubectl.items("pods"))
    for node in kubectl.items("nodes"):
        allocatable = node["status"]["allocatable"]
        for resource in ("cpu", "memory", "pods"):
            assert used[node["metadata"]["name"]][resource] <= canonical(resource, allocatable[resource]), (
                f"{node['metadata']['name']} over-committed on {resource}"
            )

    def ready_status() -> dict[str, Any] | None:
        obj = kubectl.get("schedulingprofile", "skeleton")
        ready = condition(obj, "Ready")
        status = obj.get("status") or {}
        if ready and ready["status"] == "True" and status.get("scheduled", 0) >= 50:
            return dict(obj)
        return None

    obj = wait_until("profile Ready with 50 scheduled", ready_status, timeout=30)
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    assert condition(obj, "Accepted")["status"] == "True"  # type: ignore[index]

    # The pod for a scheduler nobody serves is left alone: no node, no condition written by us.
    orphan = kubectl.get("pod", "orphan", NS)
    assert not orphan["spec"].get("nodeName")
    assert condition(orphan, "PodScheduled") is None


def test_metrics_use_kube_scheduler_names_with_profile_label(operator_process: Any, kubectl: Kubectl) -> None:
    # Runs after the test above in this module: its 50 pods were scheduled by this operator.
    text = operator_process.metrics()
    assert f'scheduler_schedule_attempts_total{{profile="{SCHEDULER}",result="scheduled"}} 50.0' in text
    for point in ("PreFilter", "Filter", "Score", "Bind"):
        assert (
            f'scheduler_framework_extension_point_duration_seconds_count{{extension_point="{point}",'
            f'profile="{SCHEDULER}",status="Success"}}'
        ) in text, point
    assert 'scheduler_pending_pods{queue="active"}' in text
    assert "policy_scheduler_policy_reloads_total" in text


# What kubernetes-mixin's kube-scheduler dashboard (dashboards/scheduler.libsonnet), recording
# rules (rules/kube_scheduler.libsonnet) and alerts (alerts/kube_scheduler.libsonnet: up only)
# read, at github.com/kubernetes-monitoring/kubernetes-mixin@aa38e2bf; kube-prometheus renders
# its scheduler dashboard and rules from these files.
MIXIN_SERIES = (
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "rest_client_requests_total",
    "rest_client_request_duration_seconds_bucket",
    "scheduler_pod_scheduling_sli_duration_seconds_bucket",
    "scheduler_pod_scheduling_sli_duration_seconds_count",
    "scheduler_scheduling_algorithm_duration_seconds_bucket",
    "scheduler_scheduling_algorithm_duration_seconds_count",
    "scheduler_scheduling_attempt_duration_seconds_bucket",
    "scheduler_scheduling_attempt_duration_seconds_count",
)
# The mixin also reads `up` (Prometheus' own), the Go runtime's go_goroutines, and
# scheduler_volume_scheduling_duration_seconds, which kube-scheduler v1.35 does not have either
# (docs/differences.md).


def test_the_dashboards_and_rules_series_exist_after_a_burst(operator_process: Any, kubectl: Kubectl) -> None:
    # Runs after the first test in this module: its burst of 50 pods was scheduled by this operator.
    samples = {
        sample.name: sample
        for family in text_string_to_metric_families(operator_process.metrics())
        for sample in family.samples
    }
    missing = [name for name in MIXIN_SERIES if name not in samples]
    assert not missing, f"series the kube-scheduler dashboards and rules read are missing: {missing}"
    sample_labels = [
        s.labels
        for family in text_string_to_metric_families(operator_process.metrics())
        for s in family.samples
        if s.name == "rest_client_requests_total"
    ]
    # The binds went out as POSTs the API server accepted (the dashboard's code=~"2.." panel).
    assert any(labels["method"] == "POST" and labels["code"].startswith("2") for labels in sample_labels)
    assert samples["scheduler_scheduling_algorithm_duration_seconds_count"].value >= 50
    assert samples["process_resident_memory_bytes"].value > 0
    assert "python_gc_collections_total" in samples
