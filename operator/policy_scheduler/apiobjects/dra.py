"""resource.k8s.io/v1 ResourceSlice, DeviceClass and ResourceClaim: msgspec views + conversion.

Decoding keeps only what allocation reads (same pattern as structs.py/convert.py); the claim's
allocation is also rendered back to JSON for the status the scheduler writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from policy_scheduler.apiobjects.convert_common import struct_from_dict
from policy_scheduler.apiobjects.structs import NodeSelector, ObjectMeta, Quantity
from policy_scheduler.apiobjects.structs import Requirement as ReqStruct
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.dra import model as dra
from policy_scheduler.scheduler.dra.extended import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ExtendedResourceClaimStatus,
)
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.resources import parse_quantity


class _Base(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=False):
    pass


class DeviceAttribute(_Base):
    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None


class DeviceCapacity(_Base):
    value: Quantity = 0


class DeviceCounterConsumption(_Base):
    counter_set: str = ""
    counters: dict[str, DeviceCapacity] | None = None


class Device(_Base):
    name: str = ""
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None
    binding_conditions: list[str] | None = None


class ResourcePool(_Base):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_Base):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] | None = None


class ResourceSlice(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class CELSelector(_Base):
    expression: str = ""


class DeviceSelector(_Base):
    cel: CELSelector | None = None


class DeviceClassSpec(_Base):
    selectors: list[DeviceSelector] | None = None
    extended_resource_name: str | None = None


class DeviceClass(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


class ExactDeviceRequest(_Base):
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""
    count: int = 0
    admin_access: bool | None = None


class DeviceSubRequest(_Base):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""
    count: int = 0


class DeviceRequest(_Base):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(_Base):
    requests: list[str] | None = None
    match_attribute: str | None = None


class DeviceClaim(_Base):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None


class ResourceClaimSpec(_Base):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceResult(_Base):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None


class DeviceAllocation(_Base):
    results: list[DeviceResult] | None = None


class AllocationResult(_Base):
    devices: DeviceAllocation = msgspec.field(default_factory=DeviceAllocation)
    node_selector: NodeSelector | None = None


class ConsumerRef(_Base):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(_Base):
    allocation: AllocationResult | None = None
    reserved_for: list[ConsumerRef] | None = None


class ClaimMeta(ObjectMeta):
    finalizers: list[str] | None = None


class ResourceClaim(_Base):
    metadata: ClaimMeta = msgspec.field(default_factory=ClaimMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


# ---- conversion --------------------------------------------------------------------------------


def _requirements(reqs: list[ReqStruct] | None) -> tuple[model.Requirement, ...]:
    return tuple(model.Requirement(r.key, r.operator, tuple(r.values or ())) for r in reqs or ())


def _terms(ns: NodeSelector | None) -> tuple[model.NodeSelectorTerm, ...] | None:
    if ns is None:
        return None
    return tuple(
        model.NodeSelectorTerm(_requirements(t.match_expressions), _requirements(t.match_fields))
        for t in ns.node_selector_terms or ()
    )


def _attribute(a: DeviceAttribute) -> dra.DeviceAttribute | None:
    if a.string is not None:
        return dra.DeviceAttribute("string", a.string)
    if a.int_value is not None:
        return dra.DeviceAttribute("int", a.int_value)
    if a.bool_value is not None:
        return dra.DeviceAttribute("bool", a.bool_value)
    if a.version is not None:
        return dra.DeviceAttribute("version", a.version)
    return None


def _capacity(value: Quantity) -> Decimal:
    return parse_quantity(value)


def _device(d: Device) -> dra.Device:
    attrs = {k: v for k, a in (d.attributes or {}).items() if (v := _attribute(a)) is not None}
    return dra.Device(
        d.name,
        attrs,
        {k: _capacity(c.value) for k, c in (d.capacity or {}).items()},
        consumes_counters=bool(d.consumes_counters),
        binding_conditions=bool(d.binding_conditions),
    )


def slice_from_api(s: ResourceSlice) -> dra.ResourceSlice:
    spec = s.spec
    return dra.ResourceSlice(
        s.metadata.name,
        spec.driver,
        dra.ResourcePool(spec.pool.name, spec.pool.generation, spec.pool.resource_slice_count),
        tuple(_device(d) for d in spec.devices or ()),
        node_name=spec.node_name or "",
        node_selector=_terms(spec.node_selector),
        all_nodes=bool(spec.all_nodes),
        per_device_node_selection=bool(spec.per_device_node_selection),
    )


def _selectors(sels: list[DeviceSelector] | None) -> tuple[str, ...]:
    # A selector without CEL (a newer selector type) is kept as "": the allocator rejects it.
    return tuple(s.cel.expression if s.cel is not None else "" for s in sels or ())


def class_from_api(c: DeviceClass) -> dra.DeviceClass:
    created = c.metadata.creation_timestamp
    return dra.DeviceClass(
        c.metadata.name,
        _selectors(c.spec.selectors),
        c.metadata.uid,
        extended_resource_name=c.spec.extended_resource_name,
        created=created.timestamp() if created is not None else 0.0,
    )


def _mode_count(mode: str, count: int) -> tuple[str, int]:
    """API defaulting: ExactCount with count 1."""
    mode = mode or dra.ALLOCATION_MODE_EXACT_COUNT
    return mode, count or (1 if mode == dra.ALLOCATION_MODE_EXACT_COUNT else 0)


def _request(r: DeviceRequest) -> dra.DeviceRequest:
    exact = None
    if r.exactly is not None:
        e = r.exactly
        mode, count = _mode_count(e.allocation_mode, e.count)
        exact = dra.ExactDeviceRequest(
            e.device_class_name, _selectors(e.selectors), mode, count, e.admin_access
        )
    subs = tuple(
        dra.DeviceSubRequest(
            s.name, s.device_class_name, _selectors(s.selectors), *_mode_count(s.allocation_mode, s.count)
        )
        for s in r.first_available or ()
    )
    return dra.DeviceRequest(r.name, exact, subs)


def _allocation(a: AllocationResult | None) -> dra.AllocationResult | None:
    if a is None:
        return None
    results = tuple(
        dra.DeviceRequestAllocationResult(r.request, r.driver, r.pool, r.device, r.admin_access)
        for r in a.devices.results or ()
    )
    return dra.AllocationResult(results, _terms(a.node_selector))


def _epoch(meta: ObjectMeta) -> float | None:
    ts = meta.deletion_timestamp
    return ts.timestamp() if ts is not None else None


def claim_from_api(c: ResourceClaim) -> dra.ResourceClaim:
    meta = c.metadata
    owner = next((o for o in meta.owner_references or () if o.controller and o.kind == "Pod"), None)
    return dra.ResourceClaim(
        meta.name,
        meta.namespace or "default",
        meta.uid,
        tuple(_request(r) for r in c.spec.devices.requests or ()),
        tuple(
            dra.DeviceConstraint(tuple(x.requests or ()), x.match_attribute)
            for x in c.spec.devices.constraints or ()
        ),
        _allocation(c.status.allocation),
        tuple(
            dra.ConsumerReference(r.resource, r.name, r.uid, r.api_group) for r in c.status.reserved_for or ()
        ),
        _epoch(meta),
        owner.uid if owner is not None else "",
        tuple(meta.finalizers or ()),
        meta.resource_version,
        extended_resource=(meta.annotations or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true",
        owner_pod_name=owner.name if owner is not None else "",
    )


def claim_from_json(raw: Mapping[str, Any]) -> dra.ResourceClaim:
    return claim_from_api(struct_from_dict(raw, ResourceClaim, "ResourceClaim"))


# ---- to JSON (status the scheduler writes) -------------------------------------------------------


def _requirement_json(r: model.Requirement) -> dict[str, Any]:
    return {"key": r.key, "operator": r.operator, "values": list(r.values)}


def allocation_to_json(a: dra.AllocationResult) -> dict[str, Any]:
    results = []
    for r in a.results:
        item: dict[str, Any] = {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
        if r.admin_access is not None:
            item["adminAccess"] = r.admin_access
        results.append(item)
    out: dict[str, Any] = {"devices": {"results": results}}
    if a.node_selector is not None:
        terms = []
        for t in a.node_selector:
            term: dict[str, Any] = {}
            if t.match_expressions:
                term["matchExpressions"] = [_requirement_json(r) for r in t.match_expressions]
            if t.match_fields:
                term["matchFields"] = [_requirement_json(r) for r in t.match_fields]
            terms.append(term)
        out["nodeSelector"] = {"nodeSelectorTerms": terms}
    return out


def extended_claim_to_json(claim: dra.ResourceClaim, pod_name: str, pod_uid: str) -> dict[str, Any]:
    """The claim createExtendedResourceClaimInAPI creates: owned by the pod, annotated, named by
    the API server from the pod's name, its exact requests as Filter shaped them."""
    requests = []
    for r in claim.requests:
        assert r.exactly is not None  # extended-resource claims hold exact requests only
        exactly = {
            "deviceClassName": r.exactly.device_class_name,
            "allocationMode": r.exactly.allocation_mode,
            "count": r.exactly.count,
        }
        requests.append({"name": r.name, "exactly": exactly})
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": claim.namespace,
            "generateName": f"{pod_name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid, "controller": True}
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": requests}},
    }


def extended_claim_status_to_json(status: ExtendedResourceClaimStatus) -> dict[str, Any]:
    """pod.status.extendedResourceClaimStatus."""
    return {
        "requestMappings": [
            {
                "containerName": m.container_name,
                "resourceName": m.resource_name,
                "requestName": m.request_name,
            }
            for m in status.request_mappings
        ],
        "resourceClaimName": status.resource_claim_name,
    }


# ---- manifests (simulate, parity) ---------------------------------------------------------------


def store_from_manifests(objects: Iterable[Mapping[str, Any]]) -> DraStore:
    """A DraStore holding the DeviceClasses, ResourceSlices and ResourceClaims among `objects`
    (other kinds are skipped), as the informers would fill it."""
    store = DraStore()
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ResourceSlice":
            store.upsert_slice(slice_from_api(struct_from_dict(obj, ResourceSlice, kind)))
        elif kind == "DeviceClass":
            store.upsert_class(class_from_api(struct_from_dict(obj, DeviceClass, kind)))
        elif kind == "ResourceClaim":
            store.upsert_claim(claim_from_json(obj))
    return store
