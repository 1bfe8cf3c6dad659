"""Gang scheduling through the Workload API on a real control plane whose API server serves it
(devcluster's workload_api_flags; `policy-scheduler dev-cluster up --workload-api` does the same):
v1beta1 PodGroups and spec.schedulingGroup on v1.37.2 (the suite's default), v1alpha2 on v1.36,
v1alpha1 Workloads and spec.workloadRef on v1.35 (POLICY_SCHEDULER_K8S_VERSION). The operator runs
as its ServiceAccount (manifests/rbac.yaml); the SchedulingProfile turns the release's gates on, so
GangScheduling is in its default plugins.

Its own cluster: the shared one's API server does not serve the Workload API (its flags are the
defaults), and a pod's spec.schedulingGroup is dropped by an API server without the gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures_operator import (
    ServiceAccountOperator,
    install_crds_and_rbac,
    kubeconfig_token,
    private_cluster,
    service_account_kubeconfig,
)
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.flags import WORKLOAD_API_VERSIONS, workload_api_flags
from policy_scheduler.devcluster.versions import control_plane
from polling import holds_for, wait_until

NS = "e2e-workload"
SCHEDULER = "workload-gang"
NODE_LABEL = "e2e-workload"
KUBERNETES = control_plane().kubernetes
MINOR = ".".join(KUBERNETES.lstrip("v").split(".")[:2])
API_VERSION = f"scheduling.k8s.io/{WORKLOAD_API_VERSIONS.get(MINOR, '?')}"
# v1.35 and v1.36 need GangScheduling too; v1.37 removed that gate.
GATES = {"GenericWorkload": True} if MINOR == "1.37" else {"GenericWorkload": True, "GangScheduling": True}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[DevCluster]:
    if MINOR not in WORKLOAD_API_VERSIONS:
        pytest.skip(f"Kubernetes {KUBERNETES} has no Workload API")
    flags = workload_api_flags(KUBERNETES)
    with private_cluster(
        tmp_path_factory, pytestconfig, "workload-cluster", nodes=0, apiserver_flags=lambda _w: flags
    ) as dev:
        yield dev


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    install_crds_and_rbac(kubectl)
    kubectl.apply(namespace(NS))
    # Two nodes of one CPU that only this module's pods tolerate.
    taint = {"key": NODE_LABEL, "value": "yes", "effect": "NoSchedule"}
    cluster.create_nodes(2, prefix="wl", cpu="1", memory="8Gi", labels={NODE_LABEL: "yes"}, taints=[taint])
    return kubectl


@pytest.fixture(scope="module")
def operator(
    admin: Kubectl, cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServiceAccountOperator]:
    workdir = tmp_path_factory.mktemp("workload-operator")
    kubeconfig = service_account_kubeconfig(admin, workdir / "kubeconfig")
    process = ServiceAccountOperator(
        kubeconfig,
        workdir / "operator.log",
        "--no-leader-elect",
        reader_token=kubeconfig_token(cluster.kubeconfig),
    )
    try:
        process.wait_ready()
        admin.apply(profile(SCHEDULER, SCHEDULER, featureGates=GATES))

        def ready() -> bool:
            found = condition(admin.get("schedulingprofile", SCHEDULER), "Ready")
            return bool(found and found["status"] == "True")

        wait_until("the profile is ready", ready, timeout=30)
        yield process
    finally:
        process.stop()


def pod_group(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    """The release's gang object: a PodGroup (v1.36 on), a Workload with one podGroups entry
    named "main" (v1.35)."""
    meta = {"name": name, "namespace": NS}
    if MINOR == "1.35":
        spec = {"podGroups": [{"name": "main", "policy": policy}]}
        return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": meta, "spec": spec}
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"schedulingPolicy": policy},
    }


def membership(group: str) -> dict[str, Any]:
    if MINOR == "1.35":
        return {"workloadRef": {"name": group, "podGroup": "main"}}
    return {"schedulingGroup": {"podGroupName": group}}


def member(name: str, group: str, cpu: str = "100m") -> dict[str, Any]:
    toleration = {"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    return pod(name, NS, SCHEDULER, cpu=cpu, extra_spec={**membership(group), "tolerations": [toleration]})


def bound(admin: Kubectl, names: list[str]) -> dict[str, str]:
    pods = {p["metadata"]["name"]: p for p in admin.items("pods", NS)}
    return {
        n: pods[n]["spec"].get("nodeName", "")
        for n in names
        if pods.get(n, {}).get("spec", {}).get("nodeName")
    }


def group_condition(admin: Kubectl, name: str) -> dict[str, Any] | None:
    """kube-scheduler's condition on a PodGroup: PodGroupInitiallyScheduled (v1.37),
    PodGroupScheduled (v1.36)."""
    group, version = API_VERSION.split("/")
    found = admin.get(f"podgroups.{version}.{group}", name, NS)
    wanted = "PodGroupInitiallyScheduled" if MINOR == "1.37" else "PodGroupScheduled"
    return condition(found, wanted)


def gated(operator: ServiceAccountOperator) -> int:
    found = re.search(
        rf'scheduler_unschedulable_pods\{{plugin="GangScheduling",profile="{SCHEDULER}"\}} (\d+)',
        operator.metrics(),
    )
    return int(found.group(1)) if found else 0


def test_the_workload_api_is_served_and_the_profile_uses_it(
    operator: ServiceAccountOperator, admin: Kubectl
) -> None:
    served = condition(admin.get("schedulingprofile", SCHEDULER), "APIsServed")
    assert served is None or served["status"] == "True", served
    assert "scheduling.k8s.io Workload API" not in operator.tail(400)


def test_a_gang_waits_for_its_pod_group_and_min_count_then_binds_whole(
    operator: ServiceAccountOperator, admin: Kubectl
) -> None:
    names = [f"g-{i}" for i in range(4)]
    for name in names[:3]:
        admin.apply(member(name, "g"))
    stored = admin.get("pod", "g-0", NS)
    for field, value in membership("g").items():
        assert stored["spec"][field] == value, "the API server kept the field"
    # No PodGroup yet: held in PreEnqueue ("waiting for pods's pod group ... to appear").
    wait_until("three pods gated by GangScheduling", lambda: gated(operator) == 3, timeout=30)
    holds_for("no member binds without its PodGroup", lambda: not bound(admin, names), seconds=3)
    admin.apply(pod_group("g", {"gang": {"minCount": 4}}))
    # Three of minCount 4: still held.
    holds_for("three of minCount 4 do not bind", lambda: not bound(admin, names), seconds=5)
    assert gated(operator) == 3
    admin.apply(member("g-3", "g"))

    def whole() -> dict[str, str] | None:
        placed = bound(admin, names)
        return placed if len(placed) == len(names) else None

    placed = wait_until("the whole gang bound", whole, timeout=60)
    assert set(placed) == set(names)
    assert gated(operator) == 0
    if MINOR != "1.35":  # v1.36+: the PodGroup's scheduling condition, as kube-scheduler writes it
        scheduled = wait_until("the PodGroup's condition", lambda: group_condition(admin, "g"), timeout=30)
        assert (scheduled["status"], scheduled["reason"]) == ("True", "Scheduled")


def test_a_gang_that_cannot_fit_binds_no_member(operator: ServiceAccountOperator, admin: Kubectl) -> None:
    """Two 600m members fit (one per one-CPU node), the third nowhere: the two wait at Permit and
    nothing is bound."""
    admin.apply(pod_group("big", {"gang": {"minCount": 3}}))
    names = [f"big-{i}" for i in range(3)]
    for name in names:
        admin.apply(member(name, "big", cpu="600m"))

    def third_unschedulable() -> bool:
        states = [condition(admin.get("pod", n, NS), "PodScheduled") for n in names]
        return any(s is not None and s["status"] == "False" for s in states)

    wait_until("a member found unschedulable", third_unschedulable, timeout=60)
    holds_for("no member of an incomplete gang binds", lambda: not bound(admin, names), seconds=8)
    if MINOR != "1.35":  # v1.36+: the members waiting at Permit are released with the verdict

        def released() -> bool:
            states = [condition(admin.get("pod", n, NS), "PodScheduled") for n in names]
            return any(
                s is not None and "minCount (3) cannot be satisfied" in s.get("message", "") for s in states
            )

        wait_until("the waiting members released", released, timeout=30)
        verdict = wait_until("the PodGroup's condition", lambda: group_condition(admin, "big"), timeout=30)
        assert (verdict["status"], verdict["reason"]) == ("False", "Unschedulable")
        assert verdict["message"].startswith("minCount (3) cannot be satisfied: ")
    for name in names:
        admin.run("delete", "pod", name, "-n", NS, "--wait=false")


def test_a_basic_policy_pod_group_schedules_pod_by_pod(
    operator: ServiceAccountOperator, admin: Kubectl
) -> None:
    admin.apply(pod_group("solo", {"basic": {}}))
    admin.apply(member("solo-0", "solo"))
    wait_until("the basic pod bound", lambda: bound(admin, ["solo-0"]), timeout=60)


def test_a_pod_group_with_disruption_mode_all_is_preempted_whole(
    operator: ServiceAccountOperator, admin: Kubectl, cluster: DevCluster
) -> None:
    """Workload-aware preemption (v1.37, GenericWorkload): a low-priority PodGroup with
    disruptionMode all has a member on each of two nodes; a high-priority pod needs one node, and
    both members are evicted (through the Eviction API), not one."""
    if MINOR != "1.37":
        pytest.skip("disruptionMode {all: {}} is v1.37's (v1beta1)")
    label = "e2e-workload-preempt"
    taint = {"key": label, "value": "yes", "effect": "NoSchedule"}
    cluster.create_nodes(2, prefix="wlp", cpu="1", memory="8Gi", labels={label: "yes"}, taints=[taint])
    classes = {"wl-low": 10, "wl-high": 1000}
    admin.apply(
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": n},
                "value": v,
            }
            for n, v in classes.items()
        )
    )
    group = pod_group("victims", {"basic": {}})
    group["spec"]["disruptionMode"] = {"all": {}}
    admin.apply(group)
    placement = {
        "nodeSelector": {label: "yes"},
        "tolerations": [{"key": label, "operator": "Exists", "effect": "NoSchedule"}],
    }
    victims = ["v-0", "v-1"]
    for name in victims:
        admin.apply(
            pod(
                name,
                NS,
                SCHEDULER,
                cpu="600m",
                priority_class="wl-low",
                extra_spec={**membership("victims"), **placement},
            )
        )

    def spread() -> dict[str, str] | None:
        placed = bound(admin, victims)
        return placed if len(set(placed.values())) == 2 else None

    wait_until("one victim member on each node", spread, timeout=60)
    admin.apply(pod("urgent", NS, SCHEDULER, cpu="600m", priority_class="wl-high", extra_spec=placement))

    def both_gone() -> bool:
        names = {p["metadata"]["name"] for p in admin.items("pods", NS)}
        return not names & set(victims)

    wait_until("both members of the group evicted", both_gone, timeout=60)
    wait_until("the urgent pod bound", lambda: bound(admin, ["urgent"]), timeout=60)


def test_the_service_account_was_never_refused(operator: ServiceAccountOperator) -> None:
    assert operator.forbidden_lines() == []
