"""Issue 34: extended resources backed by DRA (DRAExtendedResource, GA in v1.37) on the real
control plane.

A DeviceClass names `example.com/e2e-gpu` in spec.extendedResourceName; a test-only "driver"
publishes two matching devices on one kwok node, and no node lists the resource in allocatable.
A pod asking for one is placed there, the claim kube-scheduler creates for it is created,
allocated and reserved, and the pod's status.extendedResourceClaimStatus names it; a pod asking
for more than are left waits with upstream's reason and is never bound. kube-scheduler v1.37.2
then does the same on a second node's devices, and both write the same claims, statuses and
reasons.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.parity.api import ClusterApi
from policy_scheduler.parity.kubesched import KubeScheduler
from policy_scheduler.scheduler.versioning.version import KubernetesVersion
from polling import wait_until

SCHEDULER = "dra-ext-scheduler"
NS = "e2e-dra-ext"
DRIVER = "ext-gpu.e2e.example.com"
CLASS = "e2e-ext-gpu"
RESOURCE = "example.com/e2e-gpu"
NODE = "kwok-node-1"
REFERENCE_NODE = "kwok-node-2"
REFERENCE_SCHEDULER = "parity-default"  # kube-scheduler's default profile (parity/profiles.py)
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# The container requests cpu, the GPU and memory: sorted by name, the GPU is request 1.
REQUEST = "container-0-request-1"


def gpu_pod(name: str, count: int, scheduler: str = SCHEDULER) -> dict[str, Any]:
    p = pod(name, NS, scheduler)
    resources = p["spec"]["containers"][0]["resources"]
    resources["requests"][RESOURCE] = str(count)
    resources["limits"] = {RESOURCE: str(count)}  # extended resources need requests == limits
    return p


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {
            "extendedResourceName": RESOURCE,
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        },
    }


def resource_slice(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(2)],
        },
    }


def bound(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    p = kubectl.get("pod", name, NS)
    return p if p["spec"].get("nodeName") else None


def unschedulable(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    cond = condition(kubectl.get("pod", name, NS), "PodScheduled")
    return cond if cond and cond["status"] == "False" and cond.get("reason") == "Unschedulable" else None


def claim_of(kubectl: Kubectl, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's status.extendedResourceClaimStatus and the claim it names."""
    status = wait_until(
        f"{name}'s extendedResourceClaimStatus written",
        lambda: kubectl.get("pod", name, NS)["status"].get("extendedResourceClaimStatus"),
        timeout=30,
    )
    return status, kubectl.get("resourceclaim", status["resourceClaimName"], NS)


def shape(pod_name: str, status: dict[str, Any], claim: dict[str, Any]) -> dict[str, Any]:
    """What must agree between the two schedulers: all but names, uids and times."""
    meta = claim["metadata"]
    allocation = claim["status"]["allocation"]
    return {
        "mappings": status["requestMappings"],
        "generateName": meta["generateName"].removeprefix(pod_name),
        "annotations": meta["annotations"],
        "owner": [(o["kind"], o["controller"]) for o in meta["ownerReferences"]],
        "finalizers": meta["finalizers"],
        "spec": claim["spec"],
        "results": [(r["request"], r["driver"]) for r in allocation["devices"]["results"]],
        "reserved": len(claim["status"]["reservedFor"]),
    }


@pytest.fixture
def cleaned_up(kubectl: Kubectl) -> Iterator[None]:
    """The pods, claims, devices and profile are gone afterwards: other modules share the cluster."""
    yield
    kubectl.delete("namespace", NS, wait=True)
    for node in (NODE, REFERENCE_NODE):
        kubectl.delete("resourceslice", f"{node}-{DRIVER}")
    kubectl.delete("deviceclass", CLASS)
    kubectl.delete("schedulingprofile", "dra-ext")


def release(kubeconfig: Path) -> KubernetesVersion:
    return KubernetesVersion.parse(
        str(ClusterApi.from_kubeconfig(kubeconfig).api.get("/version")["gitVersion"])
    )


@pytest.fixture
def gate_on(kubeconfig: Path) -> None:
    """DRAExtendedResource is on from v1.36 (test_v1_35_... covers the release before)."""
    if release(kubeconfig) < KubernetesVersion(1, 36):
        pytest.skip("DRAExtendedResource is off before v1.36")


@pytest.mark.usefixtures("cleaned_up")
def test_v1_35_counts_the_resource_on_the_node_and_the_pod_waits(
    operator_process: Any, kubectl: Kubectl, kubeconfig: Path
) -> None:
    """With the gate off (v1.35), a resource no node lists is simply insufficient."""
    if release(kubeconfig) >= KubernetesVersion(1, 36):
        pytest.skip("DRAExtendedResource is on from v1.36")
    kubectl.apply(namespace(NS), device_class(), resource_slice(NODE), profile("dra-ext", SCHEDULER))
    kubectl.create(gpu_pod("one", 1))
    waiting = wait_until("pod reported", lambda: unschedulable(kubectl, "one"), timeout=60)
    assert f"Insufficient {RESOURCE}" in waiting["message"], waiting
    assert not kubectl.get("pod", "one", NS)["spec"].get("nodeName")
    assert not kubectl.items("resourceclaims", NS)


@pytest.mark.usefixtures("cleaned_up", "gate_on")
def test_extended_resource_pod_gets_a_claim_and_the_rest_wait(
    operator_process: Any, kubectl: Kubectl, dev_cluster: DevCluster, tmp_path: Path
) -> None:
    kubectl.apply(namespace(NS), device_class(), resource_slice(NODE), profile("dra-ext", SCHEDULER))
    assert not [n for n in kubectl.items("nodes") if RESOURCE in (n["status"].get("allocatable") or {})]

    kubectl.create(gpu_pod("one", 1))
    placed = wait_until("pod with an extended resource bound", lambda: bound(kubectl, "one"), timeout=90)
    assert placed["spec"]["nodeName"] == NODE
    status, claim = claim_of(kubectl, "one")
    assert status["requestMappings"] == [
        {"containerName": "c", "resourceName": RESOURCE, "requestName": REQUEST}
    ]
    meta = claim["metadata"]
    assert meta["name"].startswith("one-extended-resources-")
    assert meta["annotations"][ANNOTATION] == "true"
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        "one",
        placed["metadata"]["uid"],
        True,
    )
    assert claim["spec"]["devices"]["requests"] == [
        {
            "name": REQUEST,
            "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1},
        }
    ]
    allocation = claim["status"]["allocation"]
    [result] = allocation["devices"]["results"]
    assert (result["driver"], result["pool"], result["request"]) == (DRIVER, NODE, REQUEST)
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [NODE]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [placed["metadata"]["uid"]]
    assert "resource.kubernetes.io/delete-protection" in meta["finalizers"]

    # One device is left: a pod asking for two waits with upstream's reason, unbound, no claim.
    kubectl.create(gpu_pod("two", 2))
    waiting = wait_until(
        "pod asking for too many reported", lambda: unschedulable(kubectl, "two"), timeout=60
    )
    assert "cannot allocate all claims" in waiting["message"], waiting
    pod_two = kubectl.get("pod", "two", NS)
    assert not pod_two["spec"].get("nodeName")
    assert not pod_two["status"].get("extendedResourceClaimStatus")
    owners = [
        o["name"]
        for c in kubectl.items("resourceclaims", NS)
        for o in c["metadata"].get("ownerReferences") or []
    ]
    assert owners == ["one"]

    # The last device goes to a pod asking for one, never the device "one" holds.
    kubectl.create(gpu_pod("three", 1))
    third = wait_until("second one-device pod bound", lambda: bound(kubectl, "three"), timeout=90)
    assert third["spec"]["nodeName"] == NODE
    _, third_claim = claim_of(kubectl, "three")
    devices = {
        result["device"],
        third_claim["status"]["allocation"]["devices"]["results"][0]["device"],
    }
    assert devices == {"gpu-0", "gpu-1"}
    assert not kubectl.get("pod", "two", NS)["spec"].get("nodeName")

    # The reference: kube-scheduler v1.37.2 does the same with the devices of a second node.
    kubectl.delete("pod", "two", NS, wait=True)
    kubectl.apply(resource_slice(REFERENCE_NODE))
    with KubeScheduler(dev_cluster.kubeconfig, tmp_path, dev_cluster.versions):
        kubectl.create(gpu_pod("ref-one", 1, REFERENCE_SCHEDULER))
        ref = wait_until("reference pod bound", lambda: bound(kubectl, "ref-one"), timeout=90)
        assert ref["spec"]["nodeName"] == REFERENCE_NODE
        assert shape("ref-one", *claim_of(kubectl, "ref-one")) == shape("one", status, claim)
        kubectl.create(gpu_pod("ref-two", 2, REFERENCE_SCHEDULER))
        ref_waiting = wait_until(
            "reference pod reported", lambda: unschedulable(kubectl, "ref-two"), timeout=60
        )
        assert ref_waiting["message"] == waiting["message"]
        assert not kubectl.get("pod", "ref-two", NS)["status"].get("extendedResourceClaimStatus")


@pytest.mark.usefixtures("gate_on")
def test_api_writer_creates_records_and_deletes_an_extended_resource_claim(
    kubectl: Kubectl, kubeconfig: Path
) -> None:
    """The ClaimWriter's extended-resource calls on the real API: create (generateName, owner,
    annotation), allocate, the pod's status, and delete past the finalizer (Unreserve's path)."""
    import asyncio

    from policy_scheduler.kube.client import make_api_client
    from policy_scheduler.kube.dra_writer import ApiClaimWriter
    from policy_scheduler.scheduler.dra.extended import (
        IN_MEMORY_CLAIM_NAME,
        ContainerExtendedResourceRequest,
        ExtendedResourceClaimStatus,
    )
    from policy_scheduler.scheduler.dra.model import (
        AllocationResult,
        DeviceRequest,
        DeviceRequestAllocationResult,
        ExactDeviceRequest,
        ResourceClaim,
    )
    from policy_scheduler.scheduler.model import Pod

    ns = "e2e-dra-ext-writer"
    kubectl.apply(namespace(ns))
    # The API server only takes mappings of resources the pod's containers request.
    unscheduled = gpu_pod("p", 1, "nobody-schedules-this")
    unscheduled["metadata"]["namespace"] = ns
    kubectl.create(unscheduled)
    uid = kubectl.get("pod", "p", ns)["metadata"]["uid"]
    in_memory = ResourceClaim(
        IN_MEMORY_CLAIM_NAME,
        ns,
        uid="temporary",
        requests=(DeviceRequest("container-0-request-0", ExactDeviceRequest(CLASS, count=1)),),
        owner_pod_uid=uid,
        extended_resource=True,
        owner_pod_name="p",
    )
    allocation = AllocationResult(
        (DeviceRequestAllocationResult("container-0-request-0", DRIVER, NODE, "gpu-0"),)
    )
    mapping = ContainerExtendedResourceRequest("c", RESOURCE, "container-0-request-0")
    target = Pod("p", ns, uid=uid)

    async def go() -> str:
        api = await make_api_client(str(kubeconfig))
        async with api:
            writer = ApiClaimWriter(api)
            created = await writer.create_extended_claim(in_memory, target)
            assert created.name.startswith("p-extended-resources-")
            assert (created.extended_resource, created.owner_pod_uid, created.owner_pod_name) == (
                True,
                uid,
                "p",
            )
            assert created.allocation is None
            bound = await writer.bind_claim(created, allocation, target)
            assert bound.allocation == allocation
            assert "resource.kubernetes.io/delete-protection" in bound.finalizers
            await writer.set_extended_claim_status(
                target, ExtendedResourceClaimStatus(bound.name, (mapping,))
            )
            writer.delete_claim(bound)
            await asyncio.gather(*list(writer._tasks))
            return bound.name

    name = asyncio.run(go())
    status = kubectl.get("pod", "p", ns)["status"]["extendedResourceClaimStatus"]
    assert status == {
        "resourceClaimName": name,
        "requestMappings": [
            {"containerName": "c", "resourceName": RESOURCE, "requestName": "container-0-request-0"}
        ],
    }
    gone = wait_until(
        "claim deleted past its finalizer",
        lambda: not [c for c in kubectl.items("resourceclaims", ns) if c["metadata"]["name"] == name],
        timeout=30,
    )
    assert gone
    kubectl.delete("namespace", ns)
