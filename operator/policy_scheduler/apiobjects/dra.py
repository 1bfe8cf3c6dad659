"""resource.k8s.io/v1 ResourceSlice, DeviceClass and ResourceClaim: msgspec views + conversion.

Decoding keeps only what allocation reads (same pattern as structs.py/convert.py); the claim's
allocation is also rendered back to JSON for the status the scheduler writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from policy_scheduler.apiobjects.convert_common import struct_from_dict
from policy_scheduler.apiobjects.structs import NodeSelector, ObjectMeta, Quantity
from policy_scheduler.apiobjects.structs import Requirement as ReqStruct
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.dra import model as dra
from policy_scheduler.scheduler.dra.capacity import format_quantity
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


class CapacityRequestPolicyRange(_Base):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(_Base):
    default: Quantity | None = None
    valid_values: list[Quantity] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_Base):
    value: Quantity = 0
    request_policy: CapacityRequestPolicy | None = None


class DeviceCounterConsumption(_Base):
    counter_set: str = ""
    counters: dict[str, DeviceCapacity] | None = None


class CounterSet(_Base):
    name: str = ""
    counters: dict[str, DeviceCapacity] | None = None


class DeviceTaint(_Base):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


class DeviceToleration(_Base):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Device(_Base):
    name: str = ""
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None
    binding_conditions: list[str] | None = None
    taints: list[DeviceTaint] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    allow_multiple_allocations: bool | None = None


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
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class DeviceTaintSelector(_Base):
    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(_Base):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = msgspec.field(default_factory=DeviceTaint)


class DeviceTaintRule(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = msgspec.field(default_factory=DeviceTaintRuleSpec)


class CELSelector(_Base):
    expression: str = ""


class DeviceSelector(_Base):
    cel: CELSelector | None = None


class DeviceClassSpec(_Base):
    selectors: list[DeviceSelector] | None = None
    # DeviceClassConfiguration: a DeviceConfiguration (`opaque`), passed on as written.
    config: list[dict[str, Any]] | None = None
    extended_resource_name: str | None = None


class DeviceClass(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


class CapacityRequirements(_Base):
    requests: dict[str, Quantity] | None = None


class ExactDeviceRequest(_Base):
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_Base):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str = ""
    count: int = 0
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceRequest(_Base):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(_Base):
    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaim(_Base):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    # DeviceClaimConfiguration: `requests` plus a DeviceConfiguration (`opaque`).
    config: list[dict[str, Any]] | None = None


class ResourceClaimSpec(_Base):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceResult(_Base):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] | None = None


class DeviceAllocation(_Base):
    results: list[DeviceResult] | None = None
    # DeviceAllocationConfiguration: `source`, `requests` and a DeviceConfiguration.
    config: list[dict[str, Any]] | None = None


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


def _counters(counters: dict[str, DeviceCapacity] | None) -> dict[str, Decimal]:
    return {k: _capacity(c.value) for k, c in (counters or {}).items()}


def _taint(t: DeviceTaint) -> dra.DeviceTaint:
    return dra.DeviceTaint(t.key, t.effect, t.value, t.time_added.timestamp() if t.time_added else None)


def _tolerations(ts: list[DeviceToleration] | None) -> tuple[dra.DeviceToleration, ...]:
    # API defaulting: an empty operator is Equal.
    return tuple(
        dra.DeviceToleration(
            t.key, t.operator or dra.TOLERATION_OP_EQUAL, t.value, t.effect, t.toleration_seconds
        )
        for t in ts or ()
    )


def _policy(p: CapacityRequestPolicy) -> dra.CapacityRequestPolicy:
    r = p.valid_range
    valid_range = None
    if r is not None and r.min is not None:
        valid_range = dra.CapacityRange(
            _capacity(r.min),
            _capacity(r.max) if r.max is not None else None,
            _capacity(r.step) if r.step is not None else None,
        )
    return dra.CapacityRequestPolicy(
        _capacity(p.default) if p.default is not None else None,
        tuple(_capacity(v) for v in p.valid_values or ()),
        valid_range,
    )


def _device(d: Device) -> dra.Device:
    attrs = {k: v for k, a in (d.attributes or {}).items() if (v := _attribute(a)) is not None}
    return dra.Device(
        d.name,
        attrs,
        _counters(d.capacity),
        consumes_counters=tuple(
            dra.CounterConsumption(c.counter_set, _counters(c.counters)) for c in d.consumes_counters or ()
        ),
        binding_conditions=bool(d.binding_conditions),
        taints=tuple(_taint(t) for t in d.taints or ()),
        node_name=d.node_name or "",
        node_selector=_terms(d.node_selector),
        all_nodes=bool(d.all_nodes),
        allow_multiple_allocations=bool(d.allow_multiple_allocations),
        capacity_policies={
            k: _policy(c.request_policy)
            for k, c in (d.capacity or {}).items()
            if c.request_policy is not None
        },
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
        shared_counters=tuple(
            dra.CounterSet(c.name, _counters(c.counters)) for c in spec.shared_counters or ()
        ),
    )


def taint_rule_from_api(r: DeviceTaintRule) -> dra.DeviceTaintRule:
    sel = r.spec.device_selector
    if sel is None:
        return dra.DeviceTaintRule(r.metadata.name, _taint(r.spec.taint), has_selector=False)
    return dra.DeviceTaintRule(r.metadata.name, _taint(r.spec.taint), sel.driver, sel.pool, sel.device)


def _selectors(sels: list[DeviceSelector] | None) -> tuple[str, ...]:
    # A selector without CEL (a newer selector type) is kept as "": the allocator rejects it.
    return tuple(s.cel.expression if s.cel is not None else "" for s in sels or ())


def _configuration(raw: Mapping[str, Any]) -> dra.DeviceConfiguration:
    """The DeviceConfiguration part of a class, claim or allocation config entry."""
    return dra.DeviceConfiguration({k: v for k, v in raw.items() if k not in ("requests", "source")})


def class_from_api(c: DeviceClass) -> dra.DeviceClass:
    config = tuple(_configuration(x) for x in c.spec.config or ())
    created = c.metadata.creation_timestamp
    return dra.DeviceClass(
        c.metadata.name,
        _selectors(c.spec.selectors),
        c.metadata.uid,
        config,
        extended_resource_name=c.spec.extended_resource_name,
        created=created.timestamp() if created is not None else 0.0,
    )


def _mode_count(mode: str, count: int) -> tuple[str, int]:
    """API defaulting: ExactCount with count 1."""
    mode = mode or dra.ALLOCATION_MODE_EXACT_COUNT
    return mode, count or (1 if mode == dra.ALLOCATION_MODE_EXACT_COUNT else 0)


def _capacity_requests(c: CapacityRequirements | None) -> dict[str, Decimal] | None:
    if c is None or c.requests is None:
        return None
    return {k: _capacity(v) for k, v in c.requests.items()}


def _request(r: DeviceRequest) -> dra.DeviceRequest:
    exact = None
    if r.exactly is not None:
        e = r.exactly
        mode, count = _mode_count(e.allocation_mode, e.count)
        exact = dra.ExactDeviceRequest(
            e.device_class_name,
            _selectors(e.selectors),
            mode,
            count,
            e.admin_access,
            _tolerations(e.tolerations),
            _capacity_requests(e.capacity),
        )
    subs = tuple(
        dra.DeviceSubRequest(
            s.name,
            s.device_class_name,
            _selectors(s.selectors),
            *_mode_count(s.allocation_mode, s.count),
            _tolerations(s.tolerations),
            _capacity_requests(s.capacity),
        )
        for s in r.first_available or ()
    )
    return dra.DeviceRequest(r.name, exact, subs)


def _allocation(a: AllocationResult | None) -> dra.AllocationResult | None:
    if a is None:
        return None
    results = tuple(
        dra.DeviceRequestAllocationResult(
            r.request,
            r.driver,
            r.pool,
            r.device,
            r.admin_access,
            _tolerations(r.tolerations),
            r.share_id,
            _counters_or_none(r.consumed_capacity),
        )
        for r in a.devices.results or ()
    )
    config = tuple(
        dra.DeviceAllocationConfiguration(
            str(x.get("source", "")), _configuration(x), tuple(x.get("requests") or ())
        )
        for x in a.devices.config or ()
    )
    return dra.AllocationResult(results, _terms(a.node_selector), config)


def _counters_or_none(values: dict[str, Quantity] | None) -> dict[str, Decimal] | None:
    return None if values is None else {k: _capacity(v) for k, v in values.items()}


def _claim_config(raw: Mapping[str, Any]) -> dra.DeviceClaimConfiguration:
    return dra.DeviceClaimConfiguration(_configuration(raw), tuple(raw.get("requests") or ()))


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
            dra.DeviceConstraint(tuple(x.requests or ()), x.match_attribute, x.distinct_attribute)
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
        tuple(_claim_config(x) for x in c.spec.devices.config or ()),
        extended_resource=(meta.annotations or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true",
        owner_pod_name=owner.name if owner is not None else "",
    )


def claim_from_json(raw: Mapping[str, Any]) -> dra.ResourceClaim:
    return claim_from_api(struct_from_dict(raw, ResourceClaim, "ResourceClaim"))


# ---- to JSON (status the scheduler writes) -------------------------------------------------------


def _requirement_json(r: model.Requirement) -> dict[str, Any]:
    return {"key": r.key, "operator": r.operator, "values": list(r.values)}


def _toleration_json(t: dra.DeviceToleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": t.operator}
    for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def allocation_to_json(a: dra.AllocationResult) -> dict[str, Any]:
    results = []
    for r in a.results:
        item: dict[str, Any] = {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
        if r.admin_access is not None:
            item["adminAccess"] = r.admin_access
        if r.tolerations:
            item["tolerations"] = [_toleration_json(t) for t in r.tolerations]
        if r.share_id is not None:
            item["shareID"] = r.share_id
        if r.consumed_capacity is not None:
            item["consumedCapacity"] = {k: format_quantity(v) for k, v in r.consumed_capacity.items()}
        results.append(item)
    devices: dict[str, Any] = {"results": results}
    if a.config:
        devices["config"] = [
            {"source": c.source, **({"requests": list(c.requests)} if c.requests else {}), **c.config.raw}
            for c in a.config
        ]
    out: dict[str, Any] = {"devices": devices}
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
    """A DraStore holding the DeviceClasses, ResourceSlices, ResourceClaims and DeviceTaintRules
    among `objects` (other kinds are skipped), as the informers would fill it."""
    store = DraStore()
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ResourceSlice":
            store.upsert_slice(slice_from_api(struct_from_dict(obj, ResourceSlice, kind)))
        elif kind == "DeviceClass":
            store.upsert_class(class_from_api(struct_from_dict(obj, DeviceClass, kind)))
        elif kind == "ResourceClaim":
            store.upsert_claim(claim_from_json(obj))
        elif kind == "DeviceTaintRule":
            store.upsert_taint_rule(taint_rule_from_api(struct_from_dict(obj, DeviceTaintRule, kind)))
    return store
