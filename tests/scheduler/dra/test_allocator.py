"""Cases ported from dynamic-resource-allocation/structured/internal/allocatortesting (v0.35.4)."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.dra.allocator import AllocationError, FailedOnNode, Features
from policy_scheduler.scheduler.dra.model import (
    DeviceAttribute,
    DeviceConstraint,
    DeviceId,
    DeviceSubRequest,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement

from ._build import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SUB0,
    SUB1,
    all_request,
    allocate,
    allocation,
    claim,
    device,
    device_class,
    i,
    local_node_selector,
    network_slice,
    prioritized,
    request,
    result,
    s,
    slice_with_devices,
    sub_request,
    ver,
)

CLASSES = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]


def mem(expr: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{expr}")) >= 0'


def test_simple() -> None:
    got = allocate(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        CLASSES,
        [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))],
    )
    assert got == [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))]


def test_other_node() -> None:
    slices = [slice_with_devices("slice-1", NODE2, POOL1, DRIVER_A, device(DEV1))]
    assert allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, slices) is None


def test_small_and_large_backtrack_requests() -> None:
    # The large device is listed first: the small request takes it, then must give it back.
    slices = [
        slice_with_devices(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEV2, {"memory": "2Gi"}),
            device(DEV1, {"memory": "1Gi"}),
        )
    ]
    c = claim(CLAIM0, request(REQ0, CLASS_A, 1, mem("1Gi")), request(REQ1, CLASS_A, 1, mem("2Gi")))
    assert allocate([c], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV1),
            result(REQ1, DRIVER_A, POOL1, DEV2),
        )
    ]


def test_small_and_large_backtrack_claims() -> None:
    slices = [
        slice_with_devices(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEV2, {"memory": "2Gi"}),
            device(DEV1, {"memory": "1Gi"}),
        )
    ]
    c0 = claim(CLAIM0, request(REQ0, CLASS_A, 1, mem("1Gi")))
    c1 = claim(CLAIM1, request(REQ1, CLASS_A, 1, mem("2Gi")))
    got = allocate([c0, c1], CLASSES, slices)
    assert got == [
        allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1)),
        allocation(local_node_selector(NODE1), result(REQ1, DRIVER_A, POOL1, DEV2)),
    ]


def test_not_enough_suitable_devices() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    assert allocate([claim(CLAIM0, request(REQ0, CLASS_A, 2))], CLASSES, slices) is None


def test_obsolete_slice_is_ignored() -> None:
    old = slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), generation=1)
    new = slice_with_devices("slice-2", NODE1, POOL1, DRIVER_A, device(DEV2), generation=2)
    got = allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, [old, new])
    assert got == [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2))]


def test_duplicate_slice_is_an_invalid_pool() -> None:
    a = slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))
    dup = ResourceSlice("slice-2", DRIVER_A, ResourcePool(POOL1, 1, 2), (device(DEV1),), node_name=NODE1)
    a = ResourceSlice("slice-1", DRIVER_A, ResourcePool(POOL1, 1, 2), a.devices, node_name=NODE1)
    with pytest.raises(FailedOnNode, match="invalid resource pools were encountered"):
        allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, [a, dup])


def test_unknown_class() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    with pytest.raises(AllocationError, match="could not retrieve device class class-c"):
        allocate([claim(CLAIM0, request(REQ0, "class-c", 1))], CLASSES, slices)


def test_all_devices_many() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    assert allocate([claim(CLAIM0, all_request(REQ0, CLASS_A))], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV1),
            result(REQ0, DRIVER_A, POOL1, DEV2),
        )
    ]


def test_all_devices_some_allocated() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    got = allocate(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        CLASSES,
        slices,
        allocated=(DeviceId(DRIVER_A, POOL1, DEV1),),
    )
    assert got is None


def test_all_devices_some_allocated_admin_access() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    c = claim(CLAIM0, all_request(REQ0, CLASS_A, admin=True))
    got = allocate([c], CLASSES, slices, allocated=(DeviceId(DRIVER_A, POOL1, DEV1),))
    assert got == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV1, admin=True),
            result(REQ0, DRIVER_A, POOL1, DEV2, admin=True),
        )
    ]


def test_all_devices_plus_another_no_solution() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(CLAIM0, all_request(REQ0, CLASS_A), request(REQ1, CLASS_A, 1))
    assert allocate([c], CLASSES, slices) is None


def test_all_devices_no_slices() -> None:
    assert allocate([claim(CLAIM0, all_request(REQ0, CLASS_A))], CLASSES, []) is None


def test_separate_claims_share_device_admin_access() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    c0 = claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))
    c1 = claim(CLAIM1, request(REQ0, CLASS_A, 1, admin=True))
    want = allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1, admin=True))
    assert allocate([c0, c1], CLASSES, slices) == [want, want]


def test_admin_access_disabled() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    with pytest.raises(AllocationError, match="admin access is requested, but the feature is disabled"):
        allocate(
            [claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
            CLASSES,
            slices,
            features=Features(admin_access=False),
        )


def test_already_allocated_devices_are_skipped() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    got = allocate(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        CLASSES,
        slices,
        allocated=(DeviceId(DRIVER_A, POOL1, DEV1),),
    )
    assert got == [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2))]


def test_network_attached_device() -> None:
    slices = [network_slice("slice-1", POOL1, DRIVER_A, device(DEV1), region="region-1")]
    got = allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, slices)
    assert got is not None
    assert got[0].node_selector == slices[0].node_selector
    assert (
        allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, slices, node_labels={"region": "r2"})
        is None
    )


def test_local_and_network_attached_devices() -> None:
    slices = [
        slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1)),
        network_slice("slice-2", POOL2, DRIVER_A, device(DEV2)),
    ]
    got = allocate([claim(CLAIM0, request(REQ0, CLASS_A, 2))], CLASSES, slices)
    # A node-local device pins the node.
    assert got == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV1),
            result(REQ0, DRIVER_A, POOL2, DEV2),
        )
    ]


def test_all_nodes_slice_has_no_node_selector() -> None:
    slices = [network_slice("slice-1", POOL1, DRIVER_A, device(DEV1))]
    got = allocate([claim(CLAIM0, request(REQ0, CLASS_A, 1))], CLASSES, slices)
    assert got == [allocation(None, result(REQ0, DRIVER_A, POOL1, DEV1))]


def test_several_different_drivers() -> None:
    slices = [
        slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1)),
        slice_with_devices("slice-2", NODE1, POOL1, DRIVER_B, device(DEV1)),
    ]
    c = claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_B, 1))
    assert allocate([c], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV1),
            result(REQ1, DRIVER_B, POOL1, DEV1),
        )
    ]


def test_with_constraint() -> None:
    slices = [
        slice_with_devices(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEV1, numa=i(1)),
            device(DEV2, numa=i(2)),
            device(DEV3, numa=i(2)),
        )
    ]
    c = claim(
        CLAIM0,
        request(REQ0, CLASS_A, 1),
        request(REQ1, CLASS_A, 1, 'device.attributes["driver-a"].numa == 2'),
        constraints=(DeviceConstraint(match_attribute=f"{DRIVER_A}/numa"),),
    )
    # req-0 first takes device-1 (numa 1); req-1 needs numa 2, so the search backtracks.
    assert allocate([c], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV2),
            result(REQ1, DRIVER_A, POOL1, DEV3),
        )
    ]


def test_with_constraint_non_existent_attribute() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(
        CLAIM0, request(REQ0, CLASS_A, 1), constraints=(DeviceConstraint(match_attribute="driver-a/nope"),)
    )
    assert allocate([c], CLASSES, slices) is None


@pytest.mark.parametrize(
    ("a", "bv"),
    [(i(1), i(2)), (s("a"), s("b")), (ver("1.0.0"), ver("2.0.0"))],
    ids=["int", "string", "version"],
)
def test_with_constraint_not_matching(a: DeviceAttribute, bv: DeviceAttribute) -> None:
    slices = [
        slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1, attr=a), device(DEV2, attr=bv))
    ]
    c = claim(
        CLAIM0, request(REQ0, CLASS_A, 2), constraints=(DeviceConstraint(match_attribute="driver-a/attr"),)
    )
    assert allocate([c], CLASSES, slices) is None


def test_with_constraint_not_matching_int_attribute_all_devices() -> None:
    slices = [
        slice_with_devices(
            "slice-1", NODE1, POOL1, DRIVER_A, device(DEV1, numa=i(1)), device(DEV2, numa=i(2))
        )
    ]
    c = claim(
        CLAIM0, all_request(REQ0, CLASS_A), constraints=(DeviceConstraint(match_attribute="driver-a/numa"),)
    )
    with pytest.raises(
        AllocationError,
        match="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
        "constraint would not be satisfied",
    ):
        allocate([c], CLASSES, slices)


def test_with_constraint_for_request_retry() -> None:
    slices = [
        slice_with_devices(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEV1, driverVersion=ver("1.0.0"), stringAttribute=s("a")),
            device(DEV2, driverVersion=ver("2.0.0"), stringAttribute=s("b")),
            device(DEV3, driverVersion=ver("3.0.0"), stringAttribute=s("b")),
        )
    ]
    c = claim(
        CLAIM0,
        request(REQ0, CLASS_A, 1),
        request(REQ1, CLASS_A, 1),
        constraints=(
            DeviceConstraint((REQ0,), "driver-a/driverVersion"),
            DeviceConstraint((), "driver-a/stringAttribute"),
        ),
    )
    assert allocate([c], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(REQ0, DRIVER_A, POOL1, DEV2),
            result(REQ1, DRIVER_A, POOL1, DEV3),
        )
    ]


def test_unknown_selector_function_is_an_error_not_a_pass() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(CLAIM0, request(REQ0, CLASS_A, 1, 'device.attributes["driver-a"].model.lowerAscii() == "x"'))
    with pytest.raises(AllocationError, match=r"selector #0: CEL compile error: .*lowerAscii"):
        allocate([c], CLASSES, slices)


def test_too_many_devices_single_request() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        allocate([claim(CLAIM0, request(REQ0, CLASS_A, 33))], CLASSES, slices)


def test_prioritized_list_first_unavailable() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))
    assert allocate([c], CLASSES, slices) == [
        allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))
    ]


def test_prioritized_list_non_available() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_B, 2)))
    assert allocate([c], CLASSES, slices) is None


def test_prioritized_list_disabled() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1))]
    c = claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1)))
    with pytest.raises(
        AllocationError, match="has subrequests, but the DRAPrioritizedList feature is disabled"
    ):
        allocate([c], CLASSES, slices, features=Features(prioritized_list=False))


def test_prioritized_list_with_backtracking() -> None:
    slices = [
        slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1, {"memory": "8Gi"})),
        slice_with_devices("slice-2", NODE1, POOL2, DRIVER_A, device(DEV2, {"memory": "4Gi"})),
    ]
    c = claim(
        CLAIM0,
        prioritized(
            REQ0, sub_request(SUB0, CLASS_A, 1, mem("8Gi")), sub_request(SUB1, CLASS_A, 1, mem("4Gi"))
        ),
        request(REQ1, CLASS_A, 1, mem("8Gi")),
    )
    assert allocate([c], CLASSES, slices) == [
        allocation(
            local_node_selector(NODE1),
            result(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEV2),
            result(REQ1, DRIVER_A, POOL1, DEV1),
        )
    ]


def test_prioritized_list_constraint_refs_sub_request() -> None:
    slices = [
        slice_with_devices(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEV1, numa=i(1)),
            device(DEV2, numa=i(2)),
            device(DEV3, numa=i(2)),
        )
    ]
    c = claim(
        CLAIM0,
        prioritized(REQ0, sub_request(SUB0, CLASS_A, 1, 'device.attributes["driver-a"].numa == 1')),
        request(REQ1, CLASS_A, 1, 'device.attributes["driver-a"].numa == 2'),
        constraints=(DeviceConstraint((f"{REQ0}/{SUB0}", REQ1), "driver-a/numa"),),
    )
    assert allocate([c], CLASSES, slices) is None


def test_all_devices_of_the_incomplete_pool() -> None:
    s1 = ResourceSlice("slice-1", DRIVER_A, ResourcePool(POOL1, 1, 2), (device(DEV1),), node_name=NODE1)
    with pytest.raises(
        AllocationError,
        match="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
        "currently being updated",
    ):
        allocate([claim(CLAIM0, all_request(REQ0, CLASS_A))], CLASSES, [s1])


def test_many_network_attached_devices() -> None:
    def selected(pool: str, term: NodeSelectorTerm) -> ResourceSlice:
        return ResourceSlice(
            "slice-1", DRIVER_A, ResourcePool(pool, 1, 1), (device(DEV1),), node_selector=(term,)
        )

    region = Requirement("region", "In", ("region-1",))
    planet = Requirement("planet", "In", ("earth",))
    name = Requirement("metadata.name", "In", (NODE1,))
    slices = [
        selected(POOL1, NodeSelectorTerm(match_expressions=(region,))),
        ResourceSlice("slice-1", DRIVER_A, ResourcePool(POOL2, 1, 1), (device(DEV1),), all_nodes=True),
        selected("pool-3", NodeSelectorTerm(match_expressions=(planet,))),
        selected("pool-4", NodeSelectorTerm(match_fields=(name,))),
    ]
    got = allocate(
        [claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        CLASSES,
        slices,
        node_labels={"region": "region-1", "planet": "earth"},
    )
    assert got == [
        allocation(
            (NodeSelectorTerm(match_expressions=(region, planet), match_fields=(name,)),),
            result(REQ0, DRIVER_A, POOL1, DEV1),
            result(REQ0, DRIVER_A, POOL2, DEV1),
            result(REQ0, DRIVER_A, "pool-3", DEV1),
            result(REQ0, DRIVER_A, "pool-4", DEV1),
        )
    ]


def test_prioritized_list_subrequests_with_allocation_mode_all() -> None:
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))]
    first = DeviceSubRequest(SUB0, CLASS_A, (), "All", 0)
    c = claim(CLAIM0, prioritized(REQ0, first, sub_request(SUB1, CLASS_A, 1)))
    got = allocate([c], CLASSES, slices, allocated=(DeviceId(DRIVER_A, POOL1, DEV1),))
    assert got == [allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV2))]


def test_search_stops_at_the_deadline() -> None:
    # 30 devices in groups of 3 sharing an attribute, 4 requested to match: the search
    # backtracks through every group before failing.
    devices = [device(f"d{k}", n=i(k % 10)) for k in range(30)]
    slices = [slice_with_devices("slice-1", NODE1, POOL1, DRIVER_A, *devices)]
    c = claim(
        CLAIM0, request(REQ0, CLASS_A, 6), constraints=(DeviceConstraint(match_attribute="driver-a/n"),)
    )
    ticks = iter(range(10**9))
    from policy_scheduler.cel.device_selector import compile_selector
    from policy_scheduler.scheduler.dra.allocator import AllocationTimeout, Allocator

    a = Allocator(frozenset(), {c.name: c for c in CLASSES}.get, slices, compile_selector)
    with pytest.raises(AllocationTimeout, match="timed out trying to allocate devices"):
        a.allocate(NODE1, slices, [c], (lambda: float(next(ticks)), 5.0))
    assert a.allocate(NODE1, slices, [c]) is None  # without a deadline the search just fails
