"""Issue 13 on the real control plane: `explain` of a pending and of a scheduled pod, the
pending-summary annotation, and kube-scheduler's metrics after a burst."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import metric_sample
from kubectl import Kubectl, namespace, pod, profile, wait_for
from policy_scheduler.devcluster.nodes import NodeShape, node_manifest

SCHEDULER = "explain-scheduler"
NS = "e2e-explain"
ZONE_LABEL = "e2e-explain"
SUMMARY = "policy-scheduler.io/pending-summary"
BURST = 80  # enough cycles that the 10% plugin-duration sampling has samples for sure


def _node(name: str, zone: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    manifest = node_manifest(name, "zone-x", NodeShape(cpu=cpu, labels={ZONE_LABEL: zone}))
    if taints:
        manifest["spec"]["taints"] = taints
    return manifest


@pytest.fixture(scope="module")
def explain_nodes(kubectl: Kubectl) -> Iterator[list[str]]:
    """2 zone-a nodes short of cpu, 3 tainted zone-a nodes, 2 roomy zone-b nodes."""
    nodes = [_node(f"explain-small-{i}", "a", "1") for i in range(2)]
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    nodes += [_node(f"explain-tainted-{i}", "a", "32", [taint]) for i in range(3)]
    nodes += [_node(f"explain-b-{i}", "b", "64") for i in range(2)]
    # The fake nodes' status is partial (kwok fills it in): skip kubectl's client-side schema check.
    body = {"apiVersion": "v1", "kind": "List", "items": nodes}
    kubectl.run("create", "--validate=false", "-f", "-", stdin=json.dumps(body))
    names = [n["metadata"]["name"] for n in nodes]
    try:
        yield names
    finally:
        kubectl.run("delete", "pods", "--all", "-n", NS, "--wait=false", check=False)
        kubectl.run("delete", "nodes", *names, "--wait=false", check=False)


def explain(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "policy_scheduler", "explain", "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def expected_rejections(kubectl: Kubectl) -> Counter[str]:
    """Which plugin turns each node down for a 2-cpu pod selecting zone a, by the filter order
    (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit)."""
    out: Counter[str] = Counter()
    for node in kubectl.items("nodes"):
        spec, labels = node.get("spec") or {}, node["metadata"].get("labels") or {}
        if spec.get("unschedulable"):
            out["NodeUnschedulable"] += 1
        elif any(t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or []):
            out["TaintToleration"] += 1
        elif labels.get(ZONE_LABEL) != "a":
            out["NodeAffinity"] += 1
        else:
            out["NodeResourcesFit"] += 1
    return out


def by_plugin(answer: dict[str, Any]) -> Counter[str]:
    out: Counter[str] = Counter()
    for row in answer["rejections"]:
        out[row["plugin"]] += row["nodes"]
    return out


def test_pending_pod_explained_with_every_reason(
    operator_process: Any, kubectl: Kubectl, kubeconfig: Path, explain_nodes: list[str]
) -> None:
    kubectl.apply(namespace(NS), profile("explain", SCHEDULER, pendingSummaryAnnotation=True))
    kubectl.create(pod("stuck", NS, SCHEDULER, cpu="2", extra_spec={"nodeSelector": {ZONE_LABEL: "a"}}))
    endpoint = f"https://127.0.0.1:{operator_process.port}"

    def answered() -> dict[str, Any] | None:
        result = explain(
            kubeconfig,
            f"{NS}/stuck",
            "--endpoint",
            endpoint,
            "--insecure-skip-tls-verify",
            "--no-recompute",
            "-o",
            "json",
        )
        return json.loads(result.stdout) if result.returncode == 0 else None

    answer = wait_for("an explanation of the pending pod", answered, timeout=60)
    expected = expected_rejections(kubectl)
    assert answer["state"] == "pending"
    assert answer["source"] == "operator"
    assert answer["numNodes"] == sum(expected.values())
    assert by_plugin(answer) == expected
    reasons = {row["plugin"]: row["reason"] for row in answer["rejections"]}
    assert reasons["NodeResourcesFit"] == "Insufficient cpu"
    assert reasons["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert reasons["NodeAffinity"] == "node(s) didn't match Pod's node affinity/selector"

    # The table says the same, one row per reason with its node count.
    shown = explain(kubeconfig, f"{NS}/stuck", "--endpoint", endpoint, "--insecure-skip-tls-verify")
    table = shown.stdout
    assert "answered by https://" in table
    total = answer["numNodes"]
    for plugin, count in expected.items():
        assert re.search(rf"^{count}/{total}\s+{plugin}\s", table, re.M), (plugin, table)

    # The profile asked for the summary annotation: nodes per reason, compact.
    def summary() -> str | None:
        return (kubectl.get("pod", "stuck", NS)["metadata"].get("annotations") or {}).get(SUMMARY)

    text = wait_for("the pending-summary annotation", summary, timeout=30)
    assert f"{expected['NodeAffinity']}/{total} nodes: node(s) didn't match" in text
    assert f"{expected['NodeResourcesFit']}/{total}: Insufficient cpu" in text

    # No operator to ask (no lease: leader election is off): recomputed from the cluster, said so.
    fallback = explain(kubeconfig, f"{NS}/stuck", "-o", "json")
    assert fallback.returncode == 0, fallback.stderr
    recomputed = json.loads(fallback.stdout)
    assert recomputed["source"] == "recomputed"
    assert "operator unreachable" in recomputed["note"]
    assert by_plugin(recomputed) == expected


def test_a_commands_output_carries_no_log_lines(
    operator_process: Any, kubectl: Kubectl, kubeconfig: Path, explain_nodes: list[str]
) -> None:
    """The leader is looked up (no Lease here: the session's operator runs without election) and
    the answer recomputed from a live snapshot: the API client is made twice, and logs nothing
    at the default level; -v brings the operator-style logs back."""
    kubectl.apply(namespace(NS), profile("explain", SCHEDULER))
    kubectl.apply(pod("quiet", NS, SCHEDULER, cpu="2", extra_spec={"nodeSelector": {ZONE_LABEL: "a"}}))
    try:
        assert_quiet(kubeconfig)
    finally:
        kubectl.run("delete", "pod", "quiet", "-n", NS, "--wait=true")


def assert_quiet(kubeconfig: Path) -> None:
    result = explain(kubeconfig, f"{NS}/quiet")
    assert result.returncode == 0, result.stderr
    assert "recomputed from a live snapshot" in result.stdout
    assert result.stderr == ""
    verbose = subprocess.run(
        [
            sys.executable,
            "-m",
            "policy_scheduler",
            "-v",
            "explain",
            "--kubeconfig",
            str(kubeconfig),
            f"{NS}/quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert " INFO " in verbose.stderr


def test_scheduled_pod_names_its_node_and_scores(
    operator_process: Any, kubectl: Kubectl, kubeconfig: Path, explain_nodes: list[str]
) -> None:
    kubectl.apply(namespace(NS), profile("explain", SCHEDULER, pendingSummaryAnnotation=True))
    # explain-b-0 carries load, so the resource scores favour explain-b-1.
    load = pod("load", NS, "nobody", cpu="40", extra_spec={"nodeName": "explain-b-0"})
    kubectl.create(load)
    kubectl.create(pod("placed", NS, SCHEDULER, cpu="1", extra_spec={"nodeSelector": {ZONE_LABEL: "b"}}))
    node = wait_for(
        "placed bound", lambda: kubectl.get("pod", "placed", NS)["spec"].get("nodeName"), timeout=60
    )
    assert node == "explain-b-1"
    # The kubectl plugin: `kubectl policy-scheduler explain` finds kubectl-policy_scheduler on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    endpoint = f"https://127.0.0.1:{operator_process.port}"
    # kubectl refuses its own flags before a plugin's name: the plugin takes --kubeconfig itself.
    cmd = [kubectl.binary, "policy-scheduler", "explain", f"{NS}/placed", "--kubeconfig", str(kubeconfig)]
    result = subprocess.run(
        [*cmd, "--endpoint", endpoint, "--insecure-skip-tls-verify", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["state"] == "scheduled"
    assert answer["node"] == node
    best, runner_up = answer["scores"][0], answer["scores"][1]
    assert best["node"] == node
    assert runner_up["node"] == "explain-b-0"
    assert best["total"] >= runner_up["total"]
    assert best["total"] == sum(best["byPlugin"].values())
    assert best["byPlugin"]["NodeResourcesFit"] > runner_up["byPlugin"]["NodeResourcesFit"]
    table = subprocess.run(
        [*cmd, "--endpoint", endpoint, "--insecure-skip-tls-verify"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert f"scheduled to {node}" in table.stdout
    assert "answered by https://" in table.stdout
    assert "TOTAL" in table.stdout
    assert SUMMARY not in (kubectl.get("pod", "placed", NS)["metadata"].get("annotations") or {})


def test_kube_scheduler_metrics_after_a_burst(
    operator_process: Any, kubectl: Kubectl, explain_nodes: list[str]
) -> None:
    kubectl.apply(namespace(NS), profile("explain", SCHEDULER, pendingSummaryAnnotation=True))
    selector = {"nodeSelector": {ZONE_LABEL: "b"}}
    kubectl.create(
        *(pod(f"burst-{i:02d}", NS, SCHEDULER, cpu="10m", extra_spec=selector) for i in range(BURST))
    )

    def bound() -> bool | None:
        pods = [p for p in kubectl.items("pods", NS) if p["metadata"]["name"].startswith("burst-")]
        return (len(pods) == BURST and all(p["spec"].get("nodeName") for p in pods)) or None

    wait_for(f"{BURST} pods bound", bound, timeout=90)

    def scraped() -> str | None:
        text = operator_process.metrics()
        # "stuck" is back in unschedulablePods between its retries, rejected by three plugins.
        plugins = ("NodeAffinity", "TaintToleration", "NodeResourcesFit")
        found = [
            metric_sample(text, "scheduler_unschedulable_pods", plugin=p, profile=SCHEDULER) for p in plugins
        ]
        return text if found == [1.0, 1.0, 1.0] else None

    text = wait_for("metrics with the unschedulable pod", scraped, timeout=60)

    def sample(name: str, **labels: str) -> float | None:
        return metric_sample(text, name, **labels)

    assert (sample("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") or 0) >= BURST
    assert (sample("scheduler_pod_scheduling_attempts_count") or 0) >= BURST + 1
    assert (sample("scheduler_pod_scheduling_attempts_sum") or 0) >= BURST
    assert (sample("scheduler_plugin_execution_duration_seconds_count", extension_point="Filter") or 0) >= 1
    evaluations = sample(
        "scheduler_plugin_evaluation_total",
        plugin="NodeResourcesFit",
        extension_point="Filter",
        profile=SCHEDULER,
    )
    assert evaluations is not None
    assert evaluations >= BURST
    assert (
        sample("scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") or 0
    ) >= BURST
    assert sample("scheduler_pending_pods", queue="active") is not None
    assert sample("scheduler_cache_size", type="nodes") == len(kubectl.items("nodes"))
    assert (sample("scheduler_cache_size", type="pods") or 0) >= BURST
    assert (sample("scheduler_preemption_attempts_total") or 0) >= 1  # "stuck" went through PostFilter
    assert "# TYPE scheduler_preemption_victims histogram" in text
    assert (sample("scheduler_schedule_attempts_total", profile=SCHEDULER, result="scheduled") or 0) >= BURST
    # No pod contents in metrics: no label value names a pod (help texts may say "stuck").
    assert not re.search(r'="[^"]*(burst-|stuck)', text)
