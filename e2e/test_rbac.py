"""manifests/rbac.yaml is enough, and no broader than needed, on a real API server (RBAC on).

The operator runs as the policy-scheduler ServiceAccount (a TokenRequest token), with leader
election, against CRDs that an admin installed beforehand (the ServiceAccount may not write
CRDs). It must then serve a profile, bind pods, write pod conditions and events, hold its
Lease, keep PriorityClassMirrors in sync, preempt through the Eviction API and write our CRs'
status, all without a single 403.

This module starts a cluster of its own: on the shared one, the session's operator (admin,
no leader election) would serve the same profiles and could do the work in its place.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import SA_NAMESPACE as NS
from fixtures_operator import (
    SA_USER,
    OperatorProcess,
    ServiceAccountOperator,
    install_crds_and_rbac,
    kubeconfig_token,
    metric_sample,
    private_cluster,
    service_account_kubeconfig,
)
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.parity.api import ClusterApi
from policy_scheduler.scheduler.versioning.version import KubernetesVersion
from polling import wait_until

IDENTITY = "rbac-e2e"
SCHEDULER = "rbac-scheduler"
WORK_NS = "rbac-e2e"
API = "scheduling.policy-scheduler.io/v1alpha1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[DevCluster]:
    with private_cluster(tmp_path_factory, pytestconfig, "rbac-cluster", nodes=2) as dev:
        yield dev


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    install_crds_and_rbac(kubectl)
    return kubectl


@pytest.fixture(scope="module")
def operator(admin: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceAccountOperator]:
    workdir = tmp_path_factory.mktemp("rbac-operator")
    kubeconfig = service_account_kubeconfig(admin, workdir / "kubeconfig")
    whoami = json.loads(Kubectl(kubeconfig).run("auth", "whoami", "-o", "json").stdout)
    assert whoami["status"]["userInfo"]["username"] == SA_USER
    process = ServiceAccountOperator(
        kubeconfig,
        workdir / "operator.log",
        "--lease-namespace",
        NS,
        "--identity",
        IDENTITY,
        reader_token=kubeconfig_token(admin.kubeconfig),
    )
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def assert_no_forbidden(operator: ServiceAccountOperator) -> None:
    lines = operator.forbidden_lines()
    assert not lines, "the operator was refused something:\n" + "\n".join(lines[:20])


# ---- what the ServiceAccount may and may not do ----------------------------------------------------


def can_i(admin: Kubectl, verb: str, resource: str, *extra: str) -> bool:
    # A private discovery cache: kubectl's shared one is keyed by host:port, and ports are reused
    # by the many short-lived dev clusters, so it may describe another cluster without our CRDs.
    cache = admin.kubeconfig.parent / "kubectl-cache"
    result = admin.run(
        "auth", "can-i", verb, resource, "--as", SA_USER, "--cache-dir", str(cache), *extra, check=False
    )
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), f"can-i {verb} {resource}: {result.stdout} {result.stderr}"
    assert "doesn't have a resource type" not in result.stderr, result.stderr
    return answer == "yes"


ALLOWED = [
    ("list", "pods", "-A"),
    ("watch", "nodes"),
    ("list", "namespaces"),
    ("create", "pods", "--subresource=binding", "-n", "default"),
    ("patch", "pods", "--subresource=status", "-n", "default"),
    ("create", "pods", "--subresource=eviction", "-n", "default"),
    ("delete", "pods", "-n", "default"),
    ("list", "poddisruptionbudgets.policy", "-A"),
    ("watch", "persistentvolumeclaims", "-A"),
    ("patch", "persistentvolumeclaims", "-n", "default"),
    ("patch", "persistentvolumes"),
    ("list", "csistoragecapacities.storage.k8s.io", "-A"),
    ("watch", "csinodes.storage.k8s.io"),
    ("list", "volumeattachments.storage.k8s.io"),
    ("watch", "resourceslices.resource.k8s.io"),
    ("watch", "devicetaintrules.resource.k8s.io"),
    ("update", "resourceclaims.resource.k8s.io", "-n", "default"),
    ("patch", "resourceclaims.resource.k8s.io", "--subresource=status", "-n", "default"),
    ("update", "resourceclaims.resource.k8s.io", "--subresource=binding", "-n", "default"),
    # The claim kube-scheduler creates for DRA-backed extended resources (and deletes if unused).
    ("create", "resourceclaims.resource.k8s.io", "-n", "default"),
    ("delete", "resourceclaims.resource.k8s.io", "-n", "default"),
    ("create", "priorityclasses.scheduling.k8s.io"),
    ("delete", "priorityclasses.scheduling.k8s.io"),
    ("create", "events.events.k8s.io", "-n", "default"),
    ("watch", "customresourcedefinitions.apiextensions.k8s.io"),
    ("list", "schedulingprofiles.scheduling.policy-scheduler.io"),
    ("patch", "priorityclassmirrors.scheduling.policy-scheduler.io", "--subresource=status"),
    ("patch", "evictionpolicies.scheduling.policy-scheduler.io", "--subresource=status"),
    ("create", "leases.coordination.k8s.io", "-n", NS),
    ("update", "leases.coordination.k8s.io/policy-scheduler", "-n", NS),
    # The secure port's delegated authentication and authorization (system:auth-delegator).
    ("create", "tokenreviews.authentication.k8s.io"),
    ("create", "subjectaccessreviews.authorization.k8s.io"),
]
DENIED = [
    ("delete", "nodes"),
    ("patch", "nodes"),
    ("get", "secrets", "-A"),
    ("list", "configmaps", "-A"),
    ("update", "pods", "-n", "default"),
    ("patch", "pods", "-n", "default"),
    ("create", "pods", "-n", "default"),
    ("deletecollection", "pods", "-n", "default"),
    ("create", "customresourcedefinitions.apiextensions.k8s.io"),
    ("patch", "customresourcedefinitions.apiextensions.k8s.io"),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("update", "schedulingprofiles.scheduling.policy-scheduler.io"),
    ("patch", "schedulingprofiles.scheduling.policy-scheduler.io"),
    ("delete", "priorityclassmirrors.scheduling.policy-scheduler.io"),
    ("update", "priorityclasses.scheduling.k8s.io"),
    ("delete", "persistentvolumes"),
    ("create", "persistentvolumeclaims", "-n", "default"),
    ("patch", "storageclasses.storage.k8s.io"),
    ("update", "devicetaintrules.resource.k8s.io"),  # its status is the controller manager's
    ("patch", "resourceclaims.resource.k8s.io", "-n", "default"),
    ("deletecollection", "resourceclaims.resource.k8s.io", "-n", "default"),
    ("create", "resourceslices.resource.k8s.io"),
    ("update", "deviceclasses.resource.k8s.io"),
    ("create", "events", "-n", "default"),  # core/v1 events: only events.k8s.io is used
    ("create", "leases.coordination.k8s.io", "-n", "default"),
    ("update", "leases.coordination.k8s.io/someone-else", "-n", NS),
    ("delete", "leases.coordination.k8s.io/policy-scheduler", "-n", NS),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io"),
    ("create", "serviceaccounts", "--subresource=token", "-n", NS),
    ("impersonate", "serviceaccounts", "-A"),
    ("get", "nodes", "--subresource=proxy"),  # --kubelet-proxy's opt-in role (docs/deploy.md)
]


@pytest.mark.parametrize("check", ALLOWED, ids=lambda c: " ".join(c))
def test_service_account_may(admin: Kubectl, check: tuple[str, ...]) -> None:
    assert can_i(admin, *check)


@pytest.mark.parametrize("check", DENIED, ids=lambda c: " ".join(c))
def test_service_account_may_not(admin: Kubectl, check: tuple[str, ...]) -> None:
    assert not can_i(admin, *check)


def allowed_by_review(admin: Kubectl, verb: str, group: str, resource: str) -> bool:
    """A SubjectAccessReview: RBAC's answer for a group this cluster does not serve, which
    `kubectl auth can-i` refuses to ask about."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": SA_USER, "resourceAttributes": {"verb": verb, "group": group, "resource": resource}},
    }
    result = admin.run("create", "-o", "json", "-f", "-", stdin=json.dumps(review))
    return bool(json.loads(result.stdout)["status"].get("allowed"))


@pytest.mark.parametrize("verb", ["get", "list"])
@pytest.mark.parametrize("resource", ["nodes", "pods"])
def test_service_account_may_read_metrics_server(admin: Kubectl, verb: str, resource: str) -> None:
    """Node pressure's usage (metrics.k8s.io; metrics-server is not installed in this cluster)."""
    assert allowed_by_review(admin, verb, "metrics.k8s.io", resource)
    assert not allowed_by_review(admin, "watch", "metrics.k8s.io", resource)


# ---- the operator at work as the ServiceAccount -------------------------------------------------


def events_for(admin: Kubectl, pod_name: str) -> list[dict[str, Any]]:
    items = admin.items("events.events.k8s.io", WORK_NS)
    return [e for e in items if e["regarding"]["name"] == pod_name]


def test_schedules_writes_status_events_and_holds_the_lease(
    operator: ServiceAccountOperator, admin: Kubectl
) -> None:
    admin.apply(namespace(WORK_NS), profile("rbac", SCHEDULER))
    admin.create(pod("fits", WORK_NS, SCHEDULER), pod("too-big", WORK_NS, SCHEDULER, cpu="1000"))

    bound = wait_until(
        "pod bound", lambda: admin.get("pod", "fits", WORK_NS)["spec"].get("nodeName"), timeout=60
    )
    assert bound.startswith("kwok-node-")

    def unschedulable() -> dict[str, Any] | None:
        cond = condition(admin.get("pod", "too-big", WORK_NS), "PodScheduled")
        return cond if cond and cond["status"] == "False" else None

    assert wait_until("PodScheduled=False written", unschedulable, timeout=60)["reason"] == "Unschedulable"

    def reasons(name: str) -> set[str]:
        # Scheduling events name the profile's schedulerName as reportingController, as
        # kube-scheduler's do (instance <schedulerName>-<the replica's identity>).
        return {e["reason"] for e in events_for(admin, name) if e.get("reportingController") == SCHEDULER}

    wait_until("Scheduled event", lambda: "Scheduled" in reasons("fits"), timeout=60)
    wait_until("FailedScheduling event", lambda: "FailedScheduling" in reasons("too-big"), timeout=60)

    def ready() -> bool:
        obj = admin.get("schedulingprofile", "rbac")
        cond = condition(obj, "Ready")
        return bool(cond and cond["status"] == "True" and (obj["status"].get("scheduled") or 0) >= 1)

    wait_until("profile Ready (status written)", ready, timeout=60)
    lease = admin.get("lease", "policy-scheduler", NS)
    assert lease["spec"]["holderIdentity"] == IDENTITY
    assert_no_forbidden(operator)


def test_creates_the_claim_of_a_dra_backed_extended_resource(
    operator: ServiceAccountOperator, admin: Kubectl, cluster: DevCluster
) -> None:
    """DRAExtendedResource: the claim is created, allocated, reserved and named in the pod's
    status, all as the ServiceAccount."""
    git_version = ClusterApi.from_kubeconfig(cluster.kubeconfig).api.get("/version")["gitVersion"]
    if KubernetesVersion.parse(str(git_version)) < KubernetesVersion(1, 36):
        pytest.skip("DRAExtendedResource is off before v1.36")
    driver, resource = "rbac.example.com", "example.com/rbac-gpu"
    admin.apply(
        namespace(WORK_NS),
        profile("rbac", SCHEDULER),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "rbac-gpu"},
            "spec": {
                "extendedResourceName": resource,
                "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "rbac-gpus"},
            "spec": {
                "driver": driver,
                "nodeName": "kwok-node-0",
                "pool": {"name": "kwok-node-0", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        },
    )
    gpu = pod("gpu", WORK_NS, SCHEDULER)
    gpu["spec"]["containers"][0]["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    admin.create(gpu)
    status = wait_until(
        "extendedResourceClaimStatus written",
        lambda: admin.get("pod", "gpu", WORK_NS)["status"].get("extendedResourceClaimStatus"),
        timeout=60,
    )
    assert admin.get("pod", "gpu", WORK_NS)["spec"]["nodeName"] == "kwok-node-0"
    claim = admin.get("resourceclaim", status["resourceClaimName"], WORK_NS)
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert_no_forbidden(operator)


def mirror(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "PriorityClassMirror",
        "metadata": {"name": name},
        "spec": {"value": value},
    }


def native_class(admin: Kubectl, name: str) -> dict[str, Any] | None:
    out = admin.run("get", "priorityclass", name, "-o", "json", "--ignore-not-found").stdout
    return json.loads(out) if out.strip() else None


def test_priority_mirrors_preemption_and_eviction_policy_status(
    operator: ServiceAccountOperator, admin: Kubectl
) -> None:
    admin.apply(
        mirror("rbac-low", 10),
        mirror("rbac-high", 1000),
        {"apiVersion": API, "kind": "EvictionPolicy", "metadata": {"name": "rbac-enforce"}, "spec": {}},
        profile("rbac", SCHEDULER, evictionPolicyName="rbac-enforce"),
    )
    for name, value in (("rbac-low", 10), ("rbac-high", 1000)):
        pc = wait_until(f"native {name}", functools.partial(native_class, admin, name), timeout=60)
        assert pc["value"] == value

    def accepted() -> bool:
        cond = condition(admin.get("evictionpolicy", "rbac-enforce"), "Accepted")
        return bool(cond and cond["status"] == "True")

    wait_until("EvictionPolicy status written", accepted, timeout=60)

    # Two 32-cpu nodes: one filler each leaves room for no 20-cpu urgent pod without preemption.
    admin.create(
        *(
            pod(
                f"filler-{i}",
                WORK_NS,
                SCHEDULER,
                cpu="20",
                priority_class="rbac-low",
                labels={"app": "filler"},
            )
            for i in range(2)
        )
    )
    wait_until(
        "fillers bound",
        lambda: all(admin.get("pod", f"filler-{i}", WORK_NS)["spec"].get("nodeName") for i in range(2)),
        timeout=60,
    )
    admin.create(pod("urgent", WORK_NS, SCHEDULER, cpu="20", priority_class="rbac-high"))
    wait_until(
        "urgent bound after preemption",
        lambda: admin.get("pod", "urgent", WORK_NS)["spec"].get("nodeName"),
        timeout=90,
    )

    def evicted() -> dict[str, Any] | None:
        status = admin.get("evictionpolicy", "rbac-enforce").get("status") or {}
        return status if (status.get("counters") or {}).get("evicted", 0) >= 1 else None

    status = wait_until("eviction counted in EvictionPolicy status", evicted, timeout=60)
    assert status["recentEvictions"][0]["result"] == "Evicted"
    remaining = [
        p
        for p in admin.items("pods", WORK_NS, selector="app=filler")
        if not p["metadata"].get("deletionTimestamp")
    ]
    assert len(remaining) == 1

    # A mirror's deletion deletes the class it created.
    admin.delete("priorityclassmirror", "rbac-high")
    wait_until("native class deleted", lambda: native_class(admin, "rbac-high") is None, timeout=60)
    assert_no_forbidden(operator)


def test_secure_port_delegates_as_the_service_account(operator: ServiceAccountOperator) -> None:
    """TokenReviews (the admin's token accepted) and SubjectAccessReviews (the operator's own
    token refused /metrics: 403, where a review it may not make would be a 500)."""
    assert operator.get("/metrics", token=operator.reader_token)[0] == 200
    own = kubeconfig_token(operator.kubeconfig)
    status, body = operator.get("/metrics", token=own)
    assert status == 403, body
    assert json.loads(body)["message"] == f'forbidden: User "{SA_USER}" cannot get path "/metrics"'


def test_no_forbidden_in_the_whole_log(operator: ServiceAccountOperator) -> None:
    assert operator.proc.poll() is None, f"operator exited:\n{operator.tail()}"
    assert_no_forbidden(operator)


# ---- leader election refused: one clear line, not a repeating traceback ----------------------------


def lease_errors(process: OperatorProcess, reason: str) -> float:
    return (
        metric_sample(process.metrics(), "policy_scheduler_leader_election_errors_total", reason=reason)
        or 0.0
    )


def assert_one_clear_line(process: OperatorProcess, needle: str) -> None:
    process.log.flush()
    text = process.log_path.read_text()
    lines = [line for line in text.splitlines() if needle in line]
    assert len(lines) == 1, "\n".join(lines) or process.tail()
    assert " ERROR " in lines[0]
    assert "Traceback" not in text
    assert process.proc.poll() is None, "a replica that cannot lead keeps running as a standby"
    assert "policy_scheduler_leader 0.0" in process.metrics()


def test_a_lease_rbac_refuses_is_one_clear_error_line(admin: Kubectl, tmp_path: Path) -> None:
    """The Role grants get/update on the default Lease name only: another name is refused."""
    kubeconfig = service_account_kubeconfig(admin, tmp_path / "kubeconfig")
    process = ServiceAccountOperator(
        kubeconfig,
        tmp_path / "operator.log",
        "--lease-namespace",
        NS,
        "--lease-name",
        "not-granted",
        "--identity",
        "rbac-refused",
        "--profile-selector",
        "e2e-nothing=here",
        reader_token=kubeconfig_token(admin.kubeconfig),  # the account may not read /metrics itself
    )
    try:
        process.wait_ready()
        wait_until("three refused attempts", lambda: lease_errors(process, "Forbidden") >= 3, timeout=30)
        assert_one_clear_line(process, f"forbidden to get Lease {NS}/not-granted")
        line = next(line for line in process.log_path.read_text().splitlines() if "forbidden to get" in line)
        assert f"grant get, create and update on leases.coordination.k8s.io in namespace {NS}" in line
    finally:
        process.stop()


def test_a_missing_lease_namespace_is_one_clear_error_line(cluster: DevCluster, tmp_path: Path) -> None:
    process = OperatorProcess(
        cluster.kubeconfig,
        tmp_path / "operator.log",
        "--lease-namespace",
        "no-such-namespace",
        "--profile-selector",
        "e2e-nothing=here",
    )
    try:
        process.wait_ready()
        wait_until(
            "three refused attempts", lambda: lease_errors(process, "NamespaceNotFound") >= 3, timeout=30
        )
        assert_one_clear_line(process, "namespace no-such-namespace does not exist")
    finally:
        process.stop()
