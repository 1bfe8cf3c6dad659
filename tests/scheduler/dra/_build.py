"""Builders named like upstream's allocatortesting helpers (structured/internal/allocatortesting)."""

from __future__ import annotations

from decimal import Decimal

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.dra.allocator import Allocator, Features
from policy_scheduler.scheduler.dra.model import (
    ALLOCATION_MODE_ALL,
    AllocationResult,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    DeviceId,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.pools import node_matcher, slice_targets_node
from policy_scheduler.scheduler.model import Node, NodeSelectorTerm, Requirement
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


def request(
    name: str,
    cls: str,
    count: int,
    *selectors: str,
    admin: bool | None = None,
    tolerations: tuple[DeviceToleration, ...] = (),
) -> DeviceRequest:
    exact = ExactDeviceRequest(cls, selectors, count=count, admin_access=admin, tolerations=tolerations)
    return DeviceRequest(name, exact)


def all_request(name: str, cls: str, *selectors: str, admin: bool | None = None) -> DeviceRequest:
    exact = ExactDeviceRequest(
        cls, selectors, allocation_mode=ALLOCATION_MODE_ALL, count=0, admin_access=admin
    )
    return DeviceRequest(name, exact)


def sub_request(
    name: str, cls: str, count: int, *selectors: str, tolerations: tuple[DeviceToleration, ...] = ()
) -> DeviceSubRequest:
    return DeviceSubRequest(name, cls, selectors, count=count, tolerations=tolerations)


def consumes(counter_set: str, **counters: str) -> tuple[CounterConsumption, ...]:
    return (CounterConsumption(counter_set, {k: parse_quantity(v) for k, v in counters.items()}),)


def counter_slice(
    name: str, node: str, pool: str, driver: str, count: int, *sets: CounterSet
) -> ResourceSlice:
    """sliceWithCounterSets: `node` "" means per-device node selection."""
    return ResourceSlice(
        name,
        driver,
        ResourcePool(pool, 1, count),
        node_name=node,
        per_device_node_selection=not node,
        shared_counters=sets,
    )


def counter_set(name: str, **counters: str) -> CounterSet:
    return CounterSet(name, {k: parse_quantity(v) for k, v in counters.items()})


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
    aggregated: dict[DeviceId, dict[str, Decimal]] | None = None,
    shared: tuple[DeviceId, ...] = (),
) -> list[AllocationResult] | None:
    """Allocate for one node: visible slices selected the way GatherPools does."""
    by_name = {c.name: c for c in classes}
    labels = {"region": REGION1} if node_labels is None else node_labels
    features = features or Features()
    the_node = Node(node, labels=labels)
    matches = node_matcher(the_node)
    visible = [sl for sl in slices if slice_targets_node(sl, matches, features.partitionable_devices)]
    a = Allocator(
        frozenset(allocated),
        by_name.get,
        slices,
        compile_selector,
        features,
        shared=frozenset(shared),
        aggregated=aggregated or {},
    )
    return a.allocate(node, visible, claims, node=the_node)


def gi(n: int) -> Decimal:
    return Decimal(n * 2**30)
