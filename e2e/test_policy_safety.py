"""Issue 11, safety: the last accepted spec survives restarts; an unusable EvictionPolicy means
no evictions at all (never the permissive default) until it resolves.

Each test runs its own operator process (profiles labelled e2e-isolated=safety), so it can be
restarted; the session operator ignores these profiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import ISOLATED_LABEL, OperatorProcess
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from polling import holds_for, wait_until

GROUP_VERSION = "scheduling.policy-scheduler.io/v1alpha1"
NS = "e2e-safety"
TAG = "safety"
NODE_LABEL = "e2e-safety"
LOW, HIGH = "e2e-safety-low", "e2e-safety-high"


def start_operator(kubeconfig: Path, log: Path) -> OperatorProcess:
    process = OperatorProcess(
        kubeconfig, log, "--no-leader-elect", "--profile-selector", f"{ISOLATED_LABEL}={TAG}"
    )
    process.wait_ready()
    return process


def isolated_profile(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    obj = profile(name, scheduler, **spec)
    obj["metadata"]["labels"] = {ISOLATED_LABEL: TAG}
    return obj


def tolerating_pod(name: str, scheduler: str, cpu: str, pc: str | None = None, **spec: Any) -> dict[str, Any]:
    toleration = {"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    extra = {"nodeSelector": {NODE_LABEL: "yes"}, "tolerations": [toleration], **spec}
    return pod(name, NS, scheduler, cpu=cpu, memory="256Mi", priority_class=pc, extra_spec=extra)


def status_where(kubectl: Kubectl, kind: str, name: str, what: str, check: Any) -> dict[str, Any]:
    def current() -> dict[str, Any] | None:
        obj: dict[str, Any] = kubectl.get(kind, name)
        return obj if obj.get("status") and check(obj) else None

    result: dict[str, Any] = wait_until(what, current, timeout=30)
    return result


def cond_is(obj: dict[str, Any], type_: str, status: str, reason: str | None = None) -> bool:
    cond = condition(obj, type_) or {}
    return cond.get("status") == status and (reason is None or cond.get("reason") == reason)


@pytest.fixture(scope="module")
def safety_node(dev_cluster: DevCluster, kubectl: Kubectl) -> Iterator[str]:
    (node,) = dev_cluster.create_nodes(1, prefix="safety", cpu="4", memory="16Gi", labels={NODE_LABEL: "yes"})
    kubectl.run("taint", "nodes", node, f"{NODE_LABEL}=yes:NoSchedule", "--overwrite")
    kubectl.apply(namespace(NS))
    classes: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in ((LOW, 100), (HIGH, 1000))
    ]
    kubectl.apply(*classes)
    yield node
    kubectl.delete("namespace", NS)
    for c in classes:
        kubectl.delete("priorityclass", c["metadata"]["name"])
    kubectl.delete("node", node)


def test_restarted_operator_serves_the_persisted_last_accepted_spec(
    kubeconfig: Path, kubectl: Kubectl, safety_node: str, tmp_path: Path
) -> None:
    name, scheduler = "safety-restart", "safety-restart-scheduler"
    operator = start_operator(kubeconfig, tmp_path / "first.log")
    try:
        kubectl.apply(isolated_profile(name, scheduler, percentageOfNodesToScore=50))
        status_where(
            kubectl,
            "schedulingprofile",
            name,
            "generation 1 accepted and persisted",
            lambda o: o["status"].get("lastAcceptedGeneration") == 1 and cond_is(o, "Ready", "True"),
        )
        kubectl.patch(
            "schedulingprofile",
            name,
            {"spec": {"plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}},
        )
        rejected = status_where(
            kubectl,
            "schedulingprofile",
            name,
            "generation 2 rejected",
            lambda o: o["status"].get("observedGeneration") == 2 and cond_is(o, "Accepted", "False"),
        )
        assert cond_is(rejected, "Stalled", "True", "InvalidSpec")  # kstatus: Failed, not Current
        assert rejected["status"]["lastAcceptedGeneration"] == 1
        assert rejected["status"]["lastAcceptedSpec"]["percentageOfNodesToScore"] == 50
    finally:
        operator.stop()

    # A new process has never seen generation 1: only the status has it.
    operator = start_operator(kubeconfig, tmp_path / "second.log")
    try:
        restored = status_where(
            kubectl,
            "schedulingprofile",
            name,
            "status written by the restarted operator",
            lambda o: (
                "restored from status.lastAcceptedSpec"
                in ((condition(o, "Stalled") or {}).get("message") or "")
            ),
        )
        stalled = condition(restored, "Stalled")
        assert stalled is not None
        assert stalled["message"] == (
            "generation 2 was rejected; generation 1 stays in force (restored from status.lastAcceptedSpec)"
        )
        kubectl.create(tolerating_pod("served-after-restart", scheduler, "100m"))
        node = wait_until(
            "pod bound by the restored profile",
            lambda: kubectl.get("pod", "served-after-restart", NS)["spec"].get("nodeName"),
            timeout=30,
        )
        assert node == safety_node
        # `kubectl get` shows the stored generation and the one in force side by side.
        table = kubectl.run(
            "get",
            "schedulingprofile",
            name,
            "-o",
            "custom-columns=GEN:.metadata.generation,INFORCE:.status.lastAcceptedGeneration",
        ).stdout.split()
        assert table[-2:] == ["2", "1"]
        header = kubectl.run("get", "schedulingprofile", name).stdout.splitlines()[0].split()
        assert header[:5] == ["NAME", "READY", "ACCEPTED", "GENERATION", "INFORCE"]
    finally:
        operator.stop()
        kubectl.delete("schedulingprofile", name)


def test_missing_eviction_policy_means_no_eviction_until_it_is_back(
    kubeconfig: Path, kubectl: Kubectl, safety_node: str, tmp_path: Path
) -> None:
    name, scheduler, policy = "safety-failsafe", "safety-failsafe-scheduler", "safety-failsafe"
    policy_obj = {
        "apiVersion": GROUP_VERSION,
        "kind": "EvictionPolicy",
        "metadata": {"name": policy},
        "spec": {},
    }
    operator = start_operator(kubeconfig, tmp_path / "operator.log")
    try:
        kubectl.apply(policy_obj)
        kubectl.apply(isolated_profile(name, scheduler, evictionPolicyName=policy))
        status_where(
            kubectl,
            "schedulingprofile",
            name,
            "profile ready with its policy",
            lambda o: (
                cond_is(o, "Ready", "True") and cond_is(o, "EvictionPolicyResolved", "True", "Resolved")
            ),
        )
        victim = tolerating_pod("victim", scheduler, "3", LOW, nodeName=safety_node)
        kubectl.create(victim)
        wait_until(
            "victim running",
            lambda: cond_is(kubectl.get("pod", "victim", NS), "Ready", "True"),
            timeout=60,
        )

        kubectl.delete("evictionpolicy", policy, wait=True)
        off = status_where(
            kubectl,
            "schedulingprofile",
            name,
            "profile says preemption is off",
            lambda o: cond_is(o, "EvictionPolicyResolved", "False", "EvictionPolicyNotFound"),
        )
        assert condition(off, "EvictionPolicyResolved")["message"] == (  # type: ignore[index]
            f"preemption is off: no EvictionPolicy named {policy!r}"
        )
        assert cond_is(off, "Degraded", "True", "EvictionPolicyUnavailable")
        assert cond_is(off, "Ready", "True")  # it still schedules what fits

        kubectl.create(tolerating_pod("high", scheduler, "2", HIGH))

        def told() -> str | None:
            message = (condition(kubectl.get("pod", "high", NS), "PodScheduled") or {}).get("message") or ""
            return message if "preemption is off" in message else None

        assert f"no EvictionPolicy named {policy!r}" in wait_until("high told why", told, timeout=30)

        def nothing_evicted() -> bool:
            victim_now = kubectl.get("pod", "victim", NS)
            assert not victim_now["metadata"].get("deletionTimestamp"), "victim evicted without a policy"
            return not kubectl.get("pod", "high", NS)["status"].get("nominatedNodeName")

        holds_for("no eviction and no nomination at all", nothing_evicted, 5)
        events = [
            e
            for e in kubectl.items("events.events.k8s.io", "default")
            if e.get("reason") == "EvictionPolicyNotFound" and e["regarding"].get("name") == name
        ]
        assert events
        assert events[0]["type"] == "Warning"

        # The policy is back: the profile resolves it by itself and preemption proceeds.
        kubectl.apply(policy_obj)
        status_where(
            kubectl,
            "schedulingprofile",
            name,
            "profile resolves its policy again",
            lambda o: cond_is(o, "EvictionPolicyResolved", "True", "Resolved"),
        )
        # The waiting preemptor is retried at once (not after the 5 min unschedulable flush).

        def evicted() -> bool:
            pods = {p["metadata"]["name"]: p for p in kubectl.items("pods", NS)}
            return "victim" not in pods or bool(pods["victim"]["metadata"].get("deletionTimestamp"))

        wait_until("victim evicted", evicted, timeout=30)
        bound = wait_until(
            "high bound",
            lambda: kubectl.get("pod", "high", NS)["spec"].get("nodeName"),
            timeout=60,
        )
        assert bound == safety_node
    finally:
        operator.stop()
        kubectl.delete("schedulingprofile", name)
        kubectl.delete("evictionpolicy", policy)
