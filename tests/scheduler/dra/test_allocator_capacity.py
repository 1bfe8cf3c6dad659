"""Consumable capacity (DRAConsumableCapacity): cases ported from
dynamic-resource-allocation/structured/internal/allocatortesting (v0.37.2), by upstream's names.

Share IDs are random UUIDs upstream and here; results compare with every share ID replaced by
upstream's `fixedShareID`, after checking that each share got one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

import pytest

from policy_scheduler.scheduler.dra.allocator import AllocationError, Features
from policy_scheduler.scheduler.dra.capacity import request_fits
from policy_scheduler.scheduler.dra.model import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    CapacityRange,
    CapacityRequestPolicy,
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
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.resources import parse_quantity

from ._build import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    SUB0,
    SUB1,
    allocate,
    claim,
    local_node_selector,
    prioritized,
    request,
    sub_request,
)

CC = Features(consumable_capacity=True)
CAP0 = "capacity-0"
FIXED = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
ONE, TWO, THREE, FOUR = Decimal(1), Decimal(2), Decimal(3), Decimal(4)


def shared_class(name: str, allow: bool | None = None) -> DeviceClass:
    """class / classWithAllowMultipleAllocations."""
    selectors = [f'device.driver == "{DRIVER_A}"']
    if allow is not None:
        selectors.append(f"device.allowMultipleAllocations == {str(allow).lower()}")
    return DeviceClass(name, tuple(selectors))


def dev(
    name: str,
    capacity: dict[str, Decimal] | None = None,
    *,
    multi: bool = False,
    policies: dict[str, CapacityRequestPolicy] | None = None,
    **attrs: DeviceAttribute,
) -> Device:
    return Device(
        name, attrs, capacity or {}, allow_multiple_allocations=multi, capacity_policies=policies or {}
    )


def range_policy(name: str, value: Decimal, *, multi: bool = False, **attrs: DeviceAttribute) -> Device:
    """withCapacityRequestPolicyRange: default 2, range min 2, step 2, max 4."""
    policy = CapacityRequestPolicy(TWO, valid_range=CapacityRange(TWO, FOUR, TWO))
    return dev(name, {CAP0: value}, multi=multi, policies={CAP0: policy}, **attrs)


def valid_values(name: str, default: Decimal, value: Decimal, *more: Decimal, multi: bool = True) -> Device:
    """withCapacityRequestPolicyValidValues: the default first, then `more`."""
    policy = CapacityRequestPolicy(default, valid_values=(default, *more))
    return dev(name, {CAP0: value}, multi=multi, policies={CAP0: policy})


def one_slice(*devices: Device) -> list[ResourceSlice]:
    return [ResourceSlice("slice-1", DRIVER_A, ResourcePool(POOL1, 1, 1), devices, node_name=NODE1)]


def cap_request(
    name: str, amount: Decimal | None, *selectors: str, mode: str = ALLOCATION_MODE_EXACT_COUNT
) -> DeviceRequest:
    """deviceRequest(...).withCapacityRequest(amount) (of capacity-0), or allDeviceRequest's."""
    requests = {CAP0: amount} if amount is not None else None
    count = 1 if mode == ALLOCATION_MODE_EXACT_COUNT else 0
    return DeviceRequest(
        name, ExactDeviceRequest(CLASS_A, selectors, mode, count, capacity_requests=requests)
    )


def cap_sub(name: str, amount: Decimal | None) -> DeviceSubRequest:
    return replace(
        sub_request(name, CLASS_A, 1), capacity_requests={CAP0: amount} if amount is not None else None
    )


def share(
    request_name: str, device: str, consumed: dict[str, Decimal] | None
) -> DeviceRequestAllocationResult:
    """deviceRequestAllocationResult(...).withConsumedCapacity(&fixedShareID, consumed)."""
    return DeviceRequestAllocationResult(
        request_name, DRIVER_A, POOL1, device, share_id=FIXED, consumed_capacity=consumed
    )


def dedicated(request_name: str, device: str) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(request_name, DRIVER_A, POOL1, device)


def on_node1(*results: DeviceRequestAllocationResult) -> AllocationResult:
    return AllocationResult(results, local_node_selector(NODE1))


def _fixed(got: list[AllocationResult] | None) -> list[AllocationResult] | None:
    if got is None:
        return None
    out = []
    for a in got:
        results = []
        for r in a.results:
            if r.share_id is not None:
                assert len(r.share_id) == 36  # a UUID, one per share
                r = replace(r, share_id=FIXED)
            results.append(r)
        out.append(replace(a, results=tuple(results)))
    return out


@dataclass(frozen=True)
class Case:
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    want: list[AllocationResult] | None
    aggregated: dict[DeviceId, dict[str, Decimal]] = field(default_factory=dict)
    allocated: tuple[DeviceId, ...] = ()
    features: Features = CC
    shared: tuple[DeviceId, ...] = ()


D1 = DeviceId(DRIVER_A, POOL1, DEV1)
MULTI = [shared_class(CLASS_A, True)]
PLAIN = [shared_class(CLASS_A)]

PART_CC = Features(partitionable_devices=True, consumable_capacity=True)
CS1 = "counter-set-1"


def counters_slices(*devices: Device, **counters: str) -> list[ResourceSlice]:
    pool = ResourcePool(POOL1, 1, 2)
    counter_set = CounterSet(CS1, {k: parse_quantity(v) for k, v in counters.items()})
    return [
        ResourceSlice("slice-1", DRIVER_A, pool, devices, node_name=NODE1),
        ResourceSlice("slice-2", DRIVER_A, pool, node_name=NODE1, shared_counters=(counter_set,)),
    ]


def part(name: str, memory: str, **attrs: DeviceAttribute) -> Device:
    """device(name, fromCounters, attrs).withDeviceCounterConsumption(...).withAllowMultipleAllocations()."""
    q = parse_quantity(memory)
    return Device(
        name,
        attrs,
        {"memory": q},
        consumes_counters=(CounterConsumption(CS1, {"memory": q}),),
        allow_multiple_allocations=True,
    )


def mem(expr: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{expr}")) >= 0'


STRING = f"{DRIVER_A}/stringAttribute"


def _strings(*values: str) -> list[Device]:
    return [
        dev(f"device-{i}", stringAttribute=DeviceAttribute("string", v))
        for i, v in enumerate(values, start=1)
    ]


CASES: dict[str, Case] = {
    "allow-multiple-allocations-with-partitionable-device": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1, sub_request(SUB0, CLASS_A, 1, mem("6Gi")), sub_request(SUB1, CLASS_A, 1, mem("4Gi"))
                ),
            )
        ],
        MULTI,
        counters_slices(part(DEV1, "4Gi"), part(DEV2, "6Gi"), part(DEV3, "4Gi"), memory="8Gi"),
        [
            on_node1(
                share(REQ0, DEV1, {"memory": parse_quantity("4Gi")}),
                share(f"{REQ1}/{SUB1}", DEV3, {"memory": parse_quantity("4Gi")}),
            )
        ],
        features=Features(partitionable_devices=True, consumable_capacity=True, prioritized_list=True),
    ),
    # device1's counters are spent by its persisted share; device2 (mode b) finds none left.
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        [
            claim(
                CLAIM0,
                cap_request(REQ0, ONE, f'device.attributes["{DRIVER_A}"].mode == "b"'),
            )
        ],
        MULTI,
        [
            ResourceSlice(
                "slice-1",
                DRIVER_A,
                ResourcePool(POOL1, 1, 2),
                tuple(
                    Device(
                        name,
                        {"mode": DeviceAttribute("string", mode)},
                        {CAP0: ONE},
                        consumes_counters=(CounterConsumption(CS1, {CAP0: ONE}),),
                        allow_multiple_allocations=True,
                    )
                    for name, mode in ((DEV1, "a"), (DEV2, "b"))
                ),
                node_name=NODE1,
            ),
            ResourceSlice(
                "slice-2",
                DRIVER_A,
                ResourcePool(POOL1, 1, 2),
                node_name=NODE1,
                shared_counters=(CounterSet(CS1, {CAP0: ONE}),),
            ),
        ],
        None,
        aggregated={D1: {CAP0: ONE}},
        shared=(D1,),
        features=PART_CC,
    ),
    # A further share of device1 takes no counters: they are spent by its persisted share.
    "partitionable-consumable-capacity-shared-device-counter-not-recharged": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        PLAIN,
        [
            ResourceSlice(
                "slice-1",
                DRIVER_A,
                ResourcePool(POOL1, 1, 2),
                (
                    Device(
                        DEV1,
                        consumes_counters=(CounterConsumption(CS1, {"c": ONE}),),
                        allow_multiple_allocations=True,
                    ),
                ),
                node_name=NODE1,
            ),
            ResourceSlice(
                "slice-2",
                DRIVER_A,
                ResourcePool(POOL1, 1, 2),
                node_name=NODE1,
                shared_counters=(CounterSet(CS1, {"c": ONE}),),
            ),
        ],
        [on_node1(share(REQ0, DEV1, None))],
        shared=(D1,),
        features=PART_CC,
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE))],
        PLAIN,
        one_slice(dev(DEV1, {"capacity-1": ONE}, multi=True)),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE, mode=ALLOCATION_MODE_ALL))],
        MULTI,
        one_slice(dev(DEV1, {"capacity-1": ONE}, multi=True)),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, None)), claim(CLAIM1, cap_request(REQ0, None))],
        MULTI,
        one_slice(dev(DEV1, multi=True)),
        [on_node1(share(REQ0, DEV1, None)), on_node1(share(REQ0, DEV1, None))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, None)), claim(CLAIM1, cap_request(REQ0, None))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: ONE}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: ONE})), on_node1(share(REQ0, DEV2, {CAP0: ONE}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        [claim(CLAIM0, cap_request(REQ0, None)), claim(CLAIM1, cap_request(REQ0, None))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True)),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, ONE))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: ONE})), on_node1(share(REQ0, DEV1, {CAP0: ONE}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        MULTI,
        one_slice(range_policy(DEV1, FOUR, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO})), on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        MULTI,
        one_slice(valid_values(DEV1, Decimal(0), ONE)),
        [on_node1(share(REQ0, DEV1, {CAP0: Decimal(0)})), on_node1(share(REQ0, DEV1, {CAP0: Decimal(0)}))],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE))], MULTI, one_slice(valid_values(DEV1, Decimal(0), ONE)), None
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, ONE))],
        MULTI,
        one_slice(range_policy(DEV1, FOUR, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO})), on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        [claim(CLAIM0, cap_request(REQ0, THREE))],
        MULTI,
        one_slice(range_policy(DEV1, FOUR, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: FOUR}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(valid_values(DEV1, ONE, FOUR, TWO)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(valid_values(DEV1, ONE, THREE, THREE)),
        [on_node1(share(REQ0, DEV1, {CAP0: THREE}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(range_policy(DEV1, TWO, multi=True)),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        [claim(CLAIM0, cap_request(REQ0, Decimal(6)))],
        MULTI,
        one_slice(range_policy(DEV1, Decimal(10), multi=True)),
        None,
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(range_policy(DEV1, FOUR, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
        aggregated={D1: {CAP0: TWO}},
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(range_policy(DEV1, TWO, multi=True), range_policy(DEV2, TWO, multi=True)),
        [on_node1(share(REQ0, DEV2, {CAP0: TWO}))],
        aggregated={D1: {CAP0: TWO}},
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        [
            claim(
                CLAIM0,
                cap_request(REQ0, TWO),
                cap_request(REQ1, TWO),
                constraints=(DeviceConstraint(match_attribute=f"{DRIVER_A}/stringAttribute"),),
            ),
            claim(CLAIM1, cap_request(REQ0, TWO)),
        ],
        PLAIN,
        one_slice(
            range_policy(
                DEV2, TWO, multi=True, stringAttribute=DeviceAttribute("string", "stringAttributeValue1")
            ),
            range_policy(
                DEV1, FOUR, multi=True, stringAttribute=DeviceAttribute("string", "stringAttributeValue2")
            ),
        ),
        [
            on_node1(share(REQ0, DEV1, {CAP0: TWO}), share(REQ1, DEV1, {CAP0: TWO})),
            on_node1(share(REQ0, DEV2, {CAP0: TWO})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        [claim(CLAIM0, prioritized(REQ0, cap_sub(SUB0, FOUR), cap_sub(SUB1, TWO)))],
        MULTI,
        one_slice(range_policy(DEV1, TWO, multi=True)),
        [on_node1(share(f"{REQ0}/{SUB1}", DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO))],
        MULTI,
        one_slice(range_policy(DEV1, TWO, multi=True)),
        None,
        aggregated={D1: {CAP0: TWO}},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO, mode=ALLOCATION_MODE_ALL))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True), dev(DEV2, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        [claim(CLAIM0, cap_request(REQ0, TWO, mode=ALLOCATION_MODE_ALL))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: TWO}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE), cap_request(REQ1, ONE, mode=ALLOCATION_MODE_ALL))],
        PLAIN,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        [
            on_node1(
                share(REQ0, DEV1, {CAP0: ONE}),
                share(REQ1, DEV1, {CAP0: ONE}),
                share(REQ1, DEV2, {CAP0: ONE}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE, mode=ALLOCATION_MODE_ALL))],
        PLAIN,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        [on_node1(share(REQ0, DEV1, {CAP0: ONE}), share(REQ0, DEV2, {CAP0: ONE}))],
        aggregated={D1: {CAP0: ONE}},
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE), cap_request(REQ1, ONE, mode=ALLOCATION_MODE_ALL))],
        PLAIN,
        one_slice(dev(DEV1, {CAP0: ONE}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        None,
    ),
    # device-1's capacity is spent but it still matches: All fails rather than taking device-2 only.
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE, mode=ALLOCATION_MODE_ALL))],
        PLAIN,
        one_slice(dev(DEV1, {CAP0: ONE}, multi=True), dev(DEV2, {CAP0: ONE}, multi=True)),
        None,
        aggregated={D1: {CAP0: ONE}},
    ),
    "distinct-constraint-single-request-count-3-not-distinct": Case(
        [
            claim(
                CLAIM0, request(REQ0, CLASS_A, 3), constraints=(DeviceConstraint(distinct_attribute=STRING),)
            )
        ],
        PLAIN,
        one_slice(*_strings("value1", "value2", "value1")),
        None,
    ),
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        [
            claim(
                CLAIM0, request(REQ0, CLASS_A, 3), constraints=(DeviceConstraint(distinct_attribute=STRING),)
            )
        ],
        PLAIN,
        one_slice(*_strings("value1", "value2", "value3")),
        [on_node1(dedicated(REQ0, DEV1), dedicated(REQ0, DEV2), dedicated(REQ0, DEV3))],
    ),
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                request(REQ1, CLASS_A, 1),
                constraints=(DeviceConstraint((REQ0, REQ1), distinct_attribute=STRING),),
            )
        ],
        PLAIN,
        one_slice(*_strings("value1", "value2", "value1")),
        None,
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                constraints=(DeviceConstraint((REQ0,), distinct_attribute=f"{DRIVER_A}/boolAttribute"),),
            )
        ],
        PLAIN,
        one_slice(dev(DEV1, multi=True)),
        None,
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE))],
        [shared_class(CLASS_A, False)],
        one_slice(dev(DEV1, {CAP0: ONE})),
        [on_node1(dedicated(REQ0, DEV1))],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, ONE))],
        [shared_class(CLASS_A, False)],
        one_slice(range_policy(DEV1, TWO)),
        None,
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE))],
        MULTI,
        one_slice(range_policy(DEV1, TWO, multi=True)),
        None,
        allocated=(D1,),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        [claim(CLAIM0, cap_request(REQ0, ONE))],
        MULTI,
        one_slice(range_policy(DEV1, TWO)),
        None,
        aggregated={D1: {CAP0: ONE}},
    ),
    "with-distinct-constraints": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                request("req-2", CLASS_A, 1),
                request("req-3", CLASS_A, 1),
                constraints=(
                    DeviceConstraint((REQ0, REQ1), distinct_attribute=f"{DRIVER_A}/boolAttribute"),
                    DeviceConstraint((REQ0, REQ1, "req-2"), distinct_attribute=f"{DRIVER_A}/driverVersion"),
                    DeviceConstraint((REQ0, REQ1, "req-2", "req-3"), distinct_attribute=f"{DRIVER_A}/numa"),
                ),
            )
        ],
        PLAIN,
        one_slice(
            *(
                dev(
                    name,
                    multi=True,
                    driverVersion=DeviceAttribute("version", version),
                    numa=DeviceAttribute("int", numa),
                    boolAttribute=DeviceAttribute("bool", flag),
                )
                for name, version, numa, flag in (
                    (DEV1, "1.0.0", 0, True),
                    (DEV2, "1.0.1", 1, False),
                    (DEV3, "1.0.2", 2, True),
                    ("device-4", "1.0.0", 3, True),
                )
            )
        ),
        [
            on_node1(
                share(REQ0, DEV1, None),
                share(REQ1, DEV2, None),
                share("req-2", DEV3, None),
                share("req-3", "device-4", None),
            )
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_consumable_capacity_case(name: str) -> None:
    case = CASES[name]
    got = allocate(
        case.claims,
        case.classes,
        case.slices,
        allocated=case.allocated,
        features=case.features,
        aggregated=case.aggregated,
        shared=case.shared,
    )
    assert _fixed(got) == case.want


def test_two_shares_of_one_device_get_distinct_share_ids() -> None:
    got = allocate(
        [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, ONE))],
        MULTI,
        one_slice(dev(DEV1, {CAP0: TWO}, multi=True)),
        features=CC,
    )
    assert got is not None
    assert got[0].results[0].share_id != got[1].results[0].share_id


def test_without_the_gate_a_device_allowing_multiple_allocations_is_dedicated() -> None:
    claims = [claim(CLAIM0, cap_request(REQ0, ONE)), claim(CLAIM1, cap_request(REQ0, ONE))]
    assert allocate(claims, PLAIN, one_slice(dev(DEV1, {CAP0: TWO}, multi=True))) is None
    [only] = allocate(claims[:1], PLAIN, one_slice(dev(DEV1, {CAP0: TWO}, multi=True))) or []
    assert only == on_node1(dedicated(REQ0, DEV1))


def test_a_request_above_int64_in_a_stepped_range_is_an_error() -> None:
    """consumable-capacity-range-policy-request-above-int64-rejected."""
    huge = Decimal(2**63)
    with pytest.raises(AllocationError, match="exceeds MaxInt64"):
        allocate(
            [claim(CLAIM0, cap_request(REQ0, huge))],
            MULTI,
            one_slice(range_policy(DEV1, huge * 2, multi=True)),
            features=CC,
        )


def test_request_fits_adds_what_is_being_allocated() -> None:
    capacity = {CAP0: FOUR}
    assert request_fits({CAP0: ONE}, {CAP0: TWO}, capacity, {}, {CAP0: ONE})
    assert not request_fits({CAP0: TWO}, {CAP0: TWO}, capacity, {}, {CAP0: ONE})
