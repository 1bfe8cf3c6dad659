"""Partitionable devices, device taints and allocation config: cases ported from
dynamic-resource-allocation/structured/internal/allocatortesting (v0.37.2), by upstream's names."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from policy_scheduler.scheduler.dra.allocator import AllocationError, FailedOnNode, Features
from policy_scheduler.scheduler.dra.model import (
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TOLERATION_OP_EQUAL,
    TOLERATION_OP_EXISTS,
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAttribute,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceConfiguration,
    DeviceConstraint,
    DeviceId,
    DeviceTaint,
    DeviceToleration,
    ResourceClaim,
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
    REGION1,
    REQ0,
    REQ1,
    SUB0,
    SUB1,
    all_request,
    allocate,
    allocation,
    claim,
    consumes,
    counter_set,
    counter_slice,
    device,
    device_class,
    local_node_selector,
    prioritized,
    request,
    result,
    s,
    sub_request,
)

CLASSES = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
CS1, CS2 = "counter-set-1", "counter-set-2"
PART = Features(partitionable_devices=True)
TAINTS = Features(device_taints=True)
V137 = Features(partitionable_devices=True, device_taints=True, claim_config_once=True)

TAINT_NO_SCHEDULE = DeviceTaint("taint-key", TAINT_EFFECT_NO_SCHEDULE, "taint-value")
TAINT_NO_EXECUTE = DeviceTaint("taint-key", TAINT_EFFECT_NO_EXECUTE, "taint-value-2")
TAINT_NONE = DeviceTaint("taint-key", "None", "taint-value")
TOLERATE_NO_SCHEDULE = DeviceToleration("taint-key", TOLERATION_OP_EXISTS, effect=TAINT_EFFECT_NO_SCHEDULE)
TOLERATE_NO_EXECUTE = DeviceToleration(
    "taint-key", TOLERATION_OP_EQUAL, "taint-value-2", TAINT_EFFECT_NO_EXECUTE
)


def mem(expr: str) -> str:
    return f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{expr}")) >= 0'


def part(name: str, counter_set_name: str = CS1, **counters: str) -> Device:
    """device(name, fromCounters, nil).withDeviceCounterConsumption(...): capacity mirrors consumption."""
    d = device(name, dict(counters))
    return replace(d, consumes_counters=consumes(counter_set_name, **counters))


def devices_slice(
    name: str, node: str, pool: str, driver: str, count: int, *devices: Device
) -> ResourceSlice:
    """sliceWithDevices with resourcePool(pool, count); `node` "" means per-device node selection."""
    return ResourceSlice(
        name,
        driver,
        ResourcePool(pool, 1, count),
        devices,
        node_name=node,
        per_device_node_selection=not node,
    )


def on_node(d: Device, node: str) -> Device:
    return replace(d, node_name=node)


def on_all(d: Device) -> Device:
    return replace(d, all_nodes=True)


def on_region(d: Device) -> Device:
    term = NodeSelectorTerm(match_expressions=(Requirement("region", "In", (REGION1,)),))
    return replace(d, node_selector=(term,))


def tainted(d: Device, *taints: DeviceTaint) -> Device:
    return replace(d, taints=taints)


def tolerated(r: AllocationResult, *tolerations: DeviceToleration) -> AllocationResult:
    return replace(r, results=tuple(replace(x, tolerations=tolerations) for x in r.results))


@dataclass(frozen=True)
class Case:
    claims: list[ResourceClaim]
    slices: list[ResourceSlice]
    features: Features
    want: list[AllocationResult] | None
    allocated: tuple[DeviceId, ...] = ()
    classes: list[DeviceClass] = field(default_factory=lambda: CLASSES)
    error: str = ""
    node: str = NODE1


def _dev(name: str) -> DeviceId:
    return DeviceId(DRIVER_A, POOL1, name)


CASES: dict[str, Case] = {
    "partitionable-devices-single-device": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, memory="4Gi")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "partitionable-devices-counter-quantities-are-not-modified": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, c="9000000000000000000")),
                replace(device(DEV2), consumes_counters=consumes(CS1, c="1")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="10000000000000000000")),
        ],
        PART,
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2))],
        allocated=(_dev(DEV1),),
    ),
    "partitionable-devices-counter-cache-scoped-by-pool-ID": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, c="1")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="1")),
            devices_slice(
                "slice-3",
                NODE1,
                POOL1,
                DRIVER_B,
                2,
                replace(device(DEV2), consumes_counters=consumes(CS1, c="2")),
            ),
            counter_slice("slice-4", NODE1, POOL1, DRIVER_B, 2, counter_set(CS1, c="2")),
        ],
        PART,
        [
            allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1)),
            allocation(local_node_selector(NODE1), result(REQ1, DRIVER_B, POOL1, DEV2)),
        ],
    ),
    "partitionable-devices-counter-cache-not-crossed-between-driver-schemas": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1)), claim(CLAIM1, request(REQ1, CLASS_B, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, c="1")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="1")),
            devices_slice(
                "slice-3",
                NODE1,
                POOL1,
                DRIVER_B,
                2,
                replace(device(DEV2), consumes_counters=consumes(CS2, d="2")),
            ),
            counter_slice("slice-4", NODE1, POOL1, DRIVER_B, 2, counter_set(CS2, d="1")),
        ],
        PART,
        None,
    ),
    "partitionable-devices-taint-releases-counter": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                tainted(replace(device(DEV1), consumes_counters=consumes(CS1, c="1")), TAINT_NO_SCHEDULE),
                replace(device(DEV2), consumes_counters=consumes(CS1, c="1")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="1")),
        ],
        Features(partitionable_devices=True, device_taints=True),
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2))],
    ),
    "partitionable-devices-constraint-releases-counter": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                constraints=(DeviceConstraint(match_attribute=f"{DRIVER_A}/stringAttribute"),),
            )
        ],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1, stringAttribute=s("red")), consumes_counters=consumes(CS1, c="1")),
                replace(device(DEV2, stringAttribute=s("blue")), consumes_counters=consumes(CS1, c="1")),
                replace(device(DEV3, stringAttribute=s("blue")), consumes_counters=consumes(CS1, c="1")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="2")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV2),
                result(REQ0, DRIVER_A, POOL1, DEV3),
            )
        ],
    ),
    "partitionable-devices-prioritized-list": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                prioritized(
                    REQ1, sub_request(SUB0, CLASS_A, 1, mem("6Gi")), sub_request(SUB1, CLASS_A, 1, mem("4Gi"))
                ),
            )
        ],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                part(DEV1, memory="4Gi"),
                part(DEV2, memory="6Gi"),
                part(DEV3, memory="4Gi"),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV1),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV3),
            )
        ],
    ),
    "partitionable-devices-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                part(DEV1, memory="4Gi"),
                part(DEV2, memory="6Gi"),
                part(DEV3, memory="4Gi"),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV1),
                result(REQ1, DRIVER_A, POOL1, DEV3),
            )
        ],
    ),
    "partitionable-devices-multiple-counters": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(
                    device(DEV1),
                    consumes_counters=(
                        *consumes(CS1, memory="4Gi", cpus="6"),
                        *consumes(CS2, cpus="4", memory="2Gi"),
                    ),
                ),
                replace(
                    device(DEV2),
                    consumes_counters=(
                        *consumes(CS1, memory="6Gi", cpus="4"),
                        *consumes(CS2, cpus="6", memory="6Gi"),
                    ),
                ),
                replace(
                    device(DEV3),
                    consumes_counters=(
                        *consumes(CS1, memory="4Gi", cpus="4"),
                        *consumes(CS2, cpus="4", memory="4Gi"),
                    ),
                ),
            ),
            counter_slice(
                "slice-2",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                counter_set(CS1, cpus="8", memory="18Gi"),
                counter_set(CS2, cpus="12", memory="18Gi"),
            ),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV2),
                result(REQ1, DRIVER_A, POOL1, DEV3),
            )
        ],
    ),
    "partitionable-devices-multiple-pools": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, cpus="6", memory="4Gi")),
                replace(device(DEV2), consumes_counters=consumes(CS1, cpus="4", memory="6Gi")),
                replace(device(DEV3), consumes_counters=consumes(CS1, cpus="4", memory="4Gi")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, cpus="8", memory="18Gi")),
            devices_slice(
                "slice-3",
                NODE1,
                POOL2,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, cpus="6", memory="4Gi")),
                replace(device(DEV2), consumes_counters=consumes(CS1, cpus="1", memory="7Gi")),
                replace(device(DEV3), consumes_counters=consumes(CS1, cpus="1", memory="7Gi")),
            ),
            counter_slice("slice-4", NODE1, POOL2, DRIVER_A, 2, counter_set(CS1, cpus="8", memory="18Gi")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL2, DEV2),
                result(REQ1, DRIVER_A, POOL2, DEV3),
            )
        ],
        allocated=(_dev(DEV2), _dev(DEV3), DeviceId(DRIVER_A, POOL2, DEV1)),
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, memory="5Gi")),
                replace(device(DEV2), consumes_counters=consumes(CS1, memory="4Gi")),
                replace(device(DEV3), consumes_counters=consumes(CS1, memory="4Gi")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi", unused="1Gi")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV2),
                result(REQ0, DRIVER_A, POOL1, DEV3),
            )
        ],
    ),
    # Counters of devices already allocated are spent (18Gi - 16Gi leaves less than 4Gi).
    "partitionable-devices-no-capacity-available": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1", NODE1, POOL1, DRIVER_A, 2, part(DEV1, memory="4Gi"), part(DEV2, memory="16Gi")
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
        ],
        PART,
        None,
        allocated=(_dev(DEV2),),
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1", NODE1, POOL1, DRIVER_A, 2, part(DEV1, memory="4Gi"), part(DEV2, memory="20Gi")
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
        ],
        PART,
        None,
        allocated=(_dev(DEV2),),
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, part(DEV1, memory="4Gi")),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 1, counter_set(CS1, memory="18Gi")),
        ],
        Features(),
        None,
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, memory="4Gi")),
                device(DEV2),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
        ],
        Features(),
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2))],
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [devices_slice("slice-1", "", POOL1, DRIVER_A, 1, on_node(device(DEV2), NODE1))],
        Features(),
        None,
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0, sub_request(SUB0, CLASS_A, 1, mem("6Gi")), sub_request(SUB1, CLASS_A, 1, mem("4Gi"))
                ),
            )
        ],
        [
            devices_slice(
                "slice-1",
                "",
                POOL1,
                DRIVER_A,
                2,
                on_node(part(DEV1, memory="4Gi"), NODE1),
                on_node(part(DEV2, memory="6Gi"), NODE2),
            ),
            counter_slice("slice-2", "", POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
        ],
        PART,
        [allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", "", POOL1, DRIVER_A, 2, on_region(part(DEV1, memory="4Gi"))),
            counter_slice("slice-2", "", POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
        ],
        PART,
        [
            allocation(
                (NodeSelectorTerm(match_expressions=(Requirement("region", "In", (REGION1,)),)),),
                result(REQ0, DRIVER_A, POOL1, DEV1),
            )
        ],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 3), request(REQ1, CLASS_B, 3))],
        [
            devices_slice(
                "slice-1",
                "",
                POOL1,
                DRIVER_A,
                2,
                on_region(part(DEV1, memory="4Gi")),
                on_node(part(DEV2, memory="4Gi"), NODE1),
                on_all(part(DEV3, memory="4Gi")),
            ),
            counter_slice("slice-2", "", POOL1, DRIVER_A, 2, counter_set(CS1, memory="18Gi")),
            devices_slice(
                "slice-3",
                NODE1,
                POOL2,
                DRIVER_B,
                2,
                part(DEV1, CS2, memory="4Gi"),
                part(DEV2, CS2, memory="4Gi"),
                part(DEV3, CS2, memory="4Gi"),
            ),
            counter_slice("slice-4", NODE1, POOL2, DRIVER_B, 2, counter_set(CS2, memory="12Gi")),
        ],
        PART,
        [
            allocation(
                local_node_selector(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEV1),
                result(REQ0, DRIVER_A, POOL1, DEV2),
                result(REQ0, DRIVER_A, POOL1, DEV3),
                result(REQ1, DRIVER_B, POOL2, DEV1),
                result(REQ1, DRIVER_B, POOL2, DEV2),
                result(REQ1, DRIVER_B, POOL2, DEV3),
            )
        ],
    ),
    # A node sees only its own partitions, but allocated partitions of other nodes drawing on
    # the same counter set still spend it.
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0, sub_request(SUB0, CLASS_A, 1, mem("6Gi")), sub_request(SUB1, CLASS_A, 1, mem("2Gi"))
                ),
            )
        ],
        [
            counter_slice("slice-1", NODE1, POOL1, DRIVER_A, 3, counter_set(CS1, memory="8Gi")),
            devices_slice(
                "slice-2", NODE1, POOL1, DRIVER_A, 3, part(DEV1, memory="6Gi"), part(DEV2, memory="2Gi")
            ),
            devices_slice(
                "slice-3",
                NODE2,
                POOL1,
                DRIVER_A,
                3,
                replace(device(DEV3), consumes_counters=consumes(CS1, memory="6Gi")),
            ),
        ],
        Features(partitionable_devices=True),
        [allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV2))],
        allocated=(_dev(DEV3),),
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            counter_slice("slice-1", NODE1, POOL1, DRIVER_A, 3, counter_set(CS1, memory="8Gi")),
            devices_slice("slice-2", NODE1, POOL1, DRIVER_A, 3, part(DEV1, memory="6Gi")),
            devices_slice(
                "slice-3", NODE2, POOL1, DRIVER_A, 3, part(DEV2, memory="6Gi"), part(DEV3, memory="2Gi")
            ),
        ],
        PART,
        [allocation(local_node_selector(NODE2), result(REQ0, DRIVER_A, POOL1, DEV3))],
        allocated=(_dev(DEV1),),
        node=NODE2,
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 3, part(DEV1, memory="4Gi")),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 3, counter_set(CS1, memory="8Gi")),
            counter_slice("slice-3", NODE1, POOL1, DRIVER_A, 3, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        None,
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 2, part(DEV1, CS2, memory="4Gi")),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        None,
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 2, part(DEV1, bandwidth="4Gi")),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        None,
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, part(DEV1, memory="8Gi")),
            counter_slice("slice-2", NODE1, POOL2, DRIVER_A, 1, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        None,
        error="invalid resource pools were encountered",
    ),
    # The slice of another node is checked too: its device names a counter set the pool lacks.
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            counter_slice("slice-1", NODE1, POOL1, DRIVER_A, 3, counter_set(CS1, memory="8Gi")),
            devices_slice("slice-2", NODE1, POOL1, DRIVER_A, 3, part(DEV1, memory="6Gi")),
            devices_slice("slice-3", NODE2, POOL1, DRIVER_A, 3, part(DEV3, CS2, memory="6Gi")),
        ],
        PART,
        None,
        error="invalid resource pools were encountered",
    ),
    "all-devices-with-consumed-counters": Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                replace(device(DEV1), consumes_counters=consumes(CS1, memory="4Gi")),
            ),
            counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, memory="8Gi")),
        ],
        PART,
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    # ---- taints ------------------------------------------------------------------------------
    "tainted-two-devices": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE),
                tainted(device(DEV2), TAINT_NO_EXECUTE),
            )
        ],
        TAINTS,
        None,
    ),
    "tainted-one-device-two-taints": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ],
        TAINTS,
        None,
    ),
    "tainted-two-devices-tolerated": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, tolerations=(TOLERATE_NO_EXECUTE,)))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE),
                tainted(device(DEV2), TAINT_NO_EXECUTE),
            )
        ],
        TAINTS,
        [
            tolerated(
                allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV2)),
                TOLERATE_NO_EXECUTE,
            )
        ],
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, CLASS_A, 1),
                    sub_request(SUB1, CLASS_A, 1, tolerations=(TOLERATE_NO_EXECUTE,)),
                ),
            )
        ],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE),
                tainted(device(DEV2), TAINT_NO_EXECUTE),
            )
        ],
        TAINTS,
        [
            tolerated(
                allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV2)),
                TOLERATE_NO_EXECUTE,
            )
        ],
    ),
    "tainted-no-effect": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NONE))],
        TAINTS,
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, tolerations=(TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE)))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ],
        TAINTS,
        [
            tolerated(
                allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1)),
                TOLERATE_NO_SCHEDULE,
                TOLERATE_NO_EXECUTE,
            )
        ],
    ),
    "tainted-disabled": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        [
            devices_slice(
                "slice-1",
                NODE1,
                POOL1,
                DRIVER_A,
                1,
                tainted(device(DEV1), TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE),
            )
        ],
        Features(),
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "tainted-prioritized-list": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        TAINTS,
        None,
    ),
    "tainted-prioritized-list-disabled": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B, 1), sub_request(SUB1, CLASS_A, 1)))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        Features(),
        [allocation(local_node_selector(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    "tainted-admin-access": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        TAINTS,
        None,
        allocated=(_dev(DEV1), _dev(DEV2)),
    ),
    "tainted-admin-access-disabled": Case(
        [claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        Features(),
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1, admin=True))],
        allocated=(_dev(DEV1), _dev(DEV2)),
    ),
    "tainted-all-devices-single": Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        TAINTS,
        None,
    ),
    "tainted-all-devices-single-disabled": Case(
        [claim(CLAIM0, all_request(REQ0, CLASS_A))],
        [devices_slice("slice-1", NODE1, POOL1, DRIVER_A, 1, tainted(device(DEV1), TAINT_NO_SCHEDULE))],
        Features(),
        [allocation(local_node_selector(NODE1), result(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocator_case(name: str) -> None:
    case = CASES[name]
    if case.error:
        with pytest.raises(FailedOnNode, match=case.error):
            allocate(case.claims, case.classes, case.slices, case.node, case.allocated, case.features)
        return
    got = allocate(case.claims, case.classes, case.slices, case.node, case.allocated, case.features)
    assert got == case.want


# ---- allocation config (DeviceClass and claim config copied into the result) ---------------------


def config(driver: str, attribute: str) -> DeviceConfiguration:
    """deviceConfiguration: opaque parameters {attribute: attributeValue}."""
    return DeviceConfiguration({"opaque": {"driver": driver, "parameters": {attribute: f"{attribute}Value"}}})


def class_with_config(name: str, driver: str, attribute: str) -> DeviceClass:
    return replace(device_class(name, driver), config=(config(driver, attribute),))


def with_config(c: ResourceClaim, *entries: tuple[tuple[str, ...], DeviceConfiguration]) -> ResourceClaim:
    return replace(c, config=tuple(DeviceClaimConfiguration(cfg, requests) for requests, cfg in entries))


def one_node_slice(n: int, driver: str = DRIVER_A, pool: str = POOL1, name: str = "slice-1") -> ResourceSlice:
    """sliceWithMultipleDevices: device-0 .. device-(n-1)."""
    return devices_slice(name, NODE1, pool, driver, 1, *(device(f"device-{k}") for k in range(n)))


def _alloc(
    features: Features, c: ResourceClaim, classes: list[DeviceClass], *slices: ResourceSlice
) -> AllocationResult:
    got = allocate([c], classes, list(slices), features=features)
    assert got is not None
    return got[0]


def test_with_class_device_config() -> None:
    classes = [class_with_config(CLASS_A, DRIVER_A, "classAttribute")]
    got = _alloc(V137, claim(CLAIM0, request(REQ0, CLASS_A, 1)), classes, one_node_slice(2))
    assert got.config == (
        DeviceAllocationConfiguration(CONFIG_SOURCE_CLASS, config(DRIVER_A, "classAttribute")),
    )
    # Up to v1.36 the requests stay listed even when they are all of them.
    got = _alloc(Features(), claim(CLAIM0, request(REQ0, CLASS_A, 1)), classes, one_node_slice(2))
    assert got.config == (
        DeviceAllocationConfiguration(CONFIG_SOURCE_CLASS, config(DRIVER_A, "classAttribute"), (REQ0,)),
    )


def test_with_class_device_config_with_multiple_request_and_configs() -> None:
    classes = [
        class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
        class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
    ]
    c = claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request("req-2", CLASS_B, 1))
    got = _alloc(V137, c, classes, one_node_slice(2), one_node_slice(2, DRIVER_B, POOL1, "slice-2"))
    assert got.config == (
        DeviceAllocationConfiguration(
            CONFIG_SOURCE_CLASS, config(DRIVER_A, "classAttribute-A"), (REQ0, REQ1)
        ),
        DeviceAllocationConfiguration(CONFIG_SOURCE_CLASS, config(DRIVER_B, "classAttribute-B"), ("req-2",)),
    )


def test_with_claim_config_for_two_requests() -> None:
    c = claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request("req-2", CLASS_A, 1))
    c = with_config(c, ((REQ0, REQ1), config(DRIVER_A, "deviceAttribute")))
    want = DeviceAllocationConfiguration(
        CONFIG_SOURCE_CLAIM, config(DRIVER_A, "deviceAttribute"), (REQ0, REQ1)
    )
    assert _alloc(V137, c, CLASSES, one_node_slice(3)).config == (want,)
    # v1.35/v1.36 add it once per request it names.
    assert _alloc(Features(), c, CLASSES, one_node_slice(3)).config == (want, want)


def test_claim_with_device_config() -> None:
    c = with_config(claim(CLAIM0, request(REQ0, CLASS_A, 1)), ((), config(DRIVER_A, "deviceAttribute")))
    got = _alloc(V137, c, CLASSES, one_node_slice(1))
    assert got.config == (
        DeviceAllocationConfiguration(CONFIG_SOURCE_CLAIM, config(DRIVER_A, "deviceAttribute")),
    )


def test_prioritized_list_device_config() -> None:
    c = claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 2)))
    c = with_config(
        c, ((f"{REQ0}/{SUB0}",), config(DRIVER_A, "foo")), ((f"{REQ0}/{SUB1}",), config(DRIVER_B, "bar"))
    )
    slices = devices_slice("slice-1", NODE1, POOL1, DRIVER_B, 1, device(DEV1), device(DEV2))
    got = _alloc(V137, c, CLASSES, slices)
    assert got.config == (DeviceAllocationConfiguration(CONFIG_SOURCE_CLAIM, config(DRIVER_B, "bar")),)


def test_prioritized_list_class_config() -> None:
    classes = [class_with_config(CLASS_A, DRIVER_A, "foo"), class_with_config(CLASS_B, DRIVER_B, "bar")]
    c = claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, 2), sub_request(SUB1, CLASS_B, 2)))
    got = _alloc(
        V137,
        c,
        classes,
        devices_slice("slice-1", NODE1, POOL1, DRIVER_B, 1, device(DEV1), device(DEV2)),
        devices_slice("slice-2", NODE1, POOL2, DRIVER_A, 1, device(DEV3)),
    )
    assert got.results[0].request == f"{REQ0}/{SUB1}"
    assert got.config == (DeviceAllocationConfiguration(CONFIG_SOURCE_CLASS, config(DRIVER_B, "bar")),)


def test_claim_config_scoped_to_subrequests_of_one_request() -> None:
    c = claim(
        CLAIM0,
        prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 1)),
        request(REQ1, CLASS_A, 1),
    )
    scoped = (f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}")
    c = with_config(c, (scoped, config(DRIVER_A, "scoped")))
    got = _alloc(V137, c, CLASSES, one_node_slice(2))
    assert got.config == (
        DeviceAllocationConfiguration(CONFIG_SOURCE_CLAIM, config(DRIVER_A, "scoped"), scoped),
    )


def test_claim_config_covering_all_requests_is_cleared() -> None:
    c = claim(
        CLAIM0,
        prioritized(REQ0, sub_request(SUB0, CLASS_A, 1), sub_request(SUB1, CLASS_B, 1)),
        request(REQ1, CLASS_A, 1),
    )
    c = with_config(c, ((f"{REQ0}/{SUB0}", REQ1), config(DRIVER_A, "all")))
    got = _alloc(V137, c, CLASSES, one_node_slice(2))
    assert got.config == (DeviceAllocationConfiguration(CONFIG_SOURCE_CLAIM, config(DRIVER_A, "all")),)


def test_partitionable_all_mode_constraint_must_error_with_reserved_counter() -> None:
    """The second device of an All request reserves the only counter, then breaks the constraint:
    the counter is given back and the allocation ends with upstream's error."""
    slices = [
        devices_slice(
            "slice-1",
            NODE1,
            POOL1,
            DRIVER_A,
            2,
            device(DEV1, numa=DeviceAttribute("int", 1)),
            replace(device(DEV2, numa=DeviceAttribute("int", 2)), consumes_counters=consumes(CS1, c="1")),
        ),
        counter_slice("slice-2", NODE1, POOL1, DRIVER_A, 2, counter_set(CS1, c="1")),
    ]
    c = claim(
        CLAIM0,
        all_request(REQ0, CLASS_A),
        constraints=(DeviceConstraint(match_attribute=f"{DRIVER_A}/numa"),),
    )
    want = (
        "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied"
    )
    with pytest.raises(AllocationError, match=want):
        allocate([c], CLASSES, slices, features=PART)


def test_an_unknown_request_in_a_claim_config_adds_nothing() -> None:
    c = with_config(claim(CLAIM0, request(REQ0, CLASS_A, 1)), (("other",), config(DRIVER_A, "x")))
    assert _alloc(V137, c, CLASSES, one_node_slice(1)).config == ()
