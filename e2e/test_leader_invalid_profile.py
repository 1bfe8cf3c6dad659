"""Issue 11: a leader change while a profile's stored spec is invalid. The new leader never saw
the valid generation (it starts after the update): it schedules the profile's pods with the
spec persisted in status.lastAcceptedSpec."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import ISOLATED_LABEL, OperatorProcess
from kubectl import Kubectl, condition, namespace, pod, profile
from polling import wait_until

NS = "e2e-leader-invalid"
TAG = "leader-invalid"
SCHEDULER = "leader-invalid-scheduler"
PROFILE = "leader-invalid"
LEASE = "e2e-leader-invalid-lease"
HOSTNAME = "kubernetes.io/hostname"


def replica(kubeconfig: Path, log: Path, identity: str) -> OperatorProcess:
    return OperatorProcess(
        kubeconfig,
        log,
        "--lease-namespace",
        NS,
        "--lease-name",
        LEASE,
        "--identity",
        identity,
        "--profile-selector",
        f"{ISOLATED_LABEL}={TAG}",
    )


def holder(kubectl: Kubectl) -> str:
    lease = kubectl.run("get", "lease", LEASE, "-n", NS, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return lease.stdout.strip() if lease.returncode == 0 else ""


def untainted_node(kubectl: Kubectl) -> str:
    nodes = [
        n
        for n in kubectl.items("nodes")
        if not n["spec"].get("taints") and not n["spec"].get("unschedulable")
    ]
    assert nodes, "the dev cluster has an untainted node"
    return str(sorted(n["metadata"]["name"] for n in nodes)[-1])


def pinned_profile(node: str) -> dict[str, Any]:
    """Valid, and recognisable: NodeAffinity's addedAffinity pins its pods to `node`."""
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    args = {
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    obj = profile(PROFILE, SCHEDULER, pluginConfig=[{"name": "NodeAffinity", "args": args}])
    obj["metadata"]["labels"] = {ISOLATED_LABEL: TAG}
    return obj


@pytest.fixture
def replicas(kubeconfig: Path, kubectl: Kubectl, tmp_path: Path) -> Iterator[dict[str, OperatorProcess]]:
    kubectl.apply(namespace(NS))
    started: dict[str, OperatorProcess] = {}
    try:
        yield started
    finally:
        for process in started.values():
            process.stop()
        kubectl.delete("schedulingprofile", PROFILE)
        kubectl.delete("namespace", NS)


def test_new_leader_schedules_on_the_persisted_spec_of_an_invalid_profile(
    kubeconfig: Path, kubectl: Kubectl, replicas: dict[str, OperatorProcess], tmp_path: Path
) -> None:
    node = untainted_node(kubectl)
    replicas["op-a"] = replica(kubeconfig, tmp_path / "op-a.log", "op-a")
    replicas["op-a"].wait_ready()
    wait_until("op-a leads", lambda: holder(kubectl) == "op-a", timeout=60)
    kubectl.apply(pinned_profile(node))

    def profile_status(check: Any) -> Any:
        obj = kubectl.get("schedulingprofile", PROFILE)
        return obj if obj.get("status") and check(obj) else None

    wait_until(
        "generation 1 accepted and persisted",
        lambda: profile_status(lambda o: o["status"].get("lastAcceptedGeneration") == 1),
        timeout=30,
    )
    kubectl.patch(
        "schedulingprofile",
        PROFILE,
        {"spec": {"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}},
    )
    wait_until(
        "generation 2 rejected",
        lambda: profile_status(
            lambda o: (
                o["status"].get("observedGeneration") == 2
                and (condition(o, "Accepted") or {}).get("status") == "False"
            )
        ),
        timeout=30,
    )

    # The standby starts now: generation 1 exists for it only in the status.
    replicas["op-b"] = replica(kubeconfig, tmp_path / "op-b.log", "op-b")
    replicas["op-b"].wait_ready()
    os.killpg(replicas["op-a"].proc.pid, signal.SIGKILL)
    replicas["op-a"].proc.wait()
    kubectl.create(*(pod(f"after-{i}", NS, SCHEDULER) for i in range(4)))
    wait_until("op-b leads", lambda: holder(kubectl) == "op-b", timeout=60)

    def bound() -> list[str] | None:
        nodes = [p["spec"].get("nodeName") for p in kubectl.items("pods", NS)]
        return nodes if len(nodes) == 4 and all(nodes) else None

    assert wait_until("pods bound by the new leader", bound, timeout=60) == [node] * 4
    stalled = wait_until(
        "the new leader reports the restored generation",
        lambda: profile_status(
            lambda o: (
                "restored from status.lastAcceptedSpec"
                in ((condition(o, "Stalled") or {}).get("message") or "")
            )
        ),
        timeout=30,
    )
    assert stalled["status"]["lastAcceptedGeneration"] == 1
    assert (condition(stalled, "Accepted") or {}).get("status") == "False"
    assert "policy_scheduler_leader 1.0" in replicas["op-b"].metrics()
