"""Issue 6: profiles take effect live; a broken update keeps the last good one; delete stops it."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl import Kubectl, condition, fit_strategy, namespace, pod, profile, scored_by_fit
from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until

NS = "e2e-live"
SCHEDULER = "live-scheduler"
NODE_LABEL = "e2e-live"


def _pod(name: str, cpu: str) -> dict[str, Any]:
    return pod(name, NS, SCHEDULER, cpu=cpu, memory="256Mi", extra_spec={"nodeSelector": {NODE_LABEL: "yes"}})


def _node_of(kubectl: Kubectl, name: str) -> str:
    return str(
        wait_until(f"{name} bound", lambda: kubectl.get("pod", name, NS)["spec"].get("nodeName"), timeout=30)
    )


def _generation_observed(kubectl: Kubectl, generation: int) -> dict[str, Any]:
    def observed() -> dict[str, Any] | None:
        obj = kubectl.get("schedulingprofile", "live")
        status = obj.get("status") or {}
        return obj if status.get("observedGeneration") == generation and status.get("conditions") else None

    result: dict[str, Any] = wait_until(f"observedGeneration {generation}", observed, timeout=30)
    return result


@pytest.fixture(scope="module")
def live_nodes(dev_cluster: DevCluster) -> list[str]:
    return dev_cluster.create_nodes(2, prefix="live", cpu="8", memory="32Gi", labels={NODE_LABEL: "yes"})


def test_profile_apply_patch_break_delete_without_restart(
    operator_process: Any, kubectl: Kubectl, live_nodes: list[str]
) -> None:
    kubectl.apply(namespace(NS), profile("live", SCHEDULER, **scored_by_fit("LeastAllocated")))
    _generation_observed(kubectl, 1)
    wait_until(
        "profile Ready",
        lambda: (condition(kubectl.get("schedulingprofile", "live"), "Ready") or {}).get("status") == "True",
        timeout=30,
    )

    # LeastAllocated spreads: the second pod avoids the node the first one loaded.
    kubectl.create(_pod("a1", "2"))
    busy = _node_of(kubectl, "a1")
    kubectl.create(_pod("a2", "1"))
    assert _node_of(kubectl, "a2") != busy

    # Patch to MostAllocated: takes effect on the next pod, no restart.
    kubectl.patch("schedulingprofile", "live", {"spec": fit_strategy("MostAllocated")})
    patched = _generation_observed(kubectl, 2)
    assert condition(patched, "Accepted")["status"] == "True"  # type: ignore[index]
    kubectl.create(_pod("a3", "1"))
    assert _node_of(kubectl, "a3") == busy

    # Break it: the API server accepts the object (schema-valid) but the operator refuses it.
    kubectl.patch(
        "schedulingprofile", "live", {"spec": {"plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}}
    )
    broken = _generation_observed(kubectl, 3)
    accepted = condition(broken, "Accepted")
    assert accepted is not None
    assert accepted["status"] == "False"
    assert "spec.plugins.score.enabled[0]" in accepted["message"]
    assert "NoSuchPlugin" in accepted["message"]
    assert condition(broken, "Degraded")["status"] == "True"  # type: ignore[index]
    assert condition(broken, "Ready")["status"] == "True"  # type: ignore[index]
    # ...and the last good version (MostAllocated) still schedules.
    kubectl.create(_pod("a4", "1"))
    assert _node_of(kubectl, "a4") == busy

    # Delete it: a pending pod of that scheduler stays pending and is told why.
    kubectl.create(_pod("waiting", "100"))
    wait_until(
        "waiting reported unschedulable",
        lambda: condition(kubectl.get("pod", "waiting", NS), "PodScheduled"),
        timeout=30,
    )
    kubectl.delete("schedulingprofile", "live", wait=True)

    def told() -> bool:
        cond = condition(kubectl.get("pod", "waiting", NS), "PodScheduled")
        return bool(cond and "no SchedulingProfile serves schedulerName" in cond.get("message", ""))

    wait_until("pod told its profile is gone", told, timeout=30)
    kubectl.create(_pod("after-delete", "1"))
    with pytest.raises(AssertionError):
        wait_until(
            "pod bound without a profile",
            lambda: kubectl.get("pod", "after-delete", NS)["spec"].get("nodeName"),
            timeout=5,
        )
