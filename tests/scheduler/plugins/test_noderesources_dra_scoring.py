"""Scoring extended resources backed by DRA (v1.37.2): resource_allocation_test.go's
TestCalculateResourceAllocatableRequest and fit_test.go's LeastAllocated cases with them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.dra.extended import DEVICE_CLASS_PREFIX
from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    Device,
    DeviceClass,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.noderesources.dra_scoring import DraDeviceCounts
from policy_scheduler.scheduler.plugins.noderesources.fit import NodeResourcesFit
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    requested_and_allocatable,
)
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_37

from ._build_noderesources import all_rows, make_node, make_pod, make_table, score_all

NODE = "resource-node"
DRIVER = "test-driver"
CLASS = "device-class-name"
EXPLICIT = "extended.resource.dra.io/something"
IMPLICIT = DEVICE_CLASS_PREFIX + CLASS
EXPLICIT_CLASS = DeviceClass(CLASS, extended_resource_name=EXPLICIT)


def slice_of(node: str, *devices: str) -> ResourceSlice:
    return ResourceSlice(
        f"{node}-slice", DRIVER, ResourcePool(node), tuple(Device(d) for d in devices), node_name=node
    )


def allocated(name: str, device: str) -> ResourceClaim:
    result = DeviceRequestAllocationResult("req-1", DRIVER, NODE, device)
    return ResourceClaim(name, uid=name, allocation=AllocationResult((result,)))


def handle_for(
    table: NodeTable,
    classes: tuple[DeviceClass, ...],
    slices: tuple[ResourceSlice, ...] = (),
    claims: tuple[ResourceClaim, ...] = (),
    enabled: bool = True,
) -> Handle:
    store = DraStore()
    for c in classes:
        store.upsert_class(c)
    for sl in slices:
        store.upsert_slice(sl)
    for claim in claims:
        store.upsert_claim(claim)
    services = ClusterServices(dra=DraServices(store, compile_selector))
    return Handle(table, services=services, features=Features(V1_37 if enabled else V1_35))


@dataclass
class Case:
    name: str
    resource: str
    want: tuple[int, int]  # (allocatable, allocated)
    enabled: bool = True
    node_allocatable: dict[str, int] = field(default_factory=dict)
    classes: tuple[DeviceClass, ...] = ()
    slices: tuple[ResourceSlice, ...] = ()
    claims: tuple[ResourceClaim, ...] = ()


CASES = [
    Case("device-plugin-resource-feature-disabled", EXPLICIT, (4, 0), False, {EXPLICIT: 4}),
    Case("device-plugin-resource-feature-enabled", EXPLICIT, (4, 0), True, {EXPLICIT: 4}, (EXPLICIT_CLASS,)),
    Case(
        "DRA-backed-resource-explicit",
        EXPLICIT,
        (1, 0),
        classes=(EXPLICIT_CLASS,),
        slices=(slice_of(NODE, "device-1"),),
    ),
    Case(
        "DRA-backed-resource-implicit",
        IMPLICIT,
        (1, 0),
        classes=(DeviceClass(CLASS),),
        slices=(slice_of(NODE, "device-1"),),
    ),
    Case("DRA-backed-resource-no-slices", EXPLICIT, (0, 0), classes=(EXPLICIT_CLASS,)),
    Case(
        "DRA-backed-resource-with-allocated-device",
        EXPLICIT,
        (2, 1),
        classes=(EXPLICIT_CLASS,),
        slices=(slice_of(NODE, "device-1", "device-2"),),
        claims=(allocated("test-claim", "device-1"),),
    ),
    Case(
        "DRA-backed-resource-multiple-devices-mixed-allocation",
        EXPLICIT,
        (3, 2),
        classes=(EXPLICIT_CLASS,),
        slices=(slice_of(NODE, "device-1", "device-2", "device-3"),),
        claims=(allocated("test-claim-1", "device-1"), allocated("test-claim-2", "device-2")),
    ),
    # Not in upstream's table: a class selector picks the devices counted; other nodes' do not count.
    Case(
        "DRA-backed-resource-class-selector",
        EXPLICIT,
        (1, 0),
        classes=(DeviceClass(CLASS, ('device.driver == "other-driver"',), extended_resource_name=EXPLICIT),),
        slices=(
            slice_of(NODE, "device-1"),
            ResourceSlice("other", "other-driver", ResourcePool(NODE), (Device("x"),), node_name=NODE),
            slice_of("elsewhere", "device-9"),
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_calculate_resource_allocatable_request(case: Case) -> None:
    table = make_table([make_node(NODE, case.node_allocatable)])
    handle = handle_for(table, case.classes, case.slices, case.claims, case.enabled)
    resources = (ResourceSpec(case.resource, 1),)
    counts = DraDeviceCounts.for_resources(handle, resources)
    dra = counts.capacity_and_allocated if counts is not None else None
    requested, allocatable = requested_and_allocatable(table, all_rows(table), resources, (1,), True, dra)
    want_allocatable, want_allocated = case.want
    assert int(allocatable[0, 0]) == want_allocatable
    # requested = allocated + the pod's 1, where the resource counts at all.
    assert int(requested[0, 0]) == (want_allocated + 1 if want_allocatable else 0)


@pytest.mark.parametrize("pre_score", [True, False], ids=["PreScore", "PreScore not called"])
def test_least_allocated_with_extended_resources(pre_score: bool) -> None:
    table = make_table([make_node("node1"), make_node("node2")])
    slices = (
        slice_of("node1", "device-1", "device-2", "device-3"),
        slice_of("node2", "device-1", "device-2"),
    )
    handle = handle_for(table, (EXPLICIT_CLASS,), slices)
    args = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": EXPLICIT, "weight": 1}]}}
    fit = NodeResourcesFit.from_profile(handle, args)
    assert score_all(fit, make_pod({EXPLICIT: 1}), table, pre_score) == [66, 50]
