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
