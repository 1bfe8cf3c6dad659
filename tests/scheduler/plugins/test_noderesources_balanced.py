"""NodeResourcesBalancedAllocation: balanced_allocation_test.go of v1.35.4 (the balance with the
pod) and of v1.36.3/v1.37.2 (the improvement the pod brings), and a bit-exactness check."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.cel.device_selector import compile_selector
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
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_general,
    balanced_resource_scorer,
    improvement_score,
)
from policy_scheduler.scheduler.plugins.noderesources.dra_scoring import DraDeviceCounts
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

from ._build_noderesources import all_rows, make_node, make_pod, make_table, plugin, score_all

GPU = "nvidia.com/gpu"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*DEFAULT, {"name": GPU, "weight": 1}]


def mk(name: str, cpu: int, memory: int, extended: dict[str, int] | None = None) -> Node:
    return make_node(name, {"cpu": cpu, "memory": memory, **(extended or {})})


def cpu_and_memory_and_gpu(node: str = "") -> Pod:
    return make_pod({"cpu": 1000, "memory": 2000}, {"cpu": 2000, "memory": 3000, GPU: 3}, node_name=node)


def cpu_only(node: str = "") -> Pod:
    return make_pod({"cpu": 1000, "memory": 0}, {"cpu": 2000, "memory": 0}, node_name=node)


def cpu_and_memory(node: str = "") -> Pod:
    return make_pod({"cpu": 1000, "memory": 2000}, {"cpu": 2000, "memory": 3000}, node_name=node)


# balanced_allocation_test.go of v1.35.4 (the balance with the pod) and of v1.36.3/v1.37.2 (the
# improvement it brings: 50 + (50 + with - without) / 2), merged where they share a case:
# (name, pod, nodes, existing, resources, want in v1.35, want from v1.36, run PreScore); None
# where that release's table has no such case. The DRA-backed extended resource cases of
# v1.36/v1.37 follow the table (test_include_dra_resource_on_a_node_...).
CASES: list[
    tuple[str, Pod, list[Node], list[Pod], list[dict[str, Any]], list[int] | None, list[int] | None, bool]
] = [
    (
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory(),
        [mk("node1", 4000, 10000), mk("node2", 6000, 10000)],
        [],
        DEFAULT,
        [87, 100],
        [68, 75],
        True,
    ),
    (
        "resources requested, pods scheduled with resources",
        cpu_and_memory(),
        [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
        [cpu_only("node1"), cpu_and_memory("node2")],
        DEFAULT,
        [82, 95],
        [73, 74],
        True,
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory(),
        [mk("node1", 10000, 20000), mk("node2", 10000, 50000)],
        [cpu_only("node1"), cpu_and_memory("node2")],
        DEFAULT,
        [82, 80],
        [73, 70],
        True,
    ),
    (
        "resources requested, pods scheduled with resources, nodes to reach min/max score",
        make_pod({"memory": 2000}, {"memory": 3000}),
        [mk("node1", 3000, 5000), mk("node2", 3000, 5000)],
        [cpu_only("node1")],
        DEFAULT,
        None,
        [100, 50],
        True,
    ),
    (
        "requested resources at node capacity",
        cpu_only(),
        [mk("node1", 6000, 10000), mk("node2", 6000, 10000)],
        [cpu_only("node1"), cpu_and_memory("node2")],
        DEFAULT,
        [50, 75],
        [62, 62],
        True,
    ),
    (
        "include scalar resource on a node for balanced resource allocation",
        make_pod({"cpu": 0, "memory": 0, GPU: 1}),
        [mk("node1", 3500, 40000, {GPU: 8}), mk("node2", 3500, 40000, {GPU: 8})],
        [cpu_and_memory("node2"), cpu_and_memory_and_gpu("node1")],
        WITH_GPU,
        [70, 65],
        [75, 76],
        True,
    ),
    (
        "node without the scalar resource should skip the scalar resource",
        cpu_and_memory(),
        [mk("node1", 3500, 40000, {GPU: 8}), mk("node2", 3500, 40000)],
        [],
        WITH_GPU,
        [63, 63],
        [56, 56],
        True,
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        cpu_and_memory(),
        [mk("node1", 10000, 20000), mk("node2", 10000, 20000)],
        [cpu_only("node1"), cpu_and_memory("node2")],
        DEFAULT,
        [82, 95],
        [73, 74],
        False,
    ),
]
PER_RELEASE = [
    (version, name, pod, nodes, existing, resources, v135 if version == V1_35 else v136, pre_score)
    for name, pod, nodes, existing, resources, v135, v136, pre_score in CASES
    for version in (V1_35, V1_36, V1_37)
    if (v135 if version == V1_35 else v136) is not None
]


@pytest.mark.parametrize(
    ("version", "pod", "nodes", "existing", "resources", "want", "pre_score"),
    [(c[0], *c[2:]) for c in PER_RELEASE],
    ids=[f"{c[0]}: {c[1]}" for c in PER_RELEASE],
)
def test_balanced_allocation(
    version: KubernetesVersion,
    pod: Pod,
    nodes: list[Node],
    existing: list[Pod],
    resources: list[dict[str, Any]],
    want: list[int],
    pre_score: bool,
) -> None:
    table = make_table(nodes, existing)
    balanced = plugin(NodeResourcesBalancedAllocation, table, {"resources": resources}, Features(version))
    assert score_all(balanced, pod, table, pre_score) == want


@given(
    st.lists(st.integers(0, 100), min_size=2, max_size=2),
    st.lists(st.integers(0, 100), min_size=2, max_size=2),
    st.integers(1, 10),
)
def test_improvement_stays_between_50_and_100_and_75_means_unchanged(
    used: list[int], pod: list[int], scale: int
) -> None:
    """balanced_allocation.go: the two balances lie in [50, 100], so the score does too; a pod
    that leaves the node's balance as it was scores 75."""
    allocatable = np.full((2, 1), 100 * scale, dtype=np.int64)
    before = np.array([[u * scale] for u in used], dtype=np.int64)
    after = before + np.array([[p * scale] for p in pod], dtype=np.int64)
    with_pod = balanced_resource_scorer(after, allocatable)
    without = balanced_resource_scorer(before, allocatable)
    score = int(improvement_score(with_pod, without)[0])
    assert 50 <= score <= 100
    if int(with_pod[0]) == int(without[0]):
        assert score == 75


# The DRA-backed extended resource cases of v1.37.2 (DRAExtendedResource): eight devices of the
# class serving the resource on node1, none on node2 (which then leaves the resource out).
EXT_DRA = "extended.resource.dra.io/something"


def dra_handle(table: NodeTable, slices: list[ResourceSlice], version: KubernetesVersion = V1_37) -> Handle:
    store = DraStore()
    store.upsert_class(DeviceClass("device-class-name", extended_resource_name=EXT_DRA))
    for sl in slices:
        store.upsert_slice(sl)
    return Handle(
        table, services=ClusterServices(dra=DraServices(store, compile_selector)), features=Features(version)
    )


def eight_devices(node: str) -> ResourceSlice:
    devices = tuple(Device(f"device-{i}") for i in range(1, 9))
    return ResourceSlice(f"{node}-slice", "test-driver", ResourcePool(node), devices, node_name=node)


@pytest.mark.parametrize("pre_score", [True, False], ids=["PreScore", "PreScore not called"])
def test_include_dra_resource_on_a_node_for_balanced_resource_allocation(pre_score: bool) -> None:
    nodes = [mk("node1", 3500, 40000), mk("node2", 3500, 40000)]
    existing = [
        make_pod({"cpu": 1000, "memory": 0}, {"cpu": 2000, "memory": 0}, node_name="node1"),
        make_pod({"cpu": 1000, "memory": 2000}, {"cpu": 2000, "memory": 3000}, node_name="node2"),
    ]
    table = make_table(nodes, existing)
    resources = [*DEFAULT, {"name": EXT_DRA, "weight": 1}]
    handle = dra_handle(table, [eight_devices("node1")])
    balanced = NodeResourcesBalancedAllocation.from_profile(handle, {"resources": resources})
    assert score_all(balanced, make_pod({EXT_DRA: 1}), table, pre_score) == [76, 75]
    # Devices already allocated count as used: one of eight taken moves node1's balance.
    assert DraDeviceCounts.for_resources(handle, balanced.resources) is not None
    handle.services.dra.store.signal_pending_allocation(
        ResourceClaim(
            "c",
            uid="c",
            allocation=AllocationResult(
                (DeviceRequestAllocationResult("r", "test-driver", "node1", "device-1"),)
            ),
        )
    )
    counts = DraDeviceCounts.for_resources(handle, balanced.resources)
    assert counts is not None
    capacity, used = counts.capacity_and_allocated(EXT_DRA, all_rows(table)) or ((), ())
    assert ([int(c) for c in capacity], [int(u) for u in used]) == ([8, 0], [1, 0])


def test_without_the_gate_dra_devices_are_not_counted() -> None:
    table = make_table([mk("node1", 3500, 40000)])
    resources = [*DEFAULT, {"name": EXT_DRA, "weight": 1}]
    handle = dra_handle(table, [eight_devices("node1")], V1_35)
    assert (
        DraDeviceCounts.for_resources(
            handle, NodeResourcesBalancedAllocation.from_profile(handle, {"resources": resources}).resources
        )
        is None
    )


def test_best_effort_pod_is_skipped_in_pre_score() -> None:
    table = make_table([mk("node1", 4000, 10000), mk("node2", 4000, 10000)])
    balanced = plugin(NodeResourcesBalancedAllocation, table)
    state = CycleState()
    assert balanced.pre_score(state, make_pod(), all_rows(table)).code == Code.SKIP
    # Without PreScore, Score returns 0 for a best-effort pod.
    assert balanced.score(CycleState(), make_pod({}), all_rows(table)).tolist() == [0, 0]


@pytest.mark.parametrize(("version", "want"), [(V1_35, 75), (V1_36, 62), (V1_37, 62)])
def test_uses_actual_requests_not_non_zero_defaults(version: KubernetesVersion, want: int) -> None:
    """useRequested: an existing pod without requests adds nothing (Fit would count 100m/200Mi).
    cpu 0 → 500/1000, memory 0/1000: balance 100 → 75 (std 0.25); from v1.36 50 + (50 + 75 -
    100) / 2 = 62."""
    table = make_table([mk("n", 1000, 1000)], [make_pod({}, node_name="n")])
    balanced = plugin(NodeResourcesBalancedAllocation, table, features=Features(version))
    assert score_all(balanced, make_pod({"cpu": 500}), table) == [want]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight: Invalid value: 2: must be 1"),
        (
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
            'resources[1].name: Duplicate value: "cpu"',
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgsError, match=re.escape(message)):
        plugin(NodeResourcesBalancedAllocation, make_table([]), args)


def _go_reference(requested: list[int], allocatable: list[int]) -> int:
    """balancedResourceScorer, transcribed loop for loop."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    return int((1 - std) * 100.0)


columns = st.lists(
    st.lists(st.tuples(st.integers(0, 10**12), st.integers(0, 10**12) | st.just(0)), min_size=4, max_size=4),
    min_size=1,
    max_size=20,
)


@given(columns)
def test_scorer_matches_go_float_arithmetic(rows: list[list[tuple[int, int]]]) -> None:
    requested = np.array([[c[i][0] for c in rows] for i in range(4)], dtype=np.int64)
    allocatable = np.array([[c[i][1] for c in rows] for i in range(4)], dtype=np.int64)
    want = [_go_reference([c[i][0] for i in range(4)], [c[i][1] for i in range(4)]) for c in rows]
    assert balanced_resource_scorer(requested, allocatable).tolist() == want


# Two resources present on every row (cpu and memory): the scorer's shortcut.
two_resources = st.lists(st.tuples(st.integers(0, 10**12), st.integers(1, 10**12)), min_size=2, max_size=2)


@given(st.lists(two_resources, min_size=1, max_size=20))
def test_two_resource_shortcut_matches_the_general_path_and_go(rows: list[list[tuple[int, int]]]) -> None:
    requested = np.array([[c[i][0] for c in rows] for i in range(2)], dtype=np.int64)
    allocatable = np.array([[c[i][1] for c in rows] for i in range(2)], dtype=np.int64)
    got = balanced_resource_scorer(requested, allocatable).tolist()
    assert got == balanced_general(requested, allocatable, allocatable != 0).tolist()
    assert got == [_go_reference([c[i][0] for i in range(2)], [c[i][1] for i in range(2)]) for c in rows]
