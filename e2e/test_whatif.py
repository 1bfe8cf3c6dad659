"""`policy-scheduler simulate --from-cluster` against the real control plane, next to the
session's operator: what-if predicts the placements the operator then makes, reports a victim a
PodDisruptionBudget protects, `--diff` shows only what a changed profile changes, and the whole
run needs nothing but get/list (it runs as a read-only ServiceAccount).

Each test has its own namespace, schedulerName and tainted kwok nodes that only its pods
tolerate and select (required node affinity), so other pods and nodes never interfere.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures_operator import OperatorProcess
from kubectl import Kubectl, condition, namespace, pod, profile, wait_for
from policy_scheduler.devcluster.cluster import DevCluster

API = "scheduling.policy-scheduler.io/v1alpha1"
NODE_LABEL = "e2e-whatif"
READER = "whatif-reader"


def run_whatif(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "policy_scheduler", "--log-level", "WARNING", "simulate"]
    cmd += ["--from-cluster", "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def whatif_json(kubeconfig: Path, *args: str) -> dict[str, Any]:
    result = run_whatif(kubeconfig, "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


class Scene:
    """One test's namespace, tainted nodes and schedulerName."""

    def __init__(self, kubectl: Kubectl, cluster: DevCluster, tag: str) -> None:
        self.kubectl, self.cluster, self.tag = kubectl, cluster, tag
        self.ns = f"e2e-whatif-{tag}"
        self.scheduler = f"whatif-{tag}"
        self.nodes: list[str] = []
        self.cluster_objects: list[tuple[str, str]] = []  # (kind, name) to delete at the end
        kubectl.apply(namespace(self.ns))

    def add_node(self, name: str, cpu: str, memory: str) -> str:
        [node] = self.cluster.create_nodes(
            1, prefix=f"wi-{self.tag}-{name}", cpu=cpu, memory=memory, labels={NODE_LABEL: self.tag}
        )
        self.kubectl.run("taint", "nodes", node, f"{NODE_LABEL}={self.tag}:NoSchedule", "--overwrite")
        self.nodes.append(node)
        return node

    def pod(self, name: str, cpu: str, memory: str, **kw: Any) -> dict[str, Any]:
        manifest = pod(name, self.ns, self.scheduler, cpu=cpu, memory=memory, **kw)
        spec = manifest["spec"]
        spec["tolerations"] = [
            {"key": NODE_LABEL, "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
        ]
        term = {"matchExpressions": [{"key": NODE_LABEL, "operator": "In", "values": [self.tag]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
        return manifest

    def priority_class(self, short: str, value: int) -> str:
        name = f"e2e-whatif-{self.tag}-{short}"
        self.kubectl.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
        self.cluster_objects.append(("priorityclass", name))
        return name

    def node_of(self, name: str) -> str:
        return str(self.kubectl.get("pod", name, self.ns)["spec"].get("nodeName") or "")

    def cleanup(self) -> None:
        self.kubectl.delete("namespace", self.ns)
        for kind, name in self.cluster_objects:
            self.kubectl.delete(kind, name)
        for node in self.nodes:
            self.kubectl.delete("node", node)


@pytest.fixture
def scene(kubectl: Kubectl, dev_cluster: DevCluster, request: pytest.FixtureRequest) -> Iterator[Scene]:
    tag = request.node.name.removeprefix("test_").replace("_", "-")[:20].strip("-")
    s = Scene(kubectl, dev_cluster, tag)
    try:
        yield s
    finally:
        s.cleanup()


@pytest.fixture(scope="module")
def reader_kubeconfig(kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A ServiceAccount that may only get, list and watch: any write would be refused."""
    kubectl.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": READER, "namespace": "default"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": READER},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": READER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
            "subjects": [{"kind": "ServiceAccount", "name": READER, "namespace": "default"}],
        },
    )
    token = kubectl.run("create", "token", READER, "-n", "default", "--duration=1h").stdout.strip()
    config = yaml.safe_load(kubectl.kubeconfig.read_text())
    config["users"] = [{"name": READER, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = READER
    path = tmp_path_factory.mktemp("whatif") / "reader.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    reader = Kubectl(path)
    assert reader.run("auth", "can-i", "create", "pods", check=False).stdout.strip() == "no"
    assert reader.run("auth", "can-i", "list", "pods", "-A").stdout.strip() == "yes"
    yield path
    for kind, name in (("clusterrolebinding", READER), ("clusterrole", READER)):
        kubectl.delete(kind, name)
    kubectl.delete("serviceaccount", READER, "default")


def write(tmp_path: Path, name: str, *objects: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return path


def binpack_profile(name: str, scheduler: str) -> dict[str, Any]:
    args = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    }
    return profile(name, scheduler, pluginConfig=[{"name": "NodeResourcesFit", "args": args}])


def test_predicts_what_the_operator_then_does(
    scene: Scene,
    kubectl: Kubectl,
    operator_process: OperatorProcess,
    reader_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    # Nodes and pods keep cpu:memory at 1:2, so only MostAllocated tells the nodes apart: the
    # small node is the fullest whatever order the pods come in.
    small = scene.add_node("small", cpu="4", memory="8Gi")
    scene.add_node("large", cpu="16", memory="32Gi")
    pods = [scene.pod(f"p{i}", cpu="1", memory="2Gi") for i in range(3)]
    kubectl.apply(*pods, scene.pod("huge", cpu="64", memory="128Gi"))
    name = f"e2e-whatif-{scene.tag}"
    profile_file = write(tmp_path, "profile.yaml", binpack_profile(name, scene.scheduler))
    scene.cluster_objects.append(("schedulingprofile", name))

    # Before any profile serves the schedulerName, what-if with the profile applied in memory,
    # as an identity that can only read.
    predicted = whatif_json(reader_kubeconfig, "--namespace", scene.ns, "--apply", str(profile_file))
    by_name = {p["name"]: p for p in predicted["pods"]}
    assert set(by_name) == {"p0", "p1", "p2", "huge"}
    assert {by_name[f"p{i}"]["node"] for i in range(3)} == {small}
    assert by_name["huge"]["node"] is None
    assert "Insufficient cpu" in by_name["huge"]["message"]
    assert all(not scene.node_of(p["metadata"]["name"]) for p in pods), "what-if must change nothing"

    kubectl.apply(binpack_profile(name, scene.scheduler))
    for i in range(3):
        wait_for(f"p{i} bound", functools.partial(scene.node_of, f"p{i}"), timeout=60)
        assert scene.node_of(f"p{i}") == by_name[f"p{i}"]["node"]
    assert scene.node_of("huge") == ""


def eviction_policy(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "EvictionPolicy", "metadata": {"name": name}, "spec": spec}


def place(scene: Scene, name: str, node: str, pc: str, cpu: str, labels: dict[str, str]) -> None:
    manifest = scene.pod(name, cpu=cpu, memory="1Gi", labels=labels, priority_class=pc)
    manifest["spec"]["nodeName"] = node
    scene.kubectl.apply(manifest)
    wait_for(
        f"{name} running",
        lambda: scene.kubectl.get("pod", name, scene.ns)["status"].get("phase") == "Running" or None,
    )


def test_reports_a_victim_its_budget_protects(
    scene: Scene, kubectl: Kubectl, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    node = scene.add_node("only", cpu="4", memory="16Gi")
    low, high = scene.priority_class("low", 100), scene.priority_class("high", 1000)
    place(scene, "guarded", node, low, "3", {"app": "guarded"})
    kubectl.apply(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guarded", "namespace": scene.ns},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
        }
    )
    kubectl.apply(scene.pod("vip", cpu="3", memory="1Gi", priority_class=high))
    name = f"e2e-whatif-{scene.tag}"
    policy_file = write(
        tmp_path,
        "policy.yaml",
        eviction_policy(name, budgetMode="Enforce"),
        profile(name, scene.scheduler, evictionPolicyName=name),
    )

    result = whatif_json(kubectl.kubeconfig, "--namespace", scene.ns, "--apply", str(policy_file))
    [vip] = [p for p in result["pods"] if p["name"] == "vip"]
    assert vip["node"] is None, vip
    assert "would violate a PodDisruptionBudget" in vip["message"]
    assert vip["victims"] == [{"pod": f"{scene.ns}/guarded", "verdict": "blockedByBudget"}]
    assert "preempted" not in vip
    assert scene.node_of("guarded") == node

    # The same under BestEffort: kube-scheduler's behaviour, the victim is deleted anyway.
    policy_file = write(
        tmp_path,
        "best-effort.yaml",
        eviction_policy(name, budgetMode="BestEffort"),
        profile(name, scene.scheduler, evictionPolicyName=name),
    )
    result = whatif_json(kubectl.kubeconfig, "--namespace", scene.ns, "--apply", str(policy_file))
    pods = {p["name"]: p for p in result["pods"]}
    assert pods["vip"]["node"] == node
    assert pods["vip"]["victims"] == [{"pod": f"{scene.ns}/guarded", "verdict": "deletedDespiteBudget"}]
    assert pods["guarded"]["node"] is None


def test_diff_shows_only_what_a_changed_profile_changes(
    scene: Scene, kubectl: Kubectl, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    node = scene.add_node("only", cpu="4", memory="16Gi")
    low, high = scene.priority_class("low", 100), scene.priority_class("high", 1000)
    place(scene, "victim", node, low, "3", {"app": "victim"})
    name = f"e2e-whatif-{scene.tag}"
    # In force: a profile whose EvictionPolicy does not exist, so it preempts nothing.
    kubectl.apply(profile(name, scene.scheduler, evictionPolicyName="missing"))
    scene.cluster_objects.append(("schedulingprofile", name))
    kubectl.apply(
        scene.pod("vip", cpu="3", memory="1Gi", priority_class=high),
        scene.pod("huge", cpu="64", memory="1Gi", priority_class=high),
    )
    wait_for("vip rejected by the operator", lambda: _unschedulable(kubectl, scene.ns, "vip"))

    changed = write(tmp_path, "changed.yaml", profile(name, scene.scheduler))  # the default policy
    result = whatif_json(kubectl.kubeconfig, "--namespace", scene.ns, "--apply", str(changed), "--diff")
    changes = {c["name"]: c for c in result["changes"]}
    assert set(changes) == {"vip", "victim"}, result  # huge stays pending either way
    assert changes["vip"]["before"]["node"] is None
    assert changes["vip"]["after"]["node"] == node
    assert changes["vip"]["after"]["preempts"] == [f"{scene.ns}/victim"]
    assert changes["victim"]["before"] == {
        "node": node,
        "nominatedNode": None,
        "preempted": False,
        "message": None,
    }
    assert changes["victim"]["after"]["preempted"] is True

    table = run_whatif(kubectl.kubeconfig, "--namespace", scene.ns, "--apply", str(changed), "--diff")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:4] == ["NAMESPACE", "NAME", "BEFORE", "AFTER"]
    assert len(lines) == 3
    assert not any(" huge " in line for line in lines)
    assert "diff: 2 pod(s) change outcome" in table.stderr
    assert scene.node_of("victim") == node
    assert scene.node_of("vip") == ""


def _unschedulable(kubectl: Kubectl, ns: str, name: str) -> bool | None:
    conditions = kubectl.get("pod", name, ns).get("status", {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions) or None


def test_invalid_apply_is_bad_input(
    kubectl: Kubectl, operator_process: OperatorProcess, tmp_path: Path
) -> None:
    bad = write(tmp_path, "bad.yaml", profile("e2e-whatif-bad", "whatif-bad", podMaxBackoffSeconds=-1))
    result = run_whatif(kubectl.kubeconfig, "--apply", str(bad))
    assert result.returncode == 2
    assert f"{bad}:SchedulingProfile/e2e-whatif-bad:spec.podMaxBackoffSeconds:" in result.stderr


def test_an_invalid_generation_leaves_the_last_accepted_spec_in_force(
    scene: Scene, kubectl: Kubectl, operator_process: OperatorProcess
) -> None:
    scene.add_node("only", cpu="4", memory="8Gi")
    name = f"e2e-whatif-{scene.tag}"
    kubectl.apply(profile(name, scene.scheduler))
    scene.cluster_objects.append(("schedulingprofile", name))
    # The API server stores this generation; the operator rejects it and keeps generation 1.
    broken = profile(
        name, scene.scheduler, plugins={"score": {"enabled": [{"name": "NoSuchPlugin", "weight": 1}]}}
    )
    kubectl.apply(broken)

    def persisted() -> bool | None:
        status = kubectl.get("schedulingprofile", name).get("status") or {}
        accepted = condition(kubectl.get("schedulingprofile", name), "Accepted")
        rejected = accepted is not None and accepted["status"] == "False"
        return (rejected and status.get("lastAcceptedGeneration") == 1) or None

    wait_for("generation 2 rejected, generation 1 persisted", persisted, timeout=30)
    kubectl.apply(scene.pod("huge", cpu="64", memory="1Gi"))
    result = run_whatif(kubectl.kubeconfig, "-o", "json", "--namespace", scene.ns)
    assert result.returncode == 0, result.stderr
    [huge] = json.loads(result.stdout)["pods"]
    assert "Insufficient cpu" in huge["message"], "served by generation 1, not 'no SchedulingProfile'"
    assert (
        f"SchedulingProfile {name}: generation 2 was rejected; generation 1 stays in force" in result.stderr
    )
