"""Node pressure on the real control plane: metrics-server (built from its Go module, served
through the aggregation layer) scraping kwok's simulated usage, which rises and falls with the
pods' `kwok.x-k8s.io/usage-memory` annotations; a test-only kubelet stand-in for the Summary API
and /configz, reached through the API server's nodes/proxy; and the operator (a leader and a
standby) relieving pressure under an EvictionPolicy: dry run, the kubelet's order through the
Eviction API, budgets, the per-node rate, fail closed without usage, status, events, metrics.

All on loopback: metrics-server scrapes kwok at the nodes' ExternalIP 127.0.0.1, the API server
reaches the kubelet stand-in and metrics-server through the egress proxy (e2e/egressproxy.py).
The module starts a cluster of its own with those flags (devcluster/metrics_server.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from egressproxy import EgressProxy
from fixtures_operator import (
    OperatorProcess,
    apply_crds,
    metric_sample,
    private_cluster,
    wait_api_group_discovered,
)
from kubectl import Kubectl, condition, namespace, profile
from kubelet_standin import KubeletStandIn
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.metrics_server import (
    USAGE_MEMORY_ANNOTATION,
    MetricsServer,
    aggregation_flags,
    install_kwok_usage,
    scraped_node,
)
from policy_scheduler.devcluster.nodes import NodeShape, node_ip, node_manifest
from policy_scheduler.scheduler.resources import parse_quantity
from polling import holds_for, wait_until

NODES = ("n0", "n1", "n2", "ndisk")
NOT_RELIEVED = ("n2", "ndisk")  # the policy's nodeSelector leaves them out (n2 until it joins)
SCRAPED = ("n0", "n1", "ndisk")  # metrics-server cannot reach n2's kubelet: its Summary only
NS = "shop"
POLICY = "relieve"
SCHEDULER = "relieved-scheduler"
HEADROOM_SCHEDULER = "headroom-scheduler"
GI, MI = 2**30, 2**20


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def bound_pod(
    name: str,
    node: str,
    usage: str,
    *,
    memory_request: str | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = NS,
    priority_class: str | None = None,
) -> dict[str, Any]:
    """A pod placed with spec.nodeName, its usage simulated by kwok from the annotation."""
    requests = {"cpu": "100m", **({"memory": memory_request} if memory_request else {})}
    spec: dict[str, Any] = {
        "nodeName": node,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": {USAGE_MEMORY_ANNOTATION: usage},
        },
        "spec": spec,
    }


def node_agent(node: str) -> dict[str, Any]:
    """What runs on every node (kube-proxy, say): metrics-server reports no node whose usage is 0,
    and the kubelet never evicts a system-node-critical pod."""
    return bound_pod(
        f"agent-{node}", node, "100Mi", namespace="kube-system", priority_class="system-node-critical"
    )


def summary_of(kubectl: Kubectl, node: str, usage: dict[str, int]) -> Callable[[], dict[str, Any]]:
    """The node's Summary, its times fresh at each read: its pods (namespace/name: working set,
    matched by uid as the kubelet's are) and the node's memory (8Gi) as their sum."""
    pods = []
    for key, working_set in usage.items():
        pod_namespace, name = key.split("/")
        uid = kubectl.get("pod", name, pod_namespace)["metadata"]["uid"]
        pods.append((pod_namespace, name, uid, working_set))
    used = sum(u for *_, u in pods)

    def summary() -> dict[str, Any]:
        stamp = now_rfc3339()
        return {
            "node": {
                "nodeName": node,
                "memory": {"time": stamp, "availableBytes": 8 * GI - used, "workingSetBytes": used},
            },
            "pods": [
                {
                    "podRef": {"namespace": ns, "name": name, "uid": uid},
                    "memory": {"time": stamp, "workingSetBytes": working_set},
                }
                for ns, name, uid, working_set in pods
            ],
        }

    return summary


# ---- the cluster ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def egress(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EgressProxy]:
    proxy = EgressProxy(tmp_path_factory.mktemp("egress") / "egress.sock")
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def kubelets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletStandIn]:
    standin = KubeletStandIn(tmp_path_factory.mktemp("kubelets"), list(NODES))
    standin.start()
    yield standin
    standin.stop()


@pytest.fixture(scope="module")
def cluster(
    egress: EgressProxy,
    kubelets: KubeletStandIn,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[DevCluster]:
    def prepare(workdir: Path) -> list[str]:
        install_kwok_usage(workdir)
        return [
            f"--egress-selector-config-file={egress.write_config(workdir)}",
            # The kubelet is reached at the node's InternalIP (through the egress proxy), never
            # by its Hostname (a DNS lookup) or its ExternalIP (loopback: refused by the proxy).
            "--kubelet-preferred-address-types=InternalIP",
            *aggregation_flags(workdir),
        ]

    with private_cluster(
        tmp_path_factory, pytestconfig, "pressure-cluster", 0, apiserver_flags=prepare
    ) as dev:
        api = dev.api()
        for i, name in enumerate(NODES):
            labels = {"relief": "off"} if name in NOT_RELIEVED else {}
            shape = NodeShape(cpu="32", memory="8Gi", labels=labels)
            if name in SCRAPED:
                manifest = scraped_node(name, "zone-a", shape, node_ip(i), kubelet_port=kubelets.port(name))
            else:
                manifest = node_manifest(name, "zone-a", shape, internal_ip=node_ip(i))
                manifest["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": kubelets.port(name)}}
            api.post("/api/v1/nodes", manifest)
        dev.wait_nodes_ready(NODES)
        kubectl = Kubectl(dev.kubeconfig)
        # Everything the tests need measured is there from the start (metrics-server reports a
        # pod after two scrapes): the tests change usage through the annotation.
        kubectl.apply(
            *(node_agent(name) for name in NODES),
            namespace(NS),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guarded", "namespace": NS},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
            },
            # n0: its agent's 100Mi and web's 2922Mi (of a 3Gi request); batch rises later
            bound_pod("batch", "n0", "1Mi"),
            bound_pod("web", "n0", "2922Mi", memory_request="3Gi"),
            # n1: guarded 3Gi above its (no) request, but its budget allows no disruption; steady
            # within its request. 0.1 + 3 + 1.5 = 4.6Gi of 8Gi used
            bound_pod("guarded", "n1", "3Gi", labels={"app": "guarded"}),
            bound_pod("steady", "n1", "1536Mi", memory_request="2Gi", labels={"app": "steady"}),
            # n2: idle, 6.5Gi: 1.4Gi left (n2's usage: its kubelet's Summary, below)
            bound_pod("idle", "n2", "6656Mi"),
        )
        kubelets.summaries["n2"] = summary_of(
            kubectl, "n2", {"kube-system/agent-n2": 100 * MI, f"{NS}/idle": 6656 * MI}
        )
        yield dev


@pytest.fixture(scope="module")
def metrics_server(cluster: DevCluster) -> Iterator[MetricsServer]:
    """Launched only: the operator starts while it comes up."""
    server = MetricsServer(cluster)
    server.launch()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    apply_crds(kubectl)
    wait_api_group_discovered(kubectl)
    kubectl.apply(namespace("policy-scheduler"), namespace(NS))
    return kubectl


@pytest.fixture(scope="module")
def operator(
    metrics_server: MetricsServer,
    cluster: DevCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    process = OperatorProcess(
        cluster.kubeconfig,
        tmp_path_factory.mktemp("operator") / "operator.log",
        "--node-usage-interval",
        "3s",
        "--kubelet-proxy",
        "--identity",
        "op-a",
    )
    try:
        metrics_server.wait_serving()
        metrics_server.wait_nodes(SCRAPED)
        process.wait_ready()
        yield process
    finally:
        process.stop()


def cli(cluster: DevCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policy_scheduler", *args, "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def operator_explains(operator: OperatorProcess, cluster: DevCluster, name: str, marker: str) -> str | None:
    """The operator's explain of NS/name, once it contains `marker`."""
    result = cli(
        cluster,
        "explain",
        f"{NS}/{name}",
        "--endpoint",
        f"https://127.0.0.1:{operator.port}",
        "--insecure-skip-tls-verify",
    )
    return result.stdout if marker in result.stdout else None


def pressure(cluster: DevCluster, *args: str) -> dict[str, dict[str, Any]]:
    result = cli(cluster, "pressure", "--from-cluster", "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    return {n["name"]: n for n in json.loads(result.stdout)["nodes"]}


# ---- what the kubelet would evict ----------------------------------------------------------------


def test_pressure_and_explain_show_the_kubelets_order(
    operator: OperatorProcess, admin: Kubectl, cluster: DevCluster, kubelets: KubeletStandIn
) -> None:
    # ndisk answers through its kubelet (the stand-in): 5% of nodefs left, below 10%
    kubelets.configs["ndisk"] = {"evictionHard": {"nodefs.available": "10%", "memory.available": "100Mi"}}

    def disk_summary() -> dict[str, Any]:
        stamp = now_rfc3339()
        return {
            "node": {
                "nodeName": "ndisk",
                "memory": {"time": stamp, "availableBytes": 6 * GI, "workingSetBytes": 2 * GI},
                "fs": {"time": stamp, "availableBytes": 5 * GI, "capacityBytes": 100 * GI},
            },
            "pods": [],
        }

    kubelets.summaries["ndisk"] = disk_summary
    # n0's usage rises: its agent's 100Mi, batch's 5Gi (no request) and web's 2922Mi (of a 3Gi
    # request) of 8Gi: 50Mi left, below the default 100Mi
    admin.run("annotate", "pod", "batch", "-n", NS, f"{USAGE_MEMORY_ANNOTATION}=5Gi", "--overwrite")

    def n0_under_pressure() -> dict[str, dict[str, Any]] | None:
        nodes = pressure(cluster, "--kubelet-proxy")
        n0 = nodes["n0"]
        # metrics-server reports a new pod after two scrapes, its node at once: wait for both
        measured = all(p["frees"] is not None for p in n0["evictionOrder"])
        return nodes if n0["underPressure"] == ["memory.available"] and measured else None

    nodes = wait_until("n0 under memory pressure in pressure --from-cluster", n0_under_pressure, timeout=60)
    n0, disk = nodes["n0"], nodes["ndisk"]
    assert (n0["usageSource"], n0["thresholdSource"]) == ("metrics.k8s.io", "kubelet defaults")
    assert n0["conditions"] == ["MemoryPressure"]
    assert [(p["name"], p["victim"], p["neverEvicted"] is None) for p in n0["evictionOrder"]] == [
        ("batch", True, True),
        ("agent-n0", False, False),  # above its (no) request, but critical: never evicted
        ("web", False, True),
    ]
    assert (disk["usageSource"], disk["thresholdSource"]) == ("Summary API", "kubelet /configz")
    assert disk["underPressure"] == ["nodefs.available"]
    assert nodes["n1"]["underPressure"] == []
    assert (nodes["n2"]["usageSource"], nodes["n2"]["underPressure"]) == ("Summary API", [])
    assert ("ndisk", "/configz") in kubelets.requests

    text = wait_until(
        "the operator's explain tells web's standing",
        lambda: operator_explains(operator, cluster, "web", "Pressure: node n0"),
        timeout=30,
    )
    assert "State:    running on n0" in text
    assert "3 of 3 in the order the kubelet evicts pods for memory.available" in text
    assert "not among the pods the kubelet would evict now" in text
    assert f"ahead of it: {NS}/batch, kube-system/agent-n0" in text
    # without the operator: recomputed from the cluster
    result = cli(cluster, "explain", f"{NS}/batch", "--endpoint", "http://127.0.0.1:1", "-o", "json")
    assert result.returncode == 0, result.stderr
    recomputed = json.loads(result.stdout)["pressure"]
    assert (recomputed["position"], recomputed["victim"], recomputed["node"]) == (1, True, "n0")

    placement_is_checked(operator, admin, cluster)

    for name in ("batch", "web"):
        admin.delete("pod", name, NS, wait=True)
    # Until metrics-server has seen them go, a policy would find n0 under pressure (and hold it
    # so for its transition period).
    wait_until("n0's usage back down", lambda: node_memory(admin, "n0") < GI, timeout=30)


def newcomer() -> dict[str, Any]:
    """A pod for n1 only, requesting 3.5Gi of memory where 3484Mi are available (of 8Gi: the
    agent's 100Mi, guarded's 3Gi, steady's 1536Mi used), scheduled by a profile with
    EvictionHeadroom. kwok has it use 1Mi once running."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "newcomer", "namespace": NS},
        "spec": {
            "schedulerName": HEADROOM_SCHEDULER,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"kubernetes.io/hostname": "n1"},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "3584Mi"}},
                }
            ],
        },
    }


def placement_is_checked(operator: OperatorProcess, admin: Kubectl, cluster: DevCluster) -> None:
    """explain says the newcomer's requests push n1 below its eviction threshold (100Mi, the
    kubelet's default), by how much, and what EvictionHeadroom scored: from the operator's
    answer and recomputed."""
    headroom = {"plugins": {"score": {"enabled": [{"name": "EvictionHeadroom", "weight": 1}]}}}
    admin.apply(profile(HEADROOM_SCHEDULER, HEADROOM_SCHEDULER, **headroom))
    wait_until(
        "the EvictionHeadroom profile ready",
        lambda: (
            (condition(admin.get("schedulingprofile", HEADROOM_SCHEDULER), "Ready") or {}).get("status")
            == "True"
        ),
        timeout=30,
    )
    admin.apply(newcomer())
    wait_until(
        "the newcomer bound", lambda: admin.get("pod", "newcomer", NS)["spec"].get("nodeName"), timeout=30
    )

    text = wait_until(
        "the operator's explain checks the newcomer's placement",
        lambda: operator_explains(operator, cluster, "newcomer", "Headroom: placed on n1"),
        timeout=30,
    )
    # -100Mi left, 200Mi short (-101Mi and 201Mi once metrics-server has seen the newcomer's 1Mi)
    assert "would push memory.available on n1 below its eviction threshold (-10" in text, text
    assert "left < 100Mi): 20" in text
    assert "EvictionHeadroom: memory.available: " in text
    assert "score 0 (weight 1)" in text
    result = cli(cluster, "explain", f"{NS}/newcomer", "--endpoint", "http://127.0.0.1:1", "-o", "json")
    assert result.returncode == 0, result.stderr
    [node] = json.loads(result.stdout)["placementPressure"]["nodes"]
    [check] = node["checks"]
    assert (node["node"], node["role"], node["usageSource"]) == ("n1", "chosen", "metrics.k8s.io")
    assert (check["signal"], check["crosses"]) == ("memory.available", True)
    assert check["shortBy"] in (200 * MI, 201 * MI)
    admin.delete("pod", "newcomer", NS, wait=True)


# ---- relief -------------------------------------------------------------------------------------


def relief_policy(*, dry_run: bool) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
        "kind": "EvictionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "dryRun": dry_run,
            "rateLimit": {"evictionsPerMinute": 60, "burst": 10, "perNodePerMinute": 1},
            "protected": [{"podSelector": {"matchLabels": {"app": "steady"}}}],
            "pressureRelief": {
                "thresholds": {"memory.available": "2Gi"},
                "maxUsageAgeSeconds": 15,
                "nodeSelector": {
                    "matchExpressions": [{"key": "relief", "operator": "NotIn", "values": ["off"]}]
                },
            },
        },
    }


def hog_replicaset() -> dict[str, Any]:
    """One pod using 2Gi that prefers n1 (so its replacement would too) and may run on the
    relieved nodes only (n0, n1)."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "relief", "operator": "NotIn", "values": ["off"]}]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                        ]
                    },
                }
            ],
        }
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "hog", "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "hog"}},
            "template": {
                "metadata": {"labels": {"app": "hog"}, "annotations": {USAGE_MEMORY_ANNOTATION: "2Gi"}},
                "spec": {
                    "schedulerName": SCHEDULER,
                    "terminationGracePeriodSeconds": 0,
                    "affinity": affinity,
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}},
                        }
                    ],
                },
            },
        },
    }


def relief_status(admin: Kubectl) -> dict[str, Any]:
    status = admin.get("evictionpolicy", POLICY).get("status") or {}
    return dict(status.get("pressureRelief") or {})


def recent(admin: Kubectl) -> list[dict[str, Any]]:
    status = admin.get("evictionpolicy", POLICY).get("status") or {}
    return list(status.get("recentEvictions") or [])


def results(admin: Kubectl) -> set[tuple[str, str]]:
    return {(e["name"], e["result"]) for e in recent(admin) if e.get("reason") == "NodePressure"}


def hog_pods(admin: Kubectl) -> list[dict[str, Any]]:
    return [p for p in admin.items("pods", NS, "app=hog") if not p["metadata"].get("deletionTimestamp")]


def running(admin: Kubectl, name: str) -> bool:
    found = next((p for p in admin.items("pods", NS) if p["metadata"]["name"] == name), None)
    return found is not None and not found["metadata"].get("deletionTimestamp")


def node_memory(admin: Kubectl, node: str) -> int:
    """The node's memory working set as metrics-server reports it."""
    raw = admin.run("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/nodes/{node}").stdout
    return int(parse_quantity(json.loads(raw)["usage"]["memory"]))


def relief_events(admin: Kubectl) -> list[dict[str, Any]]:
    return [e for e in admin.items("events", NS) if str(e.get("reason", "")).startswith("NodePressureRelief")]


@pytest.fixture
def standby(
    cluster: DevCluster, admin: Kubectl, operator: OperatorProcess, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """A second replica, started once the first holds the Lease: it must not relieve anything."""
    wait_until(
        "op-a holds the Lease",
        lambda: (
            (admin.get("lease", "policy-scheduler", "policy-scheduler").get("spec") or {}).get(
                "holderIdentity"
            )
            == "op-a"
        ),
        timeout=30,
    )
    process = OperatorProcess(
        cluster.kubeconfig, tmp_path / "standby.log", "--node-usage-interval", "3s", "--identity", "op-b"
    )
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def test_relief_evicts_what_the_kubelet_would_first_within_budgets_and_rate_and_never_without_usage(
    admin: Kubectl,
    cluster: DevCluster,
    kubelets: KubeletStandIn,
    operator: OperatorProcess,
    standby: OperatorProcess,
    metrics_server: MetricsServer,
) -> None:
    # n2's kubelet stops answering now: by the time n2 joins the policy, its sample is stale.
    n2_summary = kubelets.summaries.pop("n2")
    # A dry run first: reported, nothing evicted.
    admin.apply(relief_policy(dry_run=True), profile(SCHEDULER, SCHEDULER, evictionPolicyName=POLICY))
    wait_until(
        "the profile and the policy ready",
        lambda: all(
            (condition(admin.get(kind, name), "Ready") or {}).get("status") == "True"
            for kind, name in (("schedulingprofile", SCHEDULER), ("evictionpolicy", POLICY))
        ),
        timeout=30,
    )
    # The hog takes n1 to 0.1 + 3 + 1.5 + 2 = 6.6Gi used, 1.4Gi left < 2Gi: guarded is first in
    # the kubelet's order (3Gi above its request), the hog next (2Gi), steady (within its
    # request, and protected by the policy) last.
    admin.apply(hog_replicaset())
    first = wait_until(
        "the hog bound",
        lambda: next((p for p in hog_pods(admin) if p["spec"].get("nodeName")), None),
        timeout=30,
    )
    assert first["spec"]["nodeName"] == "n1"
    hog = first["metadata"]["name"]
    # The dry run asks the Eviction API with dryRun=All: guarded's budget refuses, as it would
    # for real, and the hog is next.
    wait_until("the dry run's report", lambda: (hog, "WouldEvict") in results(admin), timeout=60)
    assert ("guarded", "BlockedByBudget") in results(admin)
    assert ("guarded", "WouldEvict") not in results(admin)
    assert all(running(admin, name) for name in ("guarded", "steady", hog))
    assert sorted(e["reason"] for e in relief_events(admin)) == [
        "NodePressureReliefBlocked",
        "NodePressureReliefDryRun",
    ]
    n1 = next(n for n in relief_status(admin)["nodes"] if n["name"] == "n1")
    assert (n1["conditions"], n1["signals"]) == (["MemoryPressure"], ["memory.available"])

    # For real: the budget refuses guarded, the hog (next in the order) is evicted once measured.
    admin.patch("evictionpolicy", POLICY, {"spec": {"dryRun": False}})
    wait_until("relief evicted the hog", lambda: (hog, "Evicted") in results(admin), timeout=40)
    assert any(
        e["name"] == "guarded" and e["result"] == "BlockedByBudget" and "(dryRun)" not in e["message"]
        for e in recent(admin)
    )
    assert running(admin, "guarded")
    assert running(admin, "steady")
    entry = next(e for e in recent(admin) if e["name"] == hog and e["result"] == "Evicted")
    assert (entry["node"], entry["signal"]) == ("n1", "memory.available")
    evicted = [e for e in relief_events(admin) if e["reason"] == "NodePressureRelief"]
    assert [e["involvedObject"]["name"] for e in evicted] == [hog]
    # only the leader acts
    assert all(e["reportingInstance"].endswith("-op-a") for e in relief_events(admin))

    # the replacement keeps off n1 while relief holds it under pressure, though it prefers n1
    def replacement() -> str | None:
        pods = [p for p in hog_pods(admin) if p["metadata"]["name"] != hog and p["spec"].get("nodeName")]
        return pods[0]["spec"]["nodeName"] if pods else None

    placed = wait_until("the hog's replacement bound", replacement, timeout=30)
    assert placed == "n0"

    # More pressure on n1 (steady: 4.5Gi): the policy allows one eviction per node and minute, so
    # guarded, first in the order, is rate-limited before its budget is asked.
    admin.run("annotate", "pod", "steady", "-n", NS, f"{USAGE_MEMORY_ANNOTATION}=4608Mi", "--overwrite")
    wait_until("n1 rate-limited", lambda: ("guarded", "RateLimited") in results(admin), timeout=30)
    assert running(admin, "steady")
    leader_metrics, standby_metrics = operator.metrics(), standby.metrics()
    evictions = "policy_scheduler_pressure_relief_evictions_total"
    assert metric_sample(leader_metrics, evictions, policy=POLICY, result="evicted") == 1.0
    for result in ("dry_run", "blocked_by_budget", "rate_limited"):
        assert (metric_sample(leader_metrics, evictions, policy=POLICY, result=result) or 0) >= 1, result
    assert metric_sample(standby_metrics, evictions, policy=POLICY, result="evicted") is None
    assert metric_sample(standby_metrics, "policy_scheduler_leader") == 0.0

    # Usage data gone: n2 joins the policy (its per-node limit untouched) with only a sample older
    # than maxUsageAgeSeconds, which shows pressure. Nothing is evicted until usage is back.
    admin.run("label", "node", "n2", "relief=on", "--overwrite")
    wait_until(
        "n2 relieved, without fresh usage",
        lambda: "n2" in relief_status(admin).get("nodesWithoutUsage", []),
        timeout=30,
    )
    holds_for("idle not evicted", lambda: running(admin, "idle"), 4.0)
    assert ("idle", "Evicted") not in results(admin)
    kubelets.summaries["n2"] = n2_summary
    wait_until("idle evicted once usage is back", lambda: ("idle", "Evicted") in results(admin), timeout=30)
