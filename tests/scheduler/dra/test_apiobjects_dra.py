"""resource.k8s.io/v1 JSON -> the core's DRA model, and the allocation rendered back."""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest

from policy_scheduler.apiobjects.dra import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    allocation_to_json,
    claim_from_api,
    class_from_api,
    extended_claim_status_to_json,
    extended_claim_to_json,
    slice_from_api,
    store_from_manifests,
)
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.scheduler.dra import model as dra
from policy_scheduler.scheduler.dra.extended import (
    ContainerExtendedResourceRequest,
    ExtendedResourceClaimStatus,
)
from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement

SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "n1-gpu"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "n1", "generation": 2, "resourceSliceCount": 1},
        "nodeName": "n1",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {
                    "model": {"string": "a100"},
                    "index": {"int": 0},
                    "ok": {"bool": True},
                    "driverVersion": {"version": "1.2.3"},
                },
                "capacity": {"memory": {"value": "80Gi"}},
            }
        ],
    },
}

CLAIM = {
    "metadata": {
        "name": "p-gpu-x",
        "namespace": "ns",
        "uid": "u1",
        "finalizers": ["resource.kubernetes.io/delete-protection"],
        "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}],
    },
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": "true"}}]},
                },
                {"name": "alt", "firstAvailable": [{"name": "big", "deviceClassName": "gpu", "count": 2}]},
            ],
            "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}],
        }
    },
    "status": {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "gpu-0"}]},
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
    },
}


def test_slice_decodes_attributes_of_every_kind_and_capacity() -> None:
    s = slice_from_api(msgspec.convert(SLICE, ResourceSlice))
    assert s.node_name == "n1"
    assert s.pool == dra.ResourcePool("n1", 2, 1)
    d = s.devices[0]
    assert d.attributes == {
        "model": dra.DeviceAttribute("string", "a100"),
        "index": dra.DeviceAttribute("int", 0),
        "ok": dra.DeviceAttribute("bool", True),
        "driverVersion": dra.DeviceAttribute("version", "1.2.3"),
    }
    assert d.capacity == {"memory": Decimal(80 * 2**30)}


def test_claim_decodes_requests_defaults_status_and_owner() -> None:
    c = claim_from_api(msgspec.convert(CLAIM, ResourceClaim))
    assert c.owner_pod_uid == "pod-uid"
    assert c.finalizers == ("resource.kubernetes.io/delete-protection",)
    assert c.requests[0].exactly == dra.ExactDeviceRequest("gpu", ("true",), "ExactCount", 1, None)
    assert c.requests[1].first_available == (dra.DeviceSubRequest("big", "gpu", (), "ExactCount", 2),)
    assert c.constraints == (dra.DeviceConstraint(("gpu",), "gpu.example.com/model"),)
    assert c.reserved_for == (dra.ConsumerReference("pods", "p", "pod-uid"),)
    assert c.allocation is not None
    assert c.allocation.node_selector == (
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)),
    )
    assert allocation_to_json(c.allocation) == CLAIM["status"]["allocation"]  # type: ignore[index]


def test_class_selectors() -> None:
    raw = {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'x'"}}]},
    }
    assert class_from_api(msgspec.convert(raw, DeviceClass)).selectors == ("device.driver == 'x'",)


def _with_device(**fields: object) -> dict[str, object]:
    device = {"name": "gpu-0", **fields}
    return {**SLICE, "spec": {**SLICE["spec"], "devices": [device]}}  # type: ignore[dict-item]


def test_a_manifest_slice_with_consumes_counters_decodes_them() -> None:
    consumes = [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "20Gi"}}}]
    store = store_from_manifests([_with_device(consumesCounters=consumes)])
    ((device,),) = [s.devices for s in store.slices()]
    want = (dra.CounterConsumption("gpu-0-counters", {"memory": Decimal(20 * 2**30)}),)
    assert device.consumes_counters == want
    # The same object from the API server's JSON decodes alike.
    decoded = msgspec.json.decode(
        msgspec.json.encode(_with_device(consumesCounters=consumes)), type=ResourceSlice
    )
    assert slice_from_api(decoded).devices[0].consumes_counters == want


def test_shared_counters_taints_and_per_device_node_selection_decode() -> None:
    counters = {
        **SLICE,
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "n1", "generation": 2, "resourceSliceCount": 2},
            "nodeName": "n1",
            "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
        },
    }
    [s] = store_from_manifests([counters]).slices()
    assert s.shared_counters == (dra.CounterSet("gpu-0", {"memory": Decimal(40 * 2**30)}),)
    taint = {"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2026-01-02T03:04:05Z"}
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    }
    per_device = {
        **SLICE,
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "n1", "generation": 2, "resourceSliceCount": 2},
            "perDeviceNodeSelection": True,
            "devices": [
                {"name": "a", "nodeName": "n1", "taints": [taint]},
                {"name": "b", "allNodes": True},
                {"name": "c", "nodeSelector": selector},
            ],
        },
    }
    [s] = store_from_manifests([per_device]).slices()
    a, b, c = s.devices
    assert s.per_device_node_selection
    assert a.node_name == "n1"
    assert a.taints == (dra.DeviceTaint("k", "NoExecute", "v", 1767323045.0),)
    assert b.all_nodes
    assert not b.node_name
    assert c.node_selector == (NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("a",)),)),)


def test_device_taint_rules_taint_the_devices_they_select_when_asked() -> None:
    rule = {
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "device": "gpu-0"},
            "taint": {"key": "maintenance", "effect": "NoSchedule"},
        },
    }
    no_selector = {
        "kind": "DeviceTaintRule",
        "metadata": {"name": "none"},
        "spec": {"taint": {"key": "x", "effect": "NoSchedule"}},
    }
    store = store_from_manifests([SLICE, rule, no_selector])
    [plain] = store.slices()
    assert plain.devices[0].taints == ()
    [patched] = store.slices(taint_rules=True)
    assert patched.devices[0].taints == (dra.DeviceTaint("maintenance", "NoSchedule"),)
    store.delete_taint_rule("r")
    assert store.slices(taint_rules=True)[0].devices[0].taints == ()


def test_tolerations_and_config_decode_and_the_allocation_renders_them() -> None:
    claim = {
        "metadata": {"name": "c", "namespace": "ns", "uid": "u"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu",
                            "tolerations": [{"key": "k", "effect": "NoSchedule"}],
                        },
                    }
                ],
                "config": [{"requests": ["gpu"], "opaque": {"driver": "d", "parameters": {"a": 1}}}],
            }
        },
    }
    c = claim_from_api(msgspec.convert(claim, ResourceClaim))
    assert c.requests[0].exactly is not None
    toleration = dra.DeviceToleration("k", dra.TOLERATION_OP_EQUAL, effect="NoSchedule")
    assert c.requests[0].exactly.tolerations == (toleration,)
    opaque = dra.DeviceConfiguration({"opaque": {"driver": "d", "parameters": {"a": 1}}})
    assert c.config == (dra.DeviceClaimConfiguration(opaque, ("gpu",)),)
    cls = class_from_api(
        msgspec.convert(
            {"metadata": {"name": "gpu"}, "spec": {"config": [{"opaque": {"driver": "d"}}]}}, DeviceClass
        )
    )
    assert cls.config == (dra.DeviceConfiguration({"opaque": {"driver": "d"}}),)
    allocation = dra.AllocationResult(
        (dra.DeviceRequestAllocationResult("gpu", "d", "p", "x", tolerations=(toleration,)),),
        None,
        (
            dra.DeviceAllocationConfiguration(dra.CONFIG_SOURCE_CLASS, cls.config[0], ("gpu",)),
            dra.DeviceAllocationConfiguration(dra.CONFIG_SOURCE_CLAIM, opaque),
        ),
    )
    rendered = allocation_to_json(allocation)
    assert rendered["devices"] == {
        "results": [
            {
                "request": "gpu",
                "driver": "d",
                "pool": "p",
                "device": "x",
                "tolerations": [{"operator": "Equal", "key": "k", "effect": "NoSchedule"}],
            }
        ],
        "config": [
            {"source": "FromClass", "requests": ["gpu"], "opaque": {"driver": "d"}},
            {"source": "FromClaim", "opaque": {"driver": "d", "parameters": {"a": 1}}},
        ],
    }
    # And back: a claim allocated by us (or kube-scheduler) reads as what we wrote.
    back = claim_from_api(msgspec.convert({**claim, "status": {"allocation": rendered}}, ResourceClaim))
    assert back.allocation == allocation


def test_a_manifest_slice_field_of_the_wrong_type_names_the_object_and_field() -> None:
    with pytest.raises(ConversionError) as caught:
        store_from_manifests([_with_device(consumesCounters=[{"counterSet": 7}])])
    assert caught.value.obj == "ResourceSlice n1-gpu"
    assert caught.value.path == "spec.devices[0].consumesCounters[0].counterSet"
    assert str(caught.value).startswith(
        "ResourceSlice n1-gpu: spec.devices[0].consumesCounters[0].counterSet: "
    )
    assert "\n" not in str(caught.value)


def test_a_manifest_claim_of_the_wrong_shape_names_the_claim() -> None:
    claim = {"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": []}}
    with pytest.raises(ConversionError) as caught:
        store_from_manifests([claim])
    assert str(caught.value).startswith("ResourceClaim c: spec.devices: ")


def test_consumable_capacity_fields_decode_and_a_share_renders() -> None:
    policy = {
        "default": "1G",
        "validValues": ["1G", "2G"],
        "validRange": {"min": "1G", "max": "4G", "step": "1G"},
    }
    device = {"allowMultipleAllocations": True, "capacity": {"bw": {"value": "10G", "requestPolicy": policy}}}
    [s] = store_from_manifests([_with_device(**device)]).slices()
    [d] = s.devices
    g = Decimal(10**9)
    assert d.allow_multiple_allocations
    assert d.capacity == {"bw": 10 * g}
    assert d.capacity_policies == {
        "bw": dra.CapacityRequestPolicy(g, (g, 2 * g), dra.CapacityRange(g, 4 * g, g)),
    }
    claim = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "r",
                        "exactly": {"deviceClassName": "x", "capacity": {"requests": {"bw": "1500M"}}},
                    }
                ],
                "constraints": [{"requests": ["r"], "distinctAttribute": "x.example.com/numa"}],
            }
        },
    }
    c = claim_from_api(msgspec.convert(claim, ResourceClaim))
    assert c.requests[0].exactly is not None
    assert c.requests[0].exactly.capacity_requests == {"bw": Decimal(1500 * 10**6)}
    assert c.constraints == (dra.DeviceConstraint(("r",), distinct_attribute="x.example.com/numa"),)
    result = dra.DeviceRequestAllocationResult(
        "r",
        "x",
        "p",
        "d",
        share_id="aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        consumed_capacity={"bw": 2 * g, "m": Decimal("0.5")},
    )
    rendered = allocation_to_json(dra.AllocationResult((result,)))
    [item] = rendered["devices"]["results"]
    assert item["shareID"] == "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    assert item["consumedCapacity"] == {"bw": "2000000000", "m": "500m"}
    back = claim_from_api(msgspec.convert({**claim, "status": {"allocation": rendered}}, ResourceClaim))
    assert back.allocation is not None
    assert back.allocation.results == (result,)


def test_a_manifest_slice_with_consumes_counters_decodes_and_marks_the_device() -> None:
    consumes = [{"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "40Gi"}}}]
    store = store_from_manifests([_with_device(consumesCounters=consumes)])
    ((device,),) = [s.devices for s in store.slices()]
    assert device.consumes_counters
    # The same object from the API server's JSON decodes alike.
    decoded = msgspec.json.decode(
        msgspec.json.encode(_with_device(consumesCounters=consumes)), type=ResourceSlice
    )
    assert slice_from_api(decoded).devices[0].consumes_counters


def test_class_extended_resource_name_and_creation_time() -> None:
    raw = {
        "metadata": {"name": "gpu", "creationTimestamp": "2026-01-02T03:04:05Z"},
        "spec": {"extendedResourceName": "example.com/gpu"},
    }
    c = class_from_api(msgspec.convert(raw, DeviceClass))
    assert c.extended_resource_name == "example.com/gpu"
    assert c.created == 1767323045.0
    assert (
        class_from_api(msgspec.convert({"metadata": {"name": "x"}}, DeviceClass)).extended_resource_name
        is None
    )


def test_extended_resource_claim_is_known_by_annotation_and_controlling_pod() -> None:
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}
    raw = {
        "metadata": {
            "name": "p-extended-resources-abcde",
            "namespace": "ns",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [owner],
        }
    }
    c = claim_from_api(msgspec.convert(raw, ResourceClaim))
    assert (c.extended_resource, c.owner_pod_name, c.owner_pod_uid) == (True, "p", "pod-uid")
    raw["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "false"}
    assert not claim_from_api(msgspec.convert(raw, ResourceClaim)).extended_resource


def test_extended_claim_and_pod_status_render_as_kube_scheduler_writes_them() -> None:
    claim = dra.ResourceClaim(
        "<extended-resources>",
        "ns",
        requests=(dra.DeviceRequest("container-0-request-0", dra.ExactDeviceRequest("gpu", count=2)),),
    )
    assert extended_claim_to_json(claim, "p", "pod-uid") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": "ns",
            "generateName": "p-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}
            ],
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-0",
                        "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
                    }
                ]
            }
        },
    }
    status = ExtendedResourceClaimStatus(
        "p-extended-resources-abcde",
        (ContainerExtendedResourceRequest("c", "example.com/gpu", "container-0-request-0"),),
    )
    assert extended_claim_status_to_json(status) == {
        "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": "p-extended-resources-abcde",
    }
