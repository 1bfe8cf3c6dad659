"""Builders named like upstream's allocatortesting helpers (structured/internal/allocatortesting)."""

from __future__ import annotations

from decimal import Decimal

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.dra.allocator import Allocator, Features
from policy_scheduler.scheduler.dra.model import (
    ALLOCATION_MODE_ALL,
    AllocationResult,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    DeviceId,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement
from policy_scheduler.scheduler.resources import parse_quantity

REGION1, NODE1, NODE2 = "region-1", "node-1", "node-2"
CLASS_A, CLASS_B, DRIVER_A, DRIVER_B = "class-a", "class-b", "driver-a", "driver-b"
POOL1, POOL2 = "pool-1", "pool-2"
REQ0, REQ1, SUB0, SUB1 = "req-0", "req-1", "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
DEV1, DEV2, DEV3 = "device-1", "device-2", "device-3"


def device_class(name: str, driver: str) -> DeviceClass:
    return DeviceClass(name, (f'device.driver == "{driver}"',))


def device(name: str, capacity: dict[str, str] | None = None, **attrs: DeviceAttribute) -> Device:
    return Device(
        name,
        {k.replace("__", "/"): v for k, v in attrs.items()},
        {k: parse_quantity(v) for k, v in (capacity or {}).items()},
    )


def s(v: str) -> DeviceAttribute:
    return DeviceAttribute("string", v)


def i(v: int) -> DeviceAttribute:
    return DeviceAttribute("int", v)


def b(v: bool) -> DeviceAttribute:
    return DeviceAttribute("bool", v)


def ver(v: str) -> DeviceAttribute:
    return DeviceAttribute("version", v)


def slice_with_devices(
    name: str, node: str, pool: str, driver: str, *devices: Device, generation: int = 1
) -> ResourceSlice:
    return ResourceSlice(name, driver, ResourcePool(pool, generation, 1), devices, node_name=node)


def network_slice(
    name: str, pool: str, driver: str, *devices: Device, region: str | None = None
) -> ResourceSlice:
    if region is None:
        return ResourceSlice(name, driver, ResourcePool(pool, 1, 1), devices, all_nodes=True)
    term = NodeSelectorTerm(match_expressions=(Requirement("region", "In", (region,)),))
    return ResourceSlice(name, driver, ResourcePool(pool, 1, 1), devices, node_selector=(term,))


def request(name: str, cls: str, count: int, *selectors: str, admin: bool | None = None) -> DeviceRequest:
    return DeviceRequest(name, ExactDeviceRequest(cls, selectors, count=count, admin_access=admin))


def all_request(name: str, cls: str, *selectors: str, admin: bool | None = None) -> DeviceRequest:
    exact = ExactDeviceRequest(
        cls, selectors, allocation_mode=ALLOCATION_MODE_ALL, count=0, admin_access=admin
    )
    return DeviceRequest(name, exact)


def sub_request(name: str, cls: str, count: int, *selectors: str) -> DeviceSubRequest:
    return DeviceSubRequest(name, cls, selectors, count=count)


def prioritized(name: str, *subs: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest(name, first_available=subs)


def claim(
    name: str, *requests: DeviceRequest, constraints: tuple[DeviceConstraint, ...] = (), namespace: str = ""
) -> ResourceClaim:
    return ResourceClaim(name, namespace, uid=f"uid-{name}", requests=requests, constraints=constraints)


def local_node_selector(node: str) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (node,)),)),)


def result(
    request: str, driver: str, pool: str, dev: str, admin: bool = False
) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(request, driver, pool, dev, True if admin else None)


def allocation(
    node_selector: tuple[NodeSelectorTerm, ...] | None, *results: DeviceRequestAllocationResult
) -> AllocationResult:
    return AllocationResult(results, node_selector)


def allocate(
    claims: list[ResourceClaim],
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    node: str = NODE1,
    allocated: tuple[DeviceId, ...] = (),
    features: Features | None = None,
    node_labels: dict[str, str] | None = None,
) -> list[AllocationResult] | None:
    """Allocate for one node: visible slices selected the way GatherPools does."""
    by_name = {c.name: c for c in classes}
    labels = {"region": REGION1} if node_labels is None else node_labels
    visible = [sl for sl in slices if _visible(sl, node, labels)]
    a = Allocator(frozenset(allocated), by_name.get, slices, compile_selector, features or Features())
    return a.allocate(node, visible, claims)


def _visible(sl: ResourceSlice, node: str, labels: dict[str, str]) -> bool:
    if sl.node_name:
        return sl.node_name == node
    if sl.all_nodes:
        return True
    if sl.node_selector is not None:
        from policy_scheduler.scheduler.model import Node
        from policy_scheduler.scheduler.selectors.node_matching import node_matches_terms

        return node_matches_terms(Node(node, labels=labels), sl.node_selector)
    return False


def gi(n: int) -> Decimal:
    return Decimal(n * 2**30)
