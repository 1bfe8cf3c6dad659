"""Issue 33 on the real control plane: the operator reads the API server's version at start and
decides as that release's kube-scheduler; --emulated-version decides as another release; a
profile's feature gate the release does not have is refused with the release's words.

The scenario is one pod and two nodes where NodeResourcesBalancedAllocation's v1.36 change
(scoring the balance a pod brings, not the balance after it) picks the other node: the session
cluster's own kube-scheduler release and our operator must agree, and an operator emulating a
release on the other side of that change must not.
"""

from __future__ import annotations

import functools
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import ISOLATED_LABEL, OperatorProcess
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.parity.api import ClusterApi
from policy_scheduler.parity.generator import KWOK_ANNOTATION
from policy_scheduler.parity.kubesched import KubeScheduler
from policy_scheduler.scheduler.versioning.version import V1_35, V1_37, KubernetesVersion
from polling import wait_until

REFERENCE_SCHEDULER = "parity-default"  # kube-scheduler's default profile (parity/profiles.py)
# Where the pod goes (checked with `simulate` when the scenario was chosen): v1.35 scores the
# balance after placing it, from v1.36 the balance it brings.
BALANCE_AFTER_NODE, BALANCE_GAIN_NODE = "n2", "n1"


def _node(name: str, run: str, cpu: str, memory: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "20"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"{run}-{name}",
            "labels": {"kubernetes.io/hostname": f"{run}-{name}", "versions-e2e": run},
            "annotations": {KWOK_ANNOTATION: "fake"},
        },
        "spec": {},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def _pod(
    name: str, ns: str, run: str, scheduler: str, cpu: str, memory: str, node: str = ""
) -> dict[str, Any]:
    extra: dict[str, Any] = {"nodeSelector": {"versions-e2e": run}}  # never the session's other nodes
    if node:
        extra["nodeName"] = node
    return pod(name, ns, scheduler, cpu=cpu, memory=memory, extra_spec=extra)


def _release(kubeconfig: Path) -> tuple[str, KubernetesVersion]:
    git_version = str(ClusterApi.from_kubeconfig(kubeconfig).api.get("/version")["gitVersion"])
    return git_version, KubernetesVersion.parse(git_version)


def _balance_node(release: KubernetesVersion, run: str) -> str:
    return f"{run}-{BALANCE_AFTER_NODE if release < KubernetesVersion(1, 36) else BALANCE_GAIN_NODE}"


def _node_of(kubectl: Kubectl, name: str, ns: str) -> str | None:
    node: str | None = kubectl.get("pod", name, ns)["spec"].get("nodeName")
    return node


def _placed(kubectl: Kubectl, obj: dict[str, Any]) -> str:
    """Create the pod `obj`, wait until it is bound, delete it (so the next pod sees the same nodes)."""
    name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
    kubectl.create(obj)
    node = wait_until(f"{name} bound", functools.partial(_node_of, kubectl, name, ns), timeout=60)
    kubectl.delete("pod", name, ns, wait=True)
    return node


def _ready_profile(kubectl: Kubectl, name: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        obj: dict[str, Any] = kubectl.get("schedulingprofile", name)
        return obj if (condition(obj, "Ready") or {}).get("status") == "True" else None

    return wait_until(f"profile {name} Ready", ready, timeout=60)


@pytest.fixture
def scene(kubectl: Kubectl) -> Iterator[tuple[str, str]]:
    """Two nodes of our own and a pod already on the first: (run, namespace)."""
    run = f"kv{secrets.token_hex(3)}"
    ns = run
    nodes = [_node("n1", run, "2", "16Gi"), _node("n2", run, "2", "8Gi")]
    kubectl.apply(namespace(ns))
    kubectl.create(*nodes)
    try:
        kubectl.create(_pod("resident", ns, run, "unused", "1m", "2Gi", node=f"{run}-n1"))
        yield run, ns
    finally:
        kubectl.delete("namespace", ns)
        for node in nodes:
            kubectl.delete("node", node["metadata"]["name"])


def test_the_operator_decides_as_the_clusters_release(
    dev_cluster: DevCluster,
    operator_process: OperatorProcess,
    kubectl: Kubectl,
    kubeconfig: Path,
    scene: tuple[str, str],
    tmp_path: Path,
) -> None:
    run, ns = scene
    git_version, release = _release(kubeconfig)
    scheduler = f"{run}-scheduler"
    kubectl.apply(profile(run, scheduler, percentageOfNodesToScore=100))
    try:
        status = _ready_profile(kubectl, run)["status"]
        version = condition({"status": status}, "KubernetesVersion") or {}
        assert version.get("status") == "True", version
        assert version.get("reason") == "Supported", version
        assert git_version in version.get("message", ""), version
        assert status["kubernetesVersion"] == str(release)

        ours = _placed(kubectl, _pod("ours", ns, run, scheduler, "1500m", "2Gi"))
    finally:
        kubectl.delete("schedulingprofile", run)
    with KubeScheduler(kubeconfig, tmp_path, dev_cluster.versions):
        reference = _placed(kubectl, _pod("reference", ns, run, REFERENCE_SCHEDULER, "1500m", "2Gi"))
    assert ours == reference == _balance_node(release, run)


def test_emulated_version_decides_as_that_release(
    kubectl: Kubectl, kubeconfig: Path, scene: tuple[str, str], tmp_path: Path
) -> None:
    run, ns = scene
    git_version, release = _release(kubeconfig)
    emulated = V1_37 if release < KubernetesVersion(1, 36) else V1_35  # across the balance change
    operator = OperatorProcess(
        kubeconfig,
        tmp_path / "operator.log",
        "--no-leader-elect",
        "--profile-selector",
        f"{ISOLATED_LABEL}={run}",
        "--emulated-version",
        str(emulated),
    )
    scheduler = f"{run}-scheduler"
    obj = profile(run, scheduler, percentageOfNodesToScore=100)
    obj["metadata"]["labels"] = {ISOLATED_LABEL: run}
    try:
        operator.wait_ready()
        kubectl.apply(obj)
        status = _ready_profile(kubectl, run)["status"]
        version = condition({"status": status}, "KubernetesVersion") or {}
        assert (version.get("status"), version.get("reason")) == ("True", "Emulated"), version
        assert git_version in version.get("message", ""), version
        assert status["kubernetesVersion"] == str(emulated)

        node = _placed(kubectl, _pod("emulated", ns, run, scheduler, "1500m", "2Gi"))
        assert node == _balance_node(emulated, run) != _balance_node(release, run)
    finally:
        kubectl.delete("schedulingprofile", run)
        operator.stop()


def test_a_gate_the_release_lacks_is_refused(
    operator_process: OperatorProcess, kubectl: Kubectl, kubeconfig: Path
) -> None:
    """CSIMigrationPortworx is gone from v1.36 (locked on in v1.35); on a newer cluster a profile
    setting it is refused, saying which release has it, and nothing is put in force."""
    _, release = _release(kubeconfig)
    if release < KubernetesVersion(1, 36):
        pytest.skip("v1.35 still has CSIMigrationPortworx")
    name = f"kvgate{secrets.token_hex(3)}"
    kubectl.apply(profile(name, f"{name}-scheduler", featureGates={"CSIMigrationPortworx": True}))
    try:

        def refused() -> dict[str, Any] | None:
            accepted = condition(kubectl.get("schedulingprofile", name), "Accepted")
            return accepted if accepted and accepted.get("status") == "False" else None

        accepted = wait_until(f"profile {name} refused", refused, timeout=60)
        message = accepted.get("message", "")
        assert "unrecognized feature gate: CSIMigrationPortworx" in message, accepted
        assert f"Kubernetes {release} does not have it" in message, accepted
    finally:
        kubectl.delete("schedulingprofile", name)


def test_run_refuses_a_gate_the_clusters_release_lacks(kubeconfig: Path) -> None:
    """--feature-gates is checked against the API server's release once it is read: the operator
    stops at start with one line naming the gate and the releases that have it."""
    _, release = _release(kubeconfig)
    if release < KubernetesVersion(1, 36):
        pytest.skip("v1.35 still has CSIMigrationPortworx")
    cmd = [
        sys.executable,
        "-m",
        "policy_scheduler",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--no-leader-elect",
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        "0",
        "--feature-gates",
        "CSIMigrationPortworx=true",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: --feature-gates: unrecognized feature gate: CSIMigrationPortworx "
        f"(Kubernetes {release} does not have it; v1.35 has it)"
    ), done.stderr[-2000:]
