"""Version range on the real control plane: an API server that serves neither resource.k8s.io (DRA)
nor CSIStorageCapacity (`--runtime-config`), in a cluster without the PodGroup CRD.

The operator starts and becomes ready, schedules pods that need none of those APIs, and turns
off the plugins that read them: a warning names each API, every affected SchedulingProfile gets
an Event and an APIsServed condition naming it, and a pod that needs a missing API waits with a
reason that names it. Installing the PodGroup CRD later is picked up without a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import OperatorProcess, install_crds_and_rbac, private_cluster, wait_crds_established
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.apiobjects.podgroup_crd import podgroup_crd
from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until

RUNTIME_CONFIG = "resource.k8s.io/v1=false,storage.k8s.io/v1/csistoragecapacities=false"
# kube-apiserver v1.35's Node authorizer watches ResourceSlices (DRA is locked on) and is never
# ready without them; this cluster authorizes by RBAC alone, as the API servers that do not serve
# resource.k8s.io/v1 at all (before v1.34) do with the Node authorizer.
APISERVER_FLAGS = ("--authorization-mode=RBAC", f"--runtime-config={RUNTIME_CONFIG}")
NS = "e2e-apis"
SCHEDULER = "apis-scheduler"
GANG_SCHEDULER = "apis-gang"
PG_LABEL = "scheduling.x-k8s.io/pod-group"
DRA_NOT_SERVED = "resource.k8s.io/v1 is not served by the API server"
CAPACITY_NOT_SERVED = "storage.k8s.io/v1 csistoragecapacities is not served by the API server"
PODGROUPS_NOT_SERVED = "scheduling.x-k8s.io/v1alpha1 podgroups is not served by the API server"
WORKLOAD_API_NOT_SERVED = "scheduling.k8s.io Workload API is not served by the API server"


class AdminOperator(OperatorProcess):
    install_crds = False  # the PodGroup CRD stays missing; ours are applied by the test


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[DevCluster]:
    with private_cluster(
        tmp_path_factory,
        pytestconfig,
        "apis-cluster",
        nodes=2,
        apiserver_flags=lambda _workdir: APISERVER_FLAGS,
    ) as dev:
        yield dev


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    install_crds_and_rbac(kubectl)
    kubectl.apply(namespace(NS))
    return kubectl


@pytest.fixture(scope="module")
def operator(admin: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    process = AdminOperator(
        admin.kubeconfig,
        tmp_path_factory.mktemp("apis-operator") / "operator.log",
        "--no-leader-elect",
        "--api-discovery-interval",
        "2s",
    )
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def scheduled_condition(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    return condition(kubectl.get("pod", name, NS), "PodScheduled")


def waits_with(kubectl: Kubectl, name: str, text: str) -> dict[str, Any] | None:
    found = scheduled_condition(kubectl, name)
    return found if found and found["status"] == "False" and text in found.get("message", "") else None


def test_the_operator_is_ready_and_names_each_missing_api(operator: OperatorProcess) -> None:
    log = Path(operator.log_path).read_text()
    warnings = [
        line for line in log.splitlines() if "API not served; the plugins that need it are off" in line
    ]
    for api in ("api=resource.k8s.io/v1", 'api="storage.k8s.io/v1 csistoragecapacities"', "podgroups"):
        assert any(api in line for line in warnings), (api, warnings)
    # No informer retries a collection that is not served.
    assert "list/watch failed" not in log


def test_profiles_report_the_missing_apis_and_pods_that_need_none_are_bound(
    operator: OperatorProcess, admin: Kubectl
) -> None:
    admin.apply(profile("apis", SCHEDULER))

    def not_served() -> dict[str, Any] | None:
        found = condition(admin.get("schedulingprofile", "apis"), "APIsServed")
        return found if found and found["status"] == "False" else None

    served = wait_until("the APIsServed condition", not_served, timeout=30)
    assert served["reason"] == "APINotServed"
    assert DRA_NOT_SERVED in served["message"]
    assert CAPACITY_NOT_SERVED in served["message"]
    assert PODGROUPS_NOT_SERVED not in served["message"]  # Coscheduling is not in this profile
    ready = condition(admin.get("schedulingprofile", "apis"), "Ready")
    assert ready is not None
    assert ready["status"] == "True"

    def event_reasons() -> set[str] | None:
        events = admin.items("events", "default")
        found = {
            e["message"].split(":", 1)[0]
            for e in events
            if e.get("reason") == "APINotServed" and e["involvedObject"].get("name") == "apis"
        }
        return found if len(found) >= 2 else None

    assert wait_until("APINotServed events", event_reasons, timeout=30) >= {
        "resource.k8s.io/v1 is not served by the API server",
        "storage.k8s.io/v1 csistoragecapacities is not served by the API server",
    }

    admin.create(pod("plain", NS, SCHEDULER))
    wait_until(
        "the plain pod bound", lambda: admin.get("pod", "plain", NS)["spec"].get("nodeName"), timeout=30
    )


def test_a_pod_with_a_resource_claim_waits_naming_the_api(operator: OperatorProcess, admin: Kubectl) -> None:
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}
    admin.create(pod("claims-gpu", NS, SCHEDULER, extra_spec=claim))
    waiting = wait_until(
        "the DRA pod waits", lambda: waits_with(admin, "claims-gpu", DRA_NOT_SERVED), timeout=30
    )
    assert waiting["reason"] == "Unschedulable"
    assert not admin.get("pod", "claims-gpu", NS)["spec"].get("nodeName")


def test_gang_pods_wait_for_the_podgroup_crd_and_go_on_once_it_is_installed(
    operator: OperatorProcess, admin: Kubectl
) -> None:
    spec = {
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"disabled": [{"name": "PrioritySort"}]},
        }
    }
    admin.apply(profile("apis-gang", GANG_SCHEDULER, **spec))
    admin.create(pod("member-0", NS, GANG_SCHEDULER, labels={PG_LABEL: "g"}))
    waiting = wait_until(
        "the gang pod waits", lambda: waits_with(admin, "member-0", PODGROUPS_NOT_SERVED), timeout=30
    )
    assert "PodGroup not found" in waiting["message"]
    assert "kubectl apply -k manifests/" in waiting["message"]

    # The CRD and a PodGroup arrive: discovery picks the CRD up, the pod goes on, the condition clears.
    admin.apply(podgroup_crd())
    podgroups = podgroup_crd()["metadata"]["name"]
    wait_crds_established(admin, 1, "--field-selector", f"metadata.name={podgroups}", what="the PodGroup CRD")
    admin.apply(
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": NS},
            "spec": {"minMember": 1},
        }
    )
    wait_until(
        "the gang pod bound", lambda: admin.get("pod", "member-0", NS)["spec"].get("nodeName"), timeout=60
    )

    def served() -> dict[str, Any] | None:
        found = condition(admin.get("schedulingprofile", "apis-gang"), "APIsServed")
        return found if found and PODGROUPS_NOT_SERVED not in found["message"] else None

    wait_until("the PodGroup API reported served", served, timeout=30)


def test_a_profile_with_the_workload_api_gate_is_told_the_api_is_not_served(
    operator: OperatorProcess, admin: Kubectl
) -> None:
    """GenericWorkload on in the profile, but this API server serves no scheduling.k8s.io pod
    groups: GangScheduling is off and the profile says why (the API server's flags to set)."""
    admin.apply(profile("apis-workload", "apis-workload", featureGates={"GenericWorkload": True}))

    def not_served() -> dict[str, Any] | None:
        found = condition(admin.get("schedulingprofile", "apis-workload"), "APIsServed")
        return found if found and WORKLOAD_API_NOT_SERVED in found.get("message", "") else None

    served = wait_until("the Workload API reported not served", not_served, timeout=30)
    assert served["status"] == "False"
    assert "--feature-gates=GenericWorkload=true" in served["message"]
    assert "--runtime-config=scheduling.k8s.io/v1beta1=true" in served["message"]
