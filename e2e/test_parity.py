"""Issue 4's differential tests on the real control plane.

1. Random scenarios, pod by pod, against the kube-scheduler of the session cluster's release
   (v1.37.2 by default): every decision agrees, our core deciding for that release as the
   operator does on that cluster.
2. `policy-scheduler simulate` predicts what the operator (`policy-scheduler run`) does.
"""

from __future__ import annotations

import functools
import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kubectl import Kubectl, condition, namespace, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.parity.api import ClusterApi
from policy_scheduler.parity.cli import scenario_seed
from policy_scheduler.parity.generator import KWOK_ANNOTATION, Scenario, generate
from policy_scheduler.parity.kubesched import KubeScheduler
from policy_scheduler.parity.profiles import reference_features
from policy_scheduler.parity.report import Tally, describe
from policy_scheduler.parity.runner import Runner
from policy_scheduler.scheduler.versioning.version import KubernetesVersion
from polling import wait_until

SCENARIOS = 30
SEED = 4


def cluster_release(api: ClusterApi) -> KubernetesVersion:
    """The dev cluster's Kubernetes release: the operator decides as its kube-scheduler does."""
    return KubernetesVersion.parse(str(api.api.get("/version")["gitVersion"]))


def test_random_scenarios_agree_with_kube_scheduler(dev_cluster: DevCluster, tmp_path: Path) -> None:
    run_id = f"e{secrets.token_hex(2)}"
    tally = Tally()
    with_dra = 0
    kubeconfig = dev_cluster.kubeconfig
    api = ClusterApi.from_kubeconfig(kubeconfig)
    with KubeScheduler(kubeconfig, tmp_path, dev_cluster.versions) as log:
        runner = Runner(api, log, reference_features(dev_cluster.versions))
        for k in range(SCENARIOS):
            scenario = generate(scenario_seed(SEED, k), f"{run_id}-{k}-")
            with_dra += bool(scenario.dra)
            tally.add(runner.run(scenario))
    # DRA scenarios (claims of every shape, parity/dra_scenarios.py) are among them, and each
    # cleans up its slices, classes and claims, so the next one starts from a clean claim state
    assert with_dra >= 3
    left = [o["metadata"] for o in api.dra_objects() if run_id in json.dumps(o["metadata"])]
    assert not left
    report = "\n".join(describe(r, p) for r, p in tally.disagreements)
    assert tally.scenarios == SCENARIOS
    assert tally.judged >= SCENARIOS, tally.summary()
    assert tally.scored > 0, tally.summary()
    assert tally.inconclusive == 0, tally.summary()
    assert tally.full == tally.judged, f"{tally.summary()}\n{report}"


def _bare_node(name: str, cpu: str, memory: str, label: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "parity-e2e": label},
            "annotations": {KWOK_ANNOTATION: "fake"},
        },
        "spec": {},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def test_pod_level_requests_in_fit_score(dev_cluster: DevCluster, kubeconfig: Path, tmp_path: Path) -> None:
    """The first disagreement the harness found (docs/parity.md): NodeResourcesFit scores the
    containers' requests even when pod-level requests are set (v1.35.4 to v1.37.2 alike), so it
    runs against the session cluster's release."""
    label = f"pl{secrets.token_hex(2)}"
    run, ns = f"{label}-", f"{label}-ns"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": {
            "schedulerName": "parity-weights",  # no NodeResourcesBalancedAllocation: Fit decides
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"parity-e2e": label},
            "resources": {"requests": {"cpu": "3"}},
            "containers": [
                {
                    "name": "c",
                    "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }
    scenario = Scenario(
        seed=0,
        scheduler_name="parity-weights",
        prefix=run,
        namespaces=[namespace(ns)],
        nodes=[_bare_node(f"{run}n1", "4", "64Gi", label), _bare_node(f"{run}n2", "8", "4Gi", label)],
        pending=[pod],
    )
    with KubeScheduler(kubeconfig, tmp_path, dev_cluster.versions) as log:
        api = ClusterApi.from_kubeconfig(kubeconfig)
        result = Runner(api, log, reference_features(dev_cluster.versions)).run(scenario)
    (judged,) = result.pods
    assert judged.reference.node == f"{run}n1"  # scored by the containers' 100m
    assert judged.verdict.full, describe(result, judged)


# ---- simulate vs the operator ----------------------------------------------------------------


def _node(name: str, run: str, zone: str, cpu: str, memory: str, **extra: Any) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "20"}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone, "parity-e2e": run}
    labels.update(extra.get("labels", {}))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {"taints": extra["taints"]} if "taints" in extra else {},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def _pod(name: str, ns: str, scheduler: str, run: str, app: str, cpu: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"parity-e2e": run},  # never the session's other nodes
            "containers": [container],
            **spec,
        },
    }


def _scenario(run: str, ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes and pods whose best node is unique at every step (checked below with many seeds)."""
    n0, n1, n2 = (f"{run}-n{i}" for i in range(3))
    nodes = [
        _node(n0, run, "zone-a", "8", "16Gi", labels={"disk": "ssd"}),
        _node(
            n1,
            run,
            "zone-b",
            "4",
            "8Gi",
            taints=[{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}],
        ),
        _node(
            n2,
            run,
            "zone-c",
            "16",
            "32Gi",
            taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
        ),
    ]
    infra = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    web = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    pods = [
        _pod("a", ns, scheduler, run, "web", "1"),
        _pod(
            "b",
            ns,
            scheduler,
            run,
            "web",
            "500m",
            tolerations=[{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}],
            affinity={
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": web}
                    ]
                }
            },
        ),
        _pod("c", ns, scheduler, run, "db", "2", tolerations=infra),
        _pod(
            "d",
            ns,
            scheduler,
            run,
            "web",
            "1",
            tolerations=infra,
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
        ),
        _pod(
            "e",
            ns,
            scheduler,
            run,
            "cache",
            "250m",
            tolerations=infra,
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "db"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
        ),
    ]
    return nodes, pods


def _simulate(path: Path, seed: int, release: KubernetesVersion) -> dict[str, str | None]:
    cmd = [
        sys.executable,
        "-m",
        "policy_scheduler",
        "simulate",
        str(path),
        "-o",
        "json",
        "--seed",
        str(seed),
        "--kubernetes-version",  # the operator follows the cluster's release
        str(release),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    return {p["name"]: p["node"] for p in json.loads(out)["pods"]}


def test_simulate_predicts_the_operator(
    operator_process: Any, kubectl: Kubectl, kubeconfig: Path, tmp_path: Path
) -> None:
    release = cluster_release(ClusterApi.from_kubeconfig(kubeconfig))
    run = f"pe{secrets.token_hex(3)}"
    ns, scheduler = run, f"{run}-scheduler"
    nodes, pods = _scenario(run, ns, scheduler)
    prof = profile(run, scheduler, percentageOfNodesToScore=100)
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(yaml.safe_dump_all([namespace(ns), prof, *nodes, *pods], sort_keys=False))

    predictions = [_simulate(scenario_file, seed, release) for seed in range(6)]
    assert all(p == predictions[0] for p in predictions), (
        f"ties: the scenario is not seed-free: {predictions}"
    )
    predicted = predictions[0]
    assert all(predicted.values()), predicted

    kubectl.apply(namespace(ns))
    kubectl.create(*nodes)
    try:
        kubectl.apply(prof)
        wait_until(
            "profile Ready",
            lambda: (condition(kubectl.get("schedulingprofile", run), "Ready") or {}).get("status") == "True",
            timeout=30,
        )
        placed: dict[str, str | None] = {}

        def node_of(name: str) -> str | None:
            node: str | None = kubectl.get("pod", name, ns)["spec"].get("nodeName")
            return node

        for p in pods:  # one at a time, as simulate orders pods of equal priority
            kubectl.create(p)
            name = p["metadata"]["name"]
            placed[name] = wait_until(f"{name} bound", functools.partial(node_of, name), timeout=30)
        assert placed == predicted
    finally:
        kubectl.delete("namespace", ns)
        kubectl.delete("schedulingprofile", run)
        for node in nodes:
            kubectl.delete("node", node["metadata"]["name"])
