"""Issue 34: DRA as of v1.37 on the real control plane (v1.37.2 by default).

Partitionable devices: three 20Gi partitions of one 40Gi GPU drawing on a shared counter set,
two pods get partitions and the third waits. Device taints: a device tainted NoSchedule in its
slice and one tainted by a DeviceTaintRule go only to a claim that tolerates the taint; removing
the rule frees its device for the claim without toleration. Consumable capacity: a NIC that
allows multiple allocations is shared by two pods' bandwidth, the third waits.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from polling import wait_until

SCHEDULER = "dra-v137-scheduler"
NS = "e2e-dra-v137"
GPU_DRIVER = "part.e2e.example.com"
FPGA_DRIVER = "taint.e2e.example.com"
NIC_DRIVER = "share.e2e.example.com"
GPU_NODE, FPGA_NODE, NIC_NODE = "kwok-node-3", "kwok-node-4", "kwok-node-5"
UNHEALTHY = "e2e.example.com/unhealthy"
RULE = "e2e-fpga-1-maintenance"


def device_class(name: str, driver: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
            "config": [{"opaque": {"driver": driver, "parameters": {"class": name}}}],
        },
    }


def slice_(name: str, driver: str, node: str, count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
            **spec,
        },
    }


def partition(i: int) -> dict[str, Any]:
    return {
        "name": f"gpu-0-part-{i}",
        "consumesCounters": [{"counterSet": "gpu-0-memory", "counters": {"memory": {"value": "20Gi"}}}],
    }


def claim_pod(name: str, claim: dict[str, Any]) -> dict[str, Any]:
    p = pod(name, NS, SCHEDULER, extra_spec={"resourceClaims": [{"name": "dev", **claim}]})
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
    return p


def fpga_claim(name: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "e2e-fpga"}
    if tolerations:
        exactly["tolerations"] = tolerations
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "fpga", "exactly": exactly}]}},
    }


def unschedulable(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    cond = condition(kubectl.get("pod", name, NS), "PodScheduled")
    return cond if cond and cond["status"] == "False" and cond.get("reason") == "Unschedulable" else None


def bound(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    p = kubectl.get("pod", name, NS)
    return p if p["spec"].get("nodeName") else None


def allocation(kubectl: Kubectl, claim: str) -> dict[str, Any]:
    result: dict[str, Any] = kubectl.get("resourceclaim", claim, NS)["status"]["allocation"]
    return result


@pytest.fixture(scope="module")
def dra_v137(operator_process: Any, kubectl: Kubectl) -> Kubectl:
    served = kubectl.run("api-resources", "--api-group=resource.k8s.io", "-o", "name").stdout.split()
    if "devicetaintrules.resource.k8s.io" not in served:
        pytest.skip("the control plane serves no DeviceTaintRules (older than v1.37)")
    kubectl.apply(
        namespace(NS),
        device_class("e2e-partition", GPU_DRIVER),
        device_class("e2e-fpga", FPGA_DRIVER),
        profile("dra-v137", SCHEDULER),
    )
    return kubectl


def test_shared_counters_let_two_of_three_partitions_be_allocated(dra_v137: Kubectl) -> None:
    kubectl = dra_v137
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "partition", "namespace": NS},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "e2e-partition"}}]}
            }
        },
    }
    counters = [{"name": "gpu-0-memory", "counters": {"memory": {"value": "40Gi"}}}]
    kubectl.apply(
        slice_("e2e-gpu-counters", GPU_DRIVER, GPU_NODE, 2, sharedCounters=counters),
        slice_("e2e-gpu-partitions", GPU_DRIVER, GPU_NODE, 2, devices=[partition(i) for i in range(3)]),
        template,
    )
    kubectl.create(*(claim_pod(f"part-{i}", {"resourceClaimTemplateName": "partition"}) for i in range(3)))

    def two_bound_one_waiting() -> tuple[list[dict[str, Any]], str] | None:
        placed = [p for i in range(3) if (p := bound(kubectl, f"part-{i}"))]
        waiting = [f"part-{i}" for i in range(3) if unschedulable(kubectl, f"part-{i}")]
        return (placed, waiting[0]) if len(placed) == 2 and len(waiting) == 1 else None

    placed, waiting = wait_until("two partitions bound, one pod waiting", two_bound_one_waiting, timeout=90)
    assert {p["spec"]["nodeName"] for p in placed} == {GPU_NODE}
    reason = unschedulable(kubectl, waiting)
    assert reason is not None
    assert "cannot allocate all claims" in reason["message"], reason
    claims = {
        c["metadata"]["ownerReferences"][0]["name"]: c
        for c in kubectl.items("resourceclaims", NS)
        if c["metadata"].get("ownerReferences")
    }
    devices = set()
    for p in placed:
        alloc = claims[p["metadata"]["name"]]["status"]["allocation"]
        [result] = alloc["devices"]["results"]
        devices.add(result["device"])
        # The class config travels with the allocation (one request: "empty means all").
        assert alloc["devices"]["config"] == [
            {
                "source": "FromClass",
                "opaque": {"driver": GPU_DRIVER, "parameters": {"class": "e2e-partition"}},
            }
        ]
    assert len(devices) == 2


def test_a_tainted_device_goes_only_to_a_claim_that_tolerates_it(dra_v137: Kubectl) -> None:
    kubectl = dra_v137
    devices = [
        {"name": "fpga-0", "taints": [{"key": UNHEALTHY, "value": "true", "effect": "NoSchedule"}]},
        {"name": "fpga-1"},
    ]
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": RULE},
        "spec": {
            "deviceSelector": {"driver": FPGA_DRIVER, "pool": FPGA_NODE, "device": "fpga-1"},
            "taint": {"key": "e2e.example.com/maintenance", "effect": "NoSchedule"},
        },
    }
    tolerate = [{"key": UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}]
    kubectl.apply(
        rule,
        slice_("e2e-fpgas", FPGA_DRIVER, FPGA_NODE, 1, devices=devices),
        fpga_claim("fpga-plain"),
        fpga_claim("fpga-tolerant", tolerate),
    )
    try:
        kubectl.create(claim_pod("plain", {"resourceClaimName": "fpga-plain"}))
        cond = wait_until(
            "the pod without toleration waits", lambda: unschedulable(kubectl, "plain"), timeout=60
        )
        assert "cannot allocate all claims" in cond["message"], cond
        assert not (kubectl.get("resourceclaim", "fpga-plain", NS).get("status") or {}).get("allocation")

        kubectl.create(claim_pod("tolerant", {"resourceClaimName": "fpga-tolerant"}))
        wait_until("the tolerating pod bound", lambda: bound(kubectl, "tolerant"), timeout=60)
        [result] = allocation(kubectl, "fpga-tolerant")["devices"]["results"]
        assert result["device"] == "fpga-0"
        assert result["tolerations"] == [{"key": UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}]
    finally:
        kubectl.run("delete", "devicetaintrule", RULE, "--ignore-not-found")

    # Without the rule fpga-1 is clean: the waiting pod gets it.
    wait_until("the pod without toleration bound", lambda: bound(kubectl, "plain"), timeout=90)
    [result] = allocation(kubectl, "fpga-plain")["devices"]["results"]
    assert result["device"] == "fpga-1"
    assert "tolerations" not in result


def test_a_device_allowing_multiple_allocations_is_shared_by_capacity(dra_v137: Kubectl) -> None:
    """DRAConsumableCapacity: 3500M rounds up to 4G of the NIC's 10G, so two pods share it and
    the third waits; each share has its own shareID and consumedCapacity."""
    kubectl = dra_v137
    nic = {
        "name": "nic-0",
        "allowMultipleAllocations": True,
        "capacity": {
            "bandwidth": {
                "value": "10G",
                "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "step": "1G"}},
            }
        },
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "bandwidth", "namespace": NS},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "nic",
                            "exactly": {
                                "deviceClassName": "e2e-nic",
                                "capacity": {"requests": {"bandwidth": "3500M"}},
                            },
                        }
                    ]
                }
            }
        },
    }
    kubectl.apply(
        device_class("e2e-nic", NIC_DRIVER),
        slice_("e2e-nics", NIC_DRIVER, NIC_NODE, 1, devices=[nic]),
        template,
    )
    kubectl.create(*(claim_pod(f"nic-{i}", {"resourceClaimTemplateName": "bandwidth"}) for i in range(3)))

    def two_bound_one_waiting() -> list[dict[str, Any]] | None:
        placed = [p for i in range(3) if (p := bound(kubectl, f"nic-{i}"))]
        waiting = [i for i in range(3) if unschedulable(kubectl, f"nic-{i}")]
        return placed if len(placed) == 2 and len(waiting) == 1 else None

    placed = wait_until("two pods share the NIC, one waits", two_bound_one_waiting, timeout=90)
    assert {p["spec"]["nodeName"] for p in placed} == {NIC_NODE}
    names = {p["metadata"]["name"] for p in placed}
    results = [
        r
        for c in kubectl.items("resourceclaims", NS)
        if c["metadata"].get("ownerReferences") and c["metadata"]["ownerReferences"][0]["name"] in names
        for r in c["status"]["allocation"]["devices"]["results"]
    ]
    assert [r["device"] for r in results] == ["nic-0", "nic-0"]
    assert len({r["shareID"] for r in results}) == 2
    assert all(r["consumedCapacity"] == {"bandwidth": "4G"} for r in results), results
