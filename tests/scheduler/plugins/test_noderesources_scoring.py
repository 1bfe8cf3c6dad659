"""Scoring strategies: least_allocated_test.go, most_allocated_test.go and
requested_to_capacity_ratio_test.go (v1.35.4), run through NodeResourcesFit."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.plugins.noderesources.fit import NodeResourcesFit
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    broken_linear,
    go_div,
    go_round,
    requested_to_capacity_ratio_scorer,
    scaled_shape,
)
from policy_scheduler.scheduler.resource_names import is_extended_resource_name, is_scalar_resource_name

from ._build_noderesources import make_node, make_pod, make_table, plugin, q, score_all

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_SET = [*DEFAULT, {"name": EXT, "weight": 1}]


def cap(name: str, values: dict[str, str]) -> Node:
    """st.MakeNode().Name(name).Capacity(values): pods 32 is always added."""
    return make_node(name, q({"pods": "32", **values}))


def req(*containers: dict[str, str], node: str = "") -> Pod:
    """st.MakePod().Req(...)...: one container per map; Node() places it."""
    return make_pod(*(q(c) for c in containers if c), node_name=node)


def run(strategy: dict[str, Any], pod: Pod, nodes: list[Node], existing: list[Pod]) -> list[int]:
    table = make_table(nodes, existing)
    return score_all(plugin(NodeResourcesFit, table, {"scoringStrategy": strategy}), pod, table)


TWO_SMALL = [
    cap("node1", {"cpu": "4000", "memory": "10000"}),
    cap("node2", {"cpu": "4000", "memory": "10000"}),
]
SIZED = [cap("node1", {"cpu": "4000", "memory": "10000"}), cap("node2", {"cpu": "6000", "memory": "10000"})]
BIG = [cap("node1", {"cpu": "10000", "memory": "20000"}), cap("node2", {"cpu": "10000", "memory": "20000"})]
BIG_MEM = [
    cap("node1", {"cpu": "10000", "memory": "20000"}),
    cap("node2", {"cpu": "10000", "memory": "50000"}),
]
EXT_NODES = [
    cap("node1", {"cpu": "6000", "memory": "10000"}),
    cap("node2", {"cpu": "6000", "memory": "10000", EXT: "4"}),
]
EXT_BOTH = [
    cap("node1", {"cpu": "6000", "memory": "10000", EXT: "4"}),
    cap("node2", {"cpu": "6000", "memory": "10000", EXT: "10"}),
]
C12 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

# (name, pod, nodes, existing pods, resources, expected scores)
LEAST_CASES: list[tuple[str, Pod, list[Node], list[Pod], list[dict[str, Any]], list[int]]] = [
    ("nothing scheduled, nothing requested", req(), TWO_SMALL, [], DEFAULT, [100, 100]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        req(*C12),
        SIZED,
        [],
        DEFAULT,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled",
        req(),
        TWO_SMALL,
        [req(node="node1"), req(node="node1"), req(node="node2"), req(node="node2")],
        DEFAULT,
        [100, 100],
    ),
    (
        "no resources requested, pods scheduled with resources",
        req(),
        BIG,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "0"}, node="node2"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        req(*C12),
        BIG,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        req(*C12),
        BIG_MEM,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        req({"cpu": "3000", "memory": "0"}),
        TWO_SMALL,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        req(),
        [make_node("node1"), make_node("node2")],
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory",
        req(*C12),
        SIZED,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        req(*C12),
        EXT_NODES,
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        req({"cpu": "3000", "memory": "5000", EXT: "2"}),
        EXT_BOTH,
        [],
        EXTENDED_SET,
        [50, 60],
    ),
    (
        "if the node doesn't have a resource",
        req({"cpu": "3000", "memory": "4000"}),
        EXT_NODES,
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "resources", "want"),
    [c[1:] for c in LEAST_CASES],
    ids=[c[0] for c in LEAST_CASES],
)
def test_least_allocated(
    pod: Pod, nodes: list[Node], existing: list[Pod], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert run({"type": "LeastAllocated", "resources": resources}, pod, nodes, existing) == want


MOST_CASES: list[tuple[str, Pod, list[Node], list[Pod], list[dict[str, Any]], list[int]]] = [
    ("nothing scheduled, nothing requested", req(), TWO_SMALL, [], DEFAULT, [0, 0]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        req(*C12),
        SIZED,
        [],
        DEFAULT,
        [62, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        req(),
        BIG,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "0"}, node="node2"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [30, 42],
    ),
    (
        "resources requested, pods scheduled with resources",
        req(*C12),
        BIG,
        [
            req({"cpu": "3000", "memory": "0"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        DEFAULT,
        [42, 55],
    ),
    (
        "resources requested equal node capacity",
        req({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [cap("node1", {"cpu": "5000", "memory": "10000"}), cap("node2", {"cpu": "10000", "memory": "9000"})],
        [],
        DEFAULT,
        [95, 75],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes, weighted",
        req(*C12),
        SIZED,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
    ),
    (
        "no resources requested, pods scheduled, nonzero request for resource",
        make_pod({}),
        [
            cap("node1", {"cpu": "250m", "memory": "1000Mi"}),
            cap("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [make_pod({}, node_name="node1"), make_pod({}, node_name="node1")],
        DEFAULT,
        [80, 30],
    ),
    (
        "bypass extended resource if the pod does not request",
        req(*C12),
        EXT_NODES,
        [],
        EXTENDED_SET,
        [50, 50],
    ),
    (
        "honor extended resource if the pod request",
        req({"cpu": "3000", "memory": "5000", EXT: "2"}),
        EXT_BOTH,
        [],
        EXTENDED_SET,
        [50, 40],
    ),
    (
        "if the node doesn't have a resource",
        req({"cpu": "3000", "memory": "4000"}),
        EXT_NODES,
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "resources", "want"),
    [c[1:] for c in MOST_CASES],
    ids=[c[0] for c in MOST_CASES],
)
def test_most_allocated(
    pod: Pod, nodes: list[Node], existing: list[Pod], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert run({"type": "MostAllocated", "resources": resources}, pod, nodes, existing) == want


def rtcr(resources: list[dict[str, Any]], shape: list[tuple[int, int]]) -> dict[str, Any]:
    points = [{"utilization": u, "score": s} for u, s in shape]
    return {
        "type": "RequestedToCapacityRatio",
        "resources": resources,
        "requestedToCapacityRatio": {"shape": points},
    }


RTCR_CASES: list[tuple[str, Pod, list[Node], list[Pod], list[int]]] = [
    (
        "nothing scheduled, nothing requested",
        req(),
        TWO_SMALL,
        [req(node="node1"), req(node="node1")],
        [100, 100],
    ),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        req(*C12),
        SIZED,
        [req(node="node1"), req(node="node1")],
        [38, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        req(),
        SIZED,
        [
            req({"cpu": "3000", "memory": "5000"}, node="node1"),
            req({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [38, 50],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "want"), [c[1:] for c in RTCR_CASES], ids=[c[0] for c in RTCR_CASES]
)
def test_requested_to_capacity_ratio(
    pod: Pod, nodes: list[Node], existing: list[Pod], want: list[int]
) -> None:
    assert run(rtcr(DEFAULT, [(0, 10), (100, 0)]), pod, nodes, existing) == want


MIB = 1024 * 1024


def mk(name: str, cpu_milli: int, memory: int, extended: dict[str, int]) -> Node:
    """makeNode in test_util.go (no pods allocatable; scoring ignores it)."""
    return make_node(name, {"cpu": cpu_milli, "memory": memory, **extended})


SINGLE_NODES = [
    mk("node1", 4000, 10000 * MIB, {"intel.com/foo": 8}),
    mk("node2", 4000, 10000 * MIB, {"intel.com/foo": 4}),
]
SINGLE_CASES = [
    ("nothing scheduled, nothing requested", make_pod(), [], [0, 0]),
    ("pods scheduled with less resources", make_pod({"intel.com/foo": 2}), [make_pod()], [2, 5]),
    (
        "on node with existing pod running",
        make_pod({"intel.com/foo": 2}),
        [make_pod({"intel.com/foo": 2}, node_name="node2")],
        [2, 10],
    ),
    ("pods scheduled with more resources", make_pod({"intel.com/foo": 4}), [make_pod()], [5, 10]),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in SINGLE_CASES], ids=[c[0] for c in SINGLE_CASES]
)
def test_resource_bin_packing_single_extended(pod: Pod, existing: list[Pod], want: list[int]) -> None:
    strategy = rtcr([{"name": "intel.com/foo", "weight": 1}], [(0, 0), (100, 1)])
    assert run(strategy, pod, SINGLE_NODES, existing) == want


MULTI_NODES = [
    mk("node1", 4000, 10000 * MIB, {"intel.com/foo": 8, "intel.com/bar": 4}),
    mk("node2", 4000, 10000 * MIB, {"intel.com/foo": 4, "intel.com/bar": 8}),
]
POD1 = {"intel.com/foo": 2, "intel.com/bar": 2}
POD2 = {"intel.com/foo": 4, "intel.com/bar": 2}
MULTI_CASES = [
    ("nothing scheduled, nothing requested", make_pod(), [], [0, 0]),
    ("pods scheduled with less resources", make_pod(POD1), [make_pod()], [4, 3]),
    ("on node with existing pod running", make_pod(POD1), [make_pod(POD2, node_name="node2")], [4, 7]),
    ("pods scheduled with more resources", make_pod(POD2), [make_pod()], [5, 5]),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in MULTI_CASES], ids=[c[0] for c in MULTI_CASES]
)
def test_resource_bin_packing_multiple_extended(pod: Pod, existing: list[Pod], want: list[int]) -> None:
    resources = [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}]
    assert run(rtcr(resources, [(0, 0), (100, 1)]), pod, MULTI_NODES, existing) == want


BROKEN_LINEAR_CASES = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize(("shape", "assertions"), BROKEN_LINEAR_CASES)
def test_broken_linear_function(shape: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    p = np.array([a for a, _ in assertions], dtype=np.int64)
    assert broken_linear(shape, p).tolist() == [e for _, e in assertions]


def test_broken_linear_truncates_negative_slopes_toward_zero() -> None:
    # 100 + (0 - 100) * (1 - 0) / 3 = 100 - 33 (Go truncation), not 100 - 34 (floor).
    assert broken_linear([(0, 100), (3, 0)], np.array([1, 2], dtype=np.int64)).tolist() == [67, 34]


# ---- the worked example in the capacity-allocation docs (seed 000, "Node scoring for capacity
# allocation"): shape {0,0},{100,10} applied without the x10 config scaling.

DOC_RESOURCES = (ResourceSpec("intel.com/foo", 5), ResourceSpec("memory", 1), ResourceSpec("cpu", 3))
DOC_NODES = [
    make_node("node1", {"intel.com/foo": 4, "memory": 1024 * MIB, "cpu": 8000, "pods": 10}),
    make_node("node2", {"intel.com/foo": 8, "memory": 1024 * MIB, "cpu": 8000, "pods": 10}),
]
DOC_USED = [
    make_pod({"intel.com/foo": 1, "memory": 256 * MIB, "cpu": 1000}, node_name="node1"),
    make_pod({"intel.com/foo": 2, "memory": 512 * MIB, "cpu": 6000}, node_name="node2"),
]
DOC_POD = make_pod({"intel.com/foo": 2, "memory": 256 * MIB, "cpu": 2000})


def test_documented_capacity_allocation_example() -> None:
    requested = np.array([[2 + 1, 2 + 2], [256 + 256, 256 + 512], [2 + 1, 2 + 6]], dtype=np.int64)
    allocatable = np.array([[4, 8], [1024, 1024], [8, 8]], dtype=np.int64)
    raw = requested_to_capacity_ratio_scorer(DOC_RESOURCES, [(0, 0), (100, 10)])
    assert raw(requested, allocatable).tolist() == [5, 7]


def test_documented_example_through_the_plugin() -> None:
    """The same cluster with the configured shape, whose scores are scaled to 0..100 as in v1.35:
    node1 round((75*5 + 50*1 + 37*3) / 9) = 60, node2 round((50*5 + 75*1 + 100*3) / 9) = 69."""
    resources = [{"name": s.name, "weight": s.weight} for s in DOC_RESOURCES]
    assert run(rtcr(resources, [(0, 0), (100, 10)]), DOC_POD, DOC_NODES, DOC_USED) == [60, 69]


# ---- helpers -------------------------------------------------------------------------------------


@given(st.integers(-(10**12), 10**12), st.integers(-(10**6), 10**6).filter(bool))
def test_go_div_truncates_toward_zero(a: int, b: int) -> None:
    want = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    assert int(go_div(a, b)) == want


def test_go_round_half_away_from_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, 2.4999, 59.5555, 0.49999999999999994])
    assert go_round(x).tolist() == [1, 2, 3, -1, 2, 60, 0]


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("cpu", False, False),
        ("pods", False, False),
        ("ephemeral-storage", False, False),
        ("example.com/aaa", True, True),
        ("kubernetes.io/something", False, True),
        ("subdomain.kubernetes.io/something", False, True),
        ("hugepages-2Mi", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("requests.example.com/x", False, False),
        ("Example.com/x", False, False),
        ("example.com/a/b", False, False),
        ("foo", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) == extended
    assert is_scalar_resource_name(name) == scalar


def test_shape_validation_and_scaling() -> None:
    assert scaled_shape([{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]) == (
        (0, 100),
        (100, 0),
    )
    shape = "scoringStrategy.requestedToCapacityRatio.shape"
    for bad, message in (
        (
            [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}],
            f"{shape}[1].utilization: Invalid value: 50: values must be sorted in increasing order",
        ),
        (
            [{"utilization": 101, "score": 1}],
            f"{shape}[0].utilization: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            [{"utilization": 0, "score": 11}],
            f"{shape}[0].score: Invalid value: 11: not in valid range [0, 10]",
        ),
    ):
        with pytest.raises(ArgsError, match=re.escape(message)):
            scaled_shape(bad)
