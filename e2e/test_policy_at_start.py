"""Policy at start-up, through the one way profiles reach the scheduler (its informer):

- a profile applied before the operator starts is in force at its first bind;
- a profile deleted while the operator was down is not served after the restart;
- a profile changed while the operator runs applies to the next pod.

The test runs its own operator process (profiles labelled e2e-isolated=polstart), so it can be
stopped and started; the session operator ignores these profiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import ISOLATED_LABEL, OperatorProcess, apply_crds
from kubectl import Kubectl, fit_strategy, namespace, pod, profile, scored_by_fit
from policy_scheduler.devcluster.cluster import DevCluster
from polling import holds_for, wait_until

NS = "e2e-polstart"
TAG = "polstart"
NODE_LABEL = "e2e-polstart"
PACKING, GONE = "polstart-packing", "polstart-gone"


def _profile(name: str, **spec: Any) -> dict[str, Any]:
    obj = profile(name, name, **spec)
    obj["metadata"]["labels"] = {ISOLATED_LABEL: TAG}
    return obj


def _pod(name: str, scheduler: str, node: str | None = None) -> dict[str, Any]:
    toleration = {"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    extra: dict[str, Any] = {"nodeSelector": {NODE_LABEL: "yes"}, "tolerations": [toleration]}
    if node:
        extra["nodeName"] = node
    return pod(name, NS, scheduler, cpu="2" if node else "500m", memory="256Mi", extra_spec=extra)


def _start(kubeconfig: Path, log: Path) -> OperatorProcess:
    process = OperatorProcess(
        kubeconfig, log, "--no-leader-elect", "--profile-selector", f"{ISOLATED_LABEL}={TAG}"
    )
    process.wait_ready()
    return process


def _node_of(kubectl: Kubectl, name: str) -> str:
    return str(
        wait_until(f"{name} bound", lambda: kubectl.get("pod", name, NS)["spec"].get("nodeName"), timeout=30)
    )


@pytest.fixture(scope="module")
def nodes(dev_cluster: DevCluster, kubectl: Kubectl) -> Iterator[tuple[str, str]]:
    """Our CRDs (the profiles are applied before any operator runs), and two tainted nodes of
    the same size; a filler pod loads the first."""
    apply_crds(kubectl)
    busy, idle = dev_cluster.create_nodes(
        2, prefix="polstart", cpu="8", memory="32Gi", labels={NODE_LABEL: "yes"}
    )
    for node in (busy, idle):
        kubectl.run("taint", "nodes", node, f"{NODE_LABEL}=yes:NoSchedule", "--overwrite")
    kubectl.apply(namespace(NS))
    kubectl.create(_pod("filler", "nobody", node=busy))
    yield busy, idle
    kubectl.delete("namespace", NS)
    for name in (PACKING, GONE):
        kubectl.delete("schedulingprofile", name)
    for node in (busy, idle):
        kubectl.delete("node", node)


def test_policy_at_start_and_while_running(
    kubeconfig: Path, kubectl: Kubectl, nodes: tuple[str, str], tmp_path: Path
) -> None:
    busy, idle = nodes
    kubectl.apply(_profile(GONE))
    first = _start(kubeconfig, tmp_path / "first.log")
    try:
        kubectl.create(_pod("served-before", GONE))
        _node_of(kubectl, "served-before")
    finally:
        first.stop()

    # While the operator is down: one profile goes, another comes, pods wait for both.
    kubectl.delete("schedulingprofile", GONE, wait=True)
    kubectl.apply(_profile(PACKING, **scored_by_fit("MostAllocated")))
    kubectl.create(_pod("orphan", GONE))
    kubectl.create(_pod("packed", PACKING))

    second = _start(kubeconfig, tmp_path / "second.log")
    try:
        # MostAllocated was in force at the first bind: the pod joins the filler.
        assert _node_of(kubectl, "packed") == busy
        holds_for(
            "the deleted profile's pod stays pending",
            lambda: not kubectl.get("pod", "orphan", NS)["spec"].get("nodeName"),
            seconds=3,
        )

        # Changed while running: LeastAllocated spreads the next pod to the idle node.
        kubectl.patch("schedulingprofile", PACKING, {"spec": fit_strategy("LeastAllocated")})
        wait_until(
            "generation 2 observed",
            lambda: (
                (kubectl.get("schedulingprofile", PACKING).get("status") or {}).get("observedGeneration") == 2
            ),
            timeout=30,
        )
        kubectl.create(_pod("spread", PACKING))
        assert _node_of(kubectl, "spread") == idle
    finally:
        second.stop()
