"""examples/ does on a real cluster what its comments say (examples/README.md's "On a cluster").

A cluster of this module's own, shaped like examples/simulate/cluster.yaml: six 4-cpu nodes in
three zones, two of them with four example.com/gpu. The operator runs as the admin; the policy
in examples/ is applied first, then the workloads, exactly as the README tells a user to.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures_operator import ROOT, OperatorProcess, apply_crds, private_cluster
from kubectl import Kubectl
from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until

EXAMPLES = ROOT / "examples"
NS = "policy-scheduler-examples"
ZONE = "topology.kubernetes.io/zone"
GPU = "example.com/gpu"
GPU_NODES = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[DevCluster]:
    with private_cluster(tmp_path_factory, pytestconfig, "examples-cluster", nodes=0) as dev:
        dev.create_nodes(6, prefix="example", cpu="4", memory="16Gi", zones=("a", "b", "c"))
        yield dev


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    apply_crds(kubectl)
    # As workloads/gpu.yaml says: kwok nodes need capacity and allocatable.
    for node in sorted(n["metadata"]["name"] for n in kubectl.items("nodes"))[:GPU_NODES]:
        patch = [
            {"op": "add", "path": f"/status/{field}/example.com~1gpu", "value": "4"}
            for field in ("capacity", "allocatable")
        ]
        kubectl.run("patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(patch))
    return kubectl


@pytest.fixture(scope="module")
def examples(admin: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    operator = OperatorProcess(
        admin.kubeconfig, tmp_path_factory.mktemp("examples-operator") / "operator.log", "--no-leader-elect"
    )
    try:
        operator.wait_ready()
        admin.run("apply", "-f", str(EXAMPLES))
        admin.run("wait", "--for=condition=Synced", "priorityclassmirrors", "--all", "--timeout=60s")
        admin.run("apply", "-f", str(EXAMPLES / "workloads"))
        yield admin
    finally:
        operator.stop()


def pods_of(kubectl: Kubectl, app: str) -> list[dict[str, Any]]:
    return [p for p in kubectl.items("pods", NS) if p["metadata"].get("labels", {}).get("app") == app]


def bound(kubectl: Kubectl, app: str, replicas: int) -> list[dict[str, Any]]:
    def all_bound() -> list[dict[str, Any]] | None:
        pods = [p for p in pods_of(kubectl, app) if not p["metadata"].get("deletionTimestamp")]
        placed = [p for p in pods if p["spec"].get("nodeName")]
        return placed if len(placed) == replicas else None

    return wait_until(f"{replicas} {app} pods bound", all_bound, timeout=90)


def node_labels(kubectl: Kubectl) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in kubectl.items("nodes")}


def test_bin_packing_fills_as_few_nodes_as_possible(examples: Kubectl) -> None:
    """workloads/binpack.yaml: "the replicas fill as few nodes as possible" (6 x 250m on 4-cpu
    nodes: one node)."""
    nodes = {p["spec"]["nodeName"] for p in bound(examples, "batch", 6)}
    assert len(nodes) == 1, nodes


def test_gpu_packing_puts_the_trainers_on_one_gpu_node(examples: Kubectl) -> None:
    """profile-gpu.yaml: "pack GPU pods onto the nodes whose GPUs are already in use"."""
    nodes = {p["spec"]["nodeName"] for p in bound(examples, "trainer", 2)}
    gpu_nodes = {n["metadata"]["name"] for n in examples.items("nodes") if GPU in n["status"]["allocatable"]}
    assert len(nodes) == 1, nodes
    assert nodes <= gpu_nodes, (nodes, gpu_nodes)


def test_zone_spread_keeps_zones_at_most_one_apart(examples: Kubectl) -> None:
    """workloads/spread.yaml: "zones at most 1 apart"."""
    labels = node_labels(examples)
    zones = Counter(labels[p["spec"]["nodeName"]][ZONE] for p in bound(examples, "api", 6))
    assert set(zones) == {"a", "b", "c"}
    assert max(zones.values()) - min(zones.values()) <= 1, zones


def test_default_profile_spreads_a_deployment_as_kube_scheduler_does(examples: Kubectl) -> None:
    """profile-default.yaml: kube-scheduler's defaults, whose system default constraints spread
    a Deployment's replicas over nodes."""
    nodes = [p["spec"]["nodeName"] for p in bound(examples, "web", 3)]
    assert len(set(nodes)) == 3, nodes


def test_urgent_pods_preempt_filler_pods_within_their_budget(examples: Kubectl) -> None:
    """workloads/preemption.yaml: fill the nodes with filler pods, then ask for more urgent ones:
    filler pods are evicted through the Eviction API and the budget (minAvailable 2) holds."""
    bound(examples, "urgent", 2)
    examples.run("scale", "deploy/filler", "--replicas=40", "-n", NS)

    def full() -> bool:
        filler = pods_of(examples, "filler")
        return len(filler) == 40 and any(not p["spec"].get("nodeName") for p in filler)

    wait_until("the nodes full of filler pods", full, timeout=90)
    examples.run("scale", "deploy/urgent", "--replicas=4", "-n", NS)
    bound(examples, "urgent", 4)
    preempted = [
        e
        for e in examples.items("events.events.k8s.io", NS)
        if e.get("reason") == "Preempted" and e["regarding"]["name"].startswith("filler-")
    ]
    assert preempted, "no filler pod was preempted"
    budget = json.loads(examples.run("get", "pdb", "filler", "-n", NS, "-o", "json").stdout)
    assert budget["status"]["currentHealthy"] >= budget["spec"]["minAvailable"]


def test_the_readme_commands_are_the_ones_tested() -> None:
    """examples/README.md's "On a cluster" is what the fixtures above run."""
    readme = (EXAMPLES / "README.md").read_text()
    for command in (
        "kubectl apply -f examples/",
        "kubectl wait --for=condition=Synced priorityclassmirrors --all",
        "kubectl apply -f examples/workloads/",
    ):
        assert command in readme
    comment = (EXAMPLES / "workloads" / "preemption.yaml").read_text()
    assert "scale deploy/filler --replicas=40" in comment
    assert "scale deploy/urgent --replicas=4" in comment


def test_every_workload_example_is_checked() -> None:
    checked = {
        "binpack.yaml",
        "gpu.yaml",
        "spread.yaml",
        "default.yaml",
        "preemption.yaml",
        "00-namespace.yaml",
    }
    assert {p.name for p in (EXAMPLES / "workloads").glob("*.yaml")} == checked
