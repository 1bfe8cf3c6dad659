"""Issue 15: DynamicResources on the real control plane.

A test-only "driver" publishes ResourceSlices (8 GPUs per node, model + memory attributes) for a
few kwok nodes; pods get their GPUs through ResourceClaimTemplates, which the
kube-controller-manager's resourceclaim-controller turns into claims.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from polling import wait_until

SCHEDULER = "dra-scheduler"
NS = "e2e-dra"
DRIVER = "gpu.e2e.example.com"
CLASS = "e2e-gpu"
NODES = {"kwok-node-0": ("a100", "40Gi"), "kwok-node-1": ("a100", "40Gi"), "kwok-node-2": ("h100", "80Gi")}


def resource_slice(node: str, model: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"memory": {"value": memory}},
                }
                for i in range(8)
            ],
        },
    }


def template(name: str, count: int, *selectors: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def gpu_pod(name: str, tmpl: str) -> dict[str, Any]:
    p = pod(
        name,
        NS,
        SCHEDULER,
        extra_spec={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": tmpl}]},
    )
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return p


def claims_by_pod(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in kubectl.items("resourceclaims", NS):
        owner = next(
            (o["name"] for o in c["metadata"].get("ownerReferences") or [] if o["kind"] == "Pod"), ""
        )
        out[owner] = c
    return out


def allocated_devices(claims: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (r["driver"], r["pool"], r["device"])
        for c in claims
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    ]


def test_resource_api_is_served(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources", "--api-group=resource.k8s.io", "-o", "name").stdout.split()
    assert {"deviceclasses.resource.k8s.io", "resourceclaims.resource.k8s.io"} <= set(out)
    assert {"resourceclaimtemplates.resource.k8s.io", "resourceslices.resource.k8s.io"} <= set(out)


def test_claims_get_matching_devices_and_are_freed_with_their_pod(
    operator_process: Any, kubectl: Kubectl
) -> None:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    h100 = f'device.attributes["{DRIVER}"].model == "h100"'
    big = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'
    a100 = f'device.attributes["{DRIVER}"].model == "a100"'
    kubectl.apply(
        namespace(NS),
        device_class,
        *(resource_slice(n, m, mem) for n, (m, mem) in NODES.items()),
        template("h100-pair", 2, h100, big),
        template("a100", 1, a100),
        template("impossible", 9, h100),
        profile("dra", SCHEDULER),
    )

    # Selectors: only kwok-node-2 has h100s with 80Gi.
    kubectl.create(*(gpu_pod(f"h{i}", "h100-pair") for i in range(3)))

    def placed(prefix: str, n: int) -> list[dict[str, Any]] | None:
        pods = [p for p in kubectl.items("pods", NS) if p["metadata"]["name"].startswith(prefix)]
        return pods if len(pods) == n and all(p["spec"].get("nodeName") for p in pods) else None

    h_pods = wait_until("h100 pods bound", lambda: placed("h", 3), timeout=90)
    assert {p["spec"]["nodeName"] for p in h_pods} == {"kwok-node-2"}
    claims = claims_by_pod(kubectl)
    for p in h_pods:
        c = claims[p["metadata"]["name"]]
        status = c["status"]
        assert [r["uid"] for r in status["reservedFor"]] == [p["metadata"]["uid"]]
        assert {r["pool"] for r in status["allocation"]["devices"]["results"]} == {"kwok-node-2"}
        assert len(status["allocation"]["devices"]["results"]) == 2
        assert status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
            "kwok-node-2"
        ]

    # A burst for every a100 (2 nodes x 8): no device is allocated twice.
    kubectl.create(*(gpu_pod(f"a{i:02d}", "a100") for i in range(16)))
    a_pods = wait_until("16 a100 pods bound", lambda: placed("a", 16), timeout=120)
    assert {p["spec"]["nodeName"] for p in a_pods} == {"kwok-node-0", "kwok-node-1"}
    claims = claims_by_pod(kubectl)
    devices = allocated_devices(list(claims.values()))
    assert len(devices) == 16 + 6
    # kwok-node-0 and kwok-node-1 have the same devices (one shape, searched once per cycle):
    # each pod's device and node selector are still those of the node it is bound to.
    for p in a_pods:
        node = p["spec"]["nodeName"]
        allocation = claims[p["metadata"]["name"]]["status"]["allocation"]
        assert [r["pool"] for r in allocation["devices"]["results"]] == [node]
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
    assert not [d for d, n in Counter(devices).items() if n > 1], "a device was allocated twice"

    # One more a100 pod and an unsatisfiable one wait, with upstream's reason.
    kubectl.create(gpu_pod("waiting", "a100"), gpu_pod("never", "impossible"))

    def unschedulable(name: str) -> dict[str, Any] | None:
        cond = condition(kubectl.get("pod", name, NS), "PodScheduled")
        return cond if cond and cond["status"] == "False" and cond.get("reason") == "Unschedulable" else None

    never = wait_until("impossible claim reported", lambda: unschedulable("never"), timeout=60)
    assert "cannot allocate all claims" in never["message"], never
    waiting = wait_until("extra a100 pod reported", lambda: unschedulable("waiting"), timeout=60)
    assert "cannot allocate all claims" in waiting["message"], waiting

    # Deleting a bound pod frees its GPU: the resourceclaim-controller drops the reservation and
    # deallocates the claim, and the waiting pod gets the device.
    freed = claims_by_pod(kubectl)["a00"]["status"]["allocation"]["devices"]["results"][0]
    kubectl.delete("pod", "a00", NS)
    got = wait_until("waiting pod bound", lambda: placed("waiting", 1), timeout=120)
    assert got[0]["spec"]["nodeName"] == freed["pool"]
    now = allocated_devices(list(claims_by_pod(kubectl).values()))
    assert not [d for d, n in Counter(now).items() if n > 1], "a device was allocated twice"
    assert not kubectl.get("pod", "never", NS)["spec"].get("nodeName")


def test_api_claim_writer_on_a_real_claim(kubectl: Kubectl, kubeconfig: Any) -> None:
    """bindClaim's finalizer + allocation + reservation, its refusals, then unreserve/deallocate."""
    import asyncio

    from policy_scheduler.apiobjects.dra import claim_from_json
    from policy_scheduler.kube.client import make_api_client
    from policy_scheduler.kube.dra_writer import ApiClaimWriter
    from policy_scheduler.scheduler.dra.model import AllocationResult, DeviceRequestAllocationResult
    from policy_scheduler.scheduler.dra.services import ClaimWriteError
    from policy_scheduler.scheduler.model import Pod

    ns = "e2e-dra-writer"
    kubectl.apply(namespace(ns))
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": ns},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}},
    }
    # Real (never scheduled) pods: the resourceclaim-controller drops reservations of missing pods.
    kubectl.create(body, pod("a", ns, "nobody-schedules-these"), pod("b", ns, "nobody-schedules-these"))
    uid = {n: kubectl.get("pod", n, ns)["metadata"]["uid"] for n in ("a", "b")}
    claim = claim_from_json(kubectl.get("resourceclaim", "shared", ns))
    allocation = AllocationResult((DeviceRequestAllocationResult("gpu", DRIVER, "kwok-node-9", "gpu-0"),))

    async def go() -> None:
        api = await make_api_client(str(kubeconfig))
        async with api:
            writer = ApiClaimWriter(api)
            first = await writer.bind_claim(claim, allocation, Pod("a", ns, uid=uid["a"]))
            assert first.allocation == allocation
            assert "resource.kubernetes.io/delete-protection" in first.finalizers
            with pytest.raises(
                ClaimWriteError, match=f"^claim {ns}/shared got allocated elsewhere in the meantime$"
            ):
                await writer.bind_claim(claim, allocation, Pod("b", ns, uid=uid["b"]))
            second = await writer.bind_claim(first, None, Pod("b", ns, uid=uid["b"]))
            assert [r.uid for r in second.reserved_for] == [uid["a"], uid["b"]]
            writer.unreserve(second, uid["a"])
            await asyncio.gather(*list(writer._tasks))
            left = kubectl.get("resourceclaim", "shared", ns)["status"]["reservedFor"]
            assert [r["uid"] for r in left] == [uid["b"]]
            writer.deallocate(second)
            await asyncio.gather(*list(writer._tasks))

    asyncio.run(go())
    final = kubectl.get("resourceclaim", "shared", ns)["status"]
    assert not final.get("allocation")
    assert not final.get("reservedFor")
