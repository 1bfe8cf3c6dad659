"""NodeResourcesFit: cases ported from fit_test.go (v1.35.4), plus batch and property checks."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.dra.model import DeviceClass
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.noderesources.fit import (
    NodeResourcesFit,
    after_device_class_event,
    after_node_change,
    after_pod_event,
)
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

from ._build_noderesources import all_rows, make_node, make_pod, make_table, plugin, q, score_all, statuses

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def rs(cpu: int = 0, mem: int = 0, extra: dict[str, int] | None = None, eph: int = 0) -> dict[str, int]:
    """newResourcePod's container requests: cpu (milli), memory, ephemeral-storage and scalars."""
    out = {"cpu": cpu, "memory": mem, "ephemeral-storage": eph, "pods": 0}
    out.update(extra or {})
    return out


def alloc(cpu: int, mem: int, pods: int, ext_a: int, storage: int, huge_a: int) -> dict[str, int]:
    """makeAllocatableResources."""
    return {
        "cpu": cpu,
        "memory": mem,
        "pods": pods,
        EXT_A: ext_a,
        "ephemeral-storage": storage,
        HUGE_A: huge_a,
    }


def unsched(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unres(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


def run_filter(
    pod: Pod, node_alloc: dict[str, int], existing: list[Pod], args: dict[str, Any] | None = None
) -> Status | None:
    table = make_table([make_node("node", node_alloc)])
    for other in existing:
        table.add_pod(other, 0)
    fit = plugin(NodeResourcesFit, table, args)
    state = CycleState()
    _, status = fit.pre_filter(state, pod)
    assert status.is_success
    result = fit.filter(state, pod, all_rows(table))
    return statuses(result)[0]


ENOUGH = alloc(10, 20, 32, 5, 20, 5)

# (name, pod, requests of the pod already on the node, args, wanted status or None)
ENOUGH_CASES: list[tuple[str, Pod, dict[str, int], dict[str, Any], Status | None]] = [
    ("no resources requested always fits", make_pod(), rs(10, 20), {}, None),
    (
        "too many resources fails",
        make_pod(rs(1, 1)),
        rs(10, 20),
        {},
        unsched(insufficient("cpu"), insufficient("memory")),
    ),
    (
        "too many resources fails due to init container cpu",
        make_pod(rs(1, 1), init=[rs(3, 1)]),
        rs(8, 19),
        {},
        unsched(insufficient("cpu")),
    ),
    (
        "too many resources fails due to highest init container cpu",
        make_pod(rs(1, 1), init=[rs(3, 1), rs(2, 1)]),
        rs(8, 19),
        {},
        unsched(insufficient("cpu")),
    ),
    (
        "too many resources fails due to init container memory",
        make_pod(rs(1, 1), init=[rs(1, 3)]),
        rs(9, 19),
        {},
        unsched(insufficient("memory")),
    ),
    (
        "too many resources fails due to highest init container memory",
        make_pod(rs(1, 1), init=[rs(1, 3), rs(1, 2)]),
        rs(9, 19),
        {},
        unsched(insufficient("memory")),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        make_pod(rs(1, 1), init=[rs(1, 1)]),
        rs(9, 19),
        {},
        None,
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        make_pod(rs(1, 1), init=[rs(1, 1), rs(1, 1)]),
        rs(9, 19),
        {},
        None,
    ),
    ("both resources fit", make_pod(rs(1, 1)), rs(5, 5), {}, None),
    ("one resource memory fits", make_pod(rs(2, 1)), rs(9, 5), {}, unsched(insufficient("cpu"))),
    ("one resource cpu fits", make_pod(rs(1, 2)), rs(5, 19), {}, unsched(insufficient("memory"))),
    ("equal edge case", make_pod(rs(5, 1)), rs(5, 19), {}, None),
    ("equal edge case for init container", make_pod(rs(4, 1), init=[rs(5, 1)]), rs(5, 19), {}, None),
    ("extended resource fits", make_pod(rs(extra={EXT_A: 1})), rs(), {}, None),
    (
        "extended resource fits for init container",
        make_pod(rs(), init=[rs(extra={EXT_A: 1})]),
        rs(),
        {},
        None,
    ),
    (
        "extended resource capacity enforced",
        make_pod(rs(1, 1, {EXT_A: 10})),
        rs(0, 0, {EXT_A: 0}),
        {},
        unres(insufficient(EXT_A)),
    ),
    (
        "extended resource capacity enforced for init container",
        make_pod(rs(), init=[rs(1, 1, {EXT_A: 10})]),
        rs(0, 0, {EXT_A: 0}),
        {},
        unres(insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced",
        make_pod(rs(1, 1, {EXT_A: 1})),
        rs(0, 0, {EXT_A: 5}),
        {},
        unsched(insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for init container",
        make_pod(rs(), init=[rs(1, 1, {EXT_A: 1})]),
        rs(0, 0, {EXT_A: 5}),
        {},
        unsched(insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        make_pod(rs(1, 1, {EXT_A: 3}), rs(1, 1, {EXT_A: 3})),
        rs(0, 0, {EXT_A: 2}),
        {},
        unres(insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        make_pod(rs(), init=[rs(1, 1, {EXT_A: 3}), rs(1, 1, {EXT_A: 3})]),
        rs(0, 0, {EXT_A: 2}),
        {},
        None,
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        make_pod(rs(), init=[rs(1, 1, {EXT_A: 6}), rs(1, 1, {EXT_A: 3})]),
        rs(0, 0, {EXT_A: 2}),
        {},
        unres(insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        make_pod(rs(1, 1, {EXT_B: 1})),
        rs(),
        {},
        unres(insufficient(EXT_B)),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        make_pod(rs(), init=[rs(1, 1, {EXT_B: 1})]),
        rs(),
        {},
        unres(insufficient(EXT_B)),
    ),
    (
        "kubernetes.io resource capacity enforced",
        make_pod(rs(1, 1, {K8S_A: 10})),
        rs(),
        {},
        unres(insufficient(K8S_A)),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        make_pod(rs(), init=[rs(1, 1, {K8S_B: 10})]),
        rs(),
        {},
        unres(insufficient(K8S_B)),
    ),
    (
        "hugepages resource capacity enforced",
        make_pod(rs(1, 1, {HUGE_A: 10})),
        rs(0, 0, {HUGE_A: 0}),
        {},
        unres(insufficient(HUGE_A)),
    ),
    (
        "hugepages resource capacity enforced for init container",
        make_pod(rs(), init=[rs(1, 1, {HUGE_A: 10})]),
        rs(0, 0, {HUGE_A: 0}),
        {},
        unres(insufficient(HUGE_A)),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        make_pod(rs(1, 1, {HUGE_A: 3}), rs(1, 1, {HUGE_A: 3})),
        rs(0, 0, {HUGE_A: 2}),
        {},
        unres(insufficient(HUGE_A)),
    ),
    (
        "skip checking ignored extended resource",
        make_pod(rs(1, 1, {EXT_B: 1})),
        rs(),
        {"ignoredResources": [EXT_B]},
        None,
    ),
    (
        "resources + pod overhead fits",
        make_pod(rs(1, 1), overhead={"cpu": 3, "memory": 13}),
        rs(5, 5),
        {},
        None,
    ),
    (
        "requests + overhead does not fit for memory",
        make_pod(rs(1, 1), overhead={"cpu": 1, "memory": 15}),
        rs(5, 5),
        {},
        unsched(insufficient("memory")),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        make_pod(rs(1, 1, {EXT_B: 1, K8S_A: 1})),
        rs(),
        {"ignoredResourceGroups": ["example.com"]},
        unres(insufficient(K8S_A)),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        make_pod(rs(1, 1, {EXT_A: 0})),
        rs(0, 0, {EXT_A: 6}),
        {},
        None,
    ),
    (
        "skip checking resource request with quantity zero",
        make_pod(rs(extra={EXT_A: 1})),
        rs(20, 30, {EXT_A: 1}),
        {},
        None,
    ),
    (
        "both pod-level and container-level resources fit",
        make_pod(rs(1, 1), pod_requests={"cpu": 1, "memory": 2}),
        rs(5, 5),
        {},
        None,
    ),
    (
        "pod-level cpu resource not fit",
        make_pod(rs(1, 1), pod_requests={"cpu": 7, "memory": 2}),
        rs(5, 5),
        {},
        unsched(insufficient("cpu")),
    ),
    (
        "pod-level memory resource not fit",
        make_pod(rs(1, 1), pod_requests={"cpu": 3, "memory": 2}),
        rs(5, 19),
        {},
        unsched(insufficient("memory")),
    ),
    (
        "pod-level hugepages resource fit",
        make_pod(pod_requests={"cpu": 3, "memory": 2, HUGE_A: 5}),
        {},
        {},
        None,
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        make_pod(rs(1, 1, {HUGE_A: 3}), pod_requests={"cpu": 3, "memory": 2, HUGE_A: 5}),
        {},
        {},
        None,
    ),
    (
        "pod-level hugepages resource not fit",
        make_pod(pod_requests={"cpu": 3, "memory": 2, HUGE_A: 10}),
        {},
        {},
        unres(insufficient(HUGE_A)),
    ),
    (
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        make_pod(rs(1, 1), init=[rs(1, 1)], pod_requests={"cpu": 3, "memory": 2}),
        rs(5, 19),
        {},
        unsched(insufficient("memory")),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "args", "want"), [c[1:] for c in ENOUGH_CASES], ids=[c[0] for c in ENOUGH_CASES]
)
def test_enough_requests(
    pod: Pod, existing: dict[str, int], args: dict[str, Any], want: Status | None
) -> None:
    existing_pods = [make_pod(existing)] if existing else [make_pod()]
    assert run_filter(pod, ENOUGH, existing_pods, args) == want


NOT_ENOUGH_PODS = alloc(10, 20, 1, 0, 0, 0)
NOT_ENOUGH_CASES = [
    ("even without specified resources", make_pod(), rs(10, 20)),
    ("even if both resources fit", make_pod(rs(1, 1)), rs(5, 5)),
    ("even for equal edge case", make_pod(rs(5, 1)), rs(5, 19)),
    ("even for equal edge case due to init container", make_pod(rs(5, 1), init=[rs(5, 1)]), rs(5, 19)),
]


@pytest.mark.parametrize(
    ("pod", "existing"), [c[1:] for c in NOT_ENOUGH_CASES], ids=[c[0] for c in NOT_ENOUGH_CASES]
)
def test_not_enough_pods(pod: Pod, existing: dict[str, int]) -> None:
    assert run_filter(pod, NOT_ENOUGH_PODS, [make_pod(existing)]) == unsched("Too many pods")


STORAGE_CASES = [
    ("empty storage requested, and pod fits", make_pod(rs(1, 1)), rs(2, 10), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        make_pod(rs(eph=25)),
        rs(2, 2),
        unres(insufficient("ephemeral-storage")),
    ),
    ("ephemeral local storage is sufficient", make_pod(rs(eph=5)), rs(2, 2, eph=10), None),
    ("pod fits", make_pod(rs(eph=10)), rs(2, 2), None),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"), [c[1:] for c in STORAGE_CASES], ids=[c[0] for c in STORAGE_CASES]
)
def test_storage_requests(pod: Pod, existing: dict[str, int], want: Status | None) -> None:
    assert run_filter(pod, ENOUGH, [make_pod(existing)]) == want


SIDECAR_CASES = [
    ("pod without restartable init containers", make_pod({}), None),
    ("pod with restartable init containers", make_pod({}, sidecars=[{}]), None),
    ("total requests within allocatable", make_pod({"cpu": 1}, sidecars=[{"cpu": 1}]), None),
    (
        "total requests exceed allocatable",
        make_pod({"cpu": 1}, sidecars=[{"cpu": 2}]),
        unres(insufficient("cpu")),
    ),
]


@pytest.mark.parametrize(("pod", "want"), [c[1:] for c in SIDECAR_CASES], ids=[c[0] for c in SIDECAR_CASES])
def test_restartable_init_containers(pod: Pod, want: Status | None) -> None:
    """TestRestartableInitContainers with SidecarContainers on (GA and locked in v1.35)."""
    assert run_filter(pod, alloc(2, 0, 1, 0, 0, 0), [], {}) == want


def test_several_reasons_in_fits_request_order() -> None:
    node = {"cpu": 4, "memory": 10, "pods": 1, "ephemeral-storage": 10, "b.io/x": 1, "a.io/y": 1}
    pod = make_pod({"cpu": 5, "memory": 1, "ephemeral-storage": 20, "b.io/x": 2, "a.io/y": 2})
    got = run_filter(pod, node, [make_pod({"memory": 10})])
    assert got == unres(
        "Too many pods",
        insufficient("cpu"),
        insufficient("memory"),
        insufficient("ephemeral-storage"),
        insufficient("a.io/y"),
        insufficient("b.io/x"),
    )


def test_too_many_pods_alone_is_not_unresolvable() -> None:
    got = run_filter(make_pod({"cpu": 2}), {"cpu": 4, "pods": 1}, [make_pod({"cpu": 1})])
    assert got == unsched("Too many pods")


def test_filter_without_pre_filter_is_an_error() -> None:
    """TestPreFilterDisabled."""
    table = make_table([make_node("n", {"pods": 1})])
    result = plugin(NodeResourcesFit, table).filter(CycleState(), make_pod(), all_rows(table))
    status = statuses(result)[0]
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('error reading "PreFilterNodeResourcesFit" from cycleState: not found',)


def test_batch_rows_share_statuses_per_failure_combination() -> None:
    nodes = [
        make_node("fits", {"cpu": 10, "memory": 10, "pods": 5}),
        make_node("cpu-short", {"cpu": 1, "memory": 10, "pods": 5}),
        make_node("cpu-short-2", {"cpu": 1, "memory": 10, "pods": 5}),
        make_node("cpu-busy", {"cpu": 4, "memory": 10, "pods": 5}),
        make_node("full", {"cpu": 1, "memory": 1, "pods": 0}),
    ]
    busy = make_pod({"cpu": 3}, node_name="cpu-busy")
    table = make_table(nodes, [busy])
    fit = plugin(NodeResourcesFit, table)
    pod = make_pod({"cpu": 2, "memory": 2})
    state = CycleState()
    fit.pre_filter(state, pod)
    rows = np.array([4, 3, 2, 1, 0], dtype=np.intp)  # any order, any subset
    result = fit.filter(state, pod, rows)
    assert statuses(result) == [
        unres("Too many pods", insufficient("cpu"), insufficient("memory")),
        unsched(insufficient("cpu")),
        unres(insufficient("cpu")),
        unres(insufficient("cpu")),
        None,
    ]
    assert result.status_index is not None
    assert result.status_index[2] == result.status_index[3]
    assert len(result.statuses) == 3


@pytest.mark.parametrize(
    "resources",
    [
        5,  # few checks: the combinations are counted
        20,  # more than _COUNTED_CHECKS: the combination codes are sorted
        70,  # more checks than bits in a code: the boolean columns are grouped
    ],
)
def test_many_checks_group_rows_by_their_failed_checks(resources: int) -> None:
    names = [f"example.com/r{i:02d}" for i in range(resources)]
    node = {"pods": 2, **{n: 1 for n in names}}
    pod = make_pod({n: (2 if i % 3 == 0 else 1) for i, n in enumerate(names)})
    table = make_table([make_node("a", node), make_node("b", {**node, names[0]: 5})])
    fit = plugin(NodeResourcesFit, table)
    state = CycleState()
    fit.pre_filter(state, pod)
    got = statuses(fit.filter(state, pod, all_rows(table)))
    short = [insufficient(n) for i, n in enumerate(names) if i % 3 == 0]
    assert got == [unres(*short), unres(*short[1:])]


# ---- args ------------------------------------------------------------------------------------


SUPPORTED_TYPES = 'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 101}]}},
            "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of memory not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Bogus"}},
            f'scoringStrategy.type: Unsupported value: "Bogus": {SUPPORTED_TYPES}',
        ),
        ({"scoringStrategy": {}}, f'scoringStrategy.type: Unsupported value: "": {SUPPORTED_TYPES}'),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is "
            "RequestedToCapacityRatio",
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
        ),
        (
            {"ignoredResourceGroups": ["example.com/x"]},
            "ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    """ValidateNodeResourcesFitArgs of v1.36 and later (the default release)."""
    with pytest.raises(ArgsError, match=re.escape(message)):
        plugin(NodeResourcesFit, make_table([]), args)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: required when type is RequestedToCapacityRatio",
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": []}}},
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
        ),
    ],
)
def test_v135_invalid_ratio_args(args: dict[str, Any], message: str) -> None:
    """v1.35 validated a ratio's shape whatever the strategy; for RequestedToCapacityRatio without
    one it dereferenced a nil pointer (ours: Required)."""
    with pytest.raises(ArgsError, match=re.escape(message)):
        NodeResourcesFit.from_profile(Handle(make_table([]), features=Features(V1_35)), args)


def test_default_args() -> None:
    fit = plugin(NodeResourcesFit, make_table([]))
    assert [(s.name, s.weight) for s in fit.resources] == [("cpu", 1), ("memory", 1)]
    zero_weight = plugin(
        NodeResourcesFit,
        make_table([]),
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}},
    )
    assert [(s.name, s.weight) for s in zero_weight.resources] == [("cpu", 1)]


# ---- score (TestFitScore) ----------------------------------------------------------------------

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
RTCR_DOWN = {
    "type": "RequestedToCapacityRatio",
    "resources": DEFAULT_RESOURCES,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    },
}
RTCR_UP = {
    "type": "RequestedToCapacityRatio",
    "resources": DEFAULT_RESOURCES,
    "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    },
}
MOST = {"type": "MostAllocated", "resources": DEFAULT_RESOURCES}
LEAST = {"type": "LeastAllocated", "resources": DEFAULT_RESOURCES}


def _two_nodes(cpu2: str = "6000") -> list[Any]:
    return [
        make_node("node1", q({"cpu": "4000", "memory": "10000", "pods": "32"})),
        make_node("node2", q({"cpu": cpu2, "memory": "10000", "pods": "32"})),
    ]


FIT_SCORE_CASES = [
    (
        "RequestedToCapacityRatio case1",
        q({"cpu": "3000", "memory": "5000"}),
        _two_nodes(),
        [
            make_pod(q({"cpu": "2000", "memory": "4000"}), node_name="node1"),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        RTCR_DOWN,
        [10, 32],
    ),
    (
        "RequestedToCapacityRatio case2",
        q({"cpu": "3000", "memory": "5000"}),
        _two_nodes(),
        [
            make_pod(q({"cpu": "2000", "memory": "4000"}), node_name="node1"),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        RTCR_UP,
        [95, 68],
    ),
    (
        "MostAllocated",
        q({"cpu": "1000", "memory": "2000"}),
        _two_nodes(),
        [
            make_pod(q({"cpu": "2000", "memory": "4000"}), node_name="node1"),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        MOST,
        [67, 36],
    ),
    (
        "LeastAllocated",
        q({"cpu": "1000", "memory": "2000"}),
        _two_nodes(),
        [
            make_pod(q({"cpu": "2000", "memory": "4000"}), node_name="node1"),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        LEAST,
        [32, 63],
    ),
    (
        "MostAllocated with sidecar container",
        q({"cpu": "1000", "memory": "2000"}),
        _two_nodes("4000"),
        [
            make_pod(
                q({"cpu": "1000", "memory": "2000"}),
                sidecars=[q({"cpu": "1000", "memory": "2000"})],
                node_name="node1",
            ),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        MOST,
        [67, 45],
    ),
    (
        "LeastAllocated with sidecar container",
        q({"cpu": "1000", "memory": "2000"}),
        _two_nodes("4000"),
        [
            make_pod(
                q({"cpu": "1000", "memory": "2000"}),
                sidecars=[q({"cpu": "1000", "memory": "2000"})],
                node_name="node1",
            ),
            make_pod(q({"cpu": "1000", "memory": "2000"}), node_name="node2"),
        ],
        LEAST,
        [32, 55],
    ),
]


@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
@pytest.mark.parametrize(
    ("request_", "nodes", "existing", "strategy", "want"),
    [c[1:] for c in FIT_SCORE_CASES],
    ids=[c[0] for c in FIT_SCORE_CASES],
)
def test_fit_score(
    request_: dict[str, int],
    nodes: list[Any],
    existing: list[Pod],
    strategy: dict[str, Any],
    want: list[int],
    pre_score: bool,
) -> None:
    table = make_table(nodes, existing)
    fit = plugin(NodeResourcesFit, table, {"scoringStrategy": strategy})
    assert score_all(fit, make_pod(request_), table, pre_score) == want


# ---- events and queueing hints ------------------------------------------------------------------


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37])
def test_events_to_register(version: KubernetesVersion) -> None:
    events = plugin(NodeResourcesFit, make_table([]), features=Features(version)).events_to_register()
    want = [
        (Resource.POD, Action.DELETE | Action.UPDATE_POD_SCALE_DOWN),
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE),
    ]
    if version != V1_35:  # DRAExtendedResource: a class may start serving what the pod asks for
        want.append((Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE))
    assert [(e.event.resource, e.event.action) for e in events] == want
    assert all(e.hint is not None for e in events)


def _named(name: str, uid: str, requests: dict[str, int], node: str = "", pod_level: bool = False) -> Pod:
    if pod_level:
        return make_pod(name=name, uid=uid, pod_requests=requests, node_name=node)
    return make_pod(requests, name=name, uid=uid, node_name=node)


POD_HINT_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("backoff-wrong-old-object", make_pod(), "not-a-pod", None, QueueingHint.QUEUE),
    ("backoff-wrong-new-object", make_pod(), None, "not-a-pod", QueueingHint.QUEUE),
    (
        "queue-on-other-pod-deleted",
        _named("pod1", "", q({"cpu": "1"})),
        _named("pod2", "", q({"cpu": "1"}), node="fake"),
        None,
        QueueingHint.QUEUE,
    ),
    ("skip-queue-on-unscheduled-pod-deleted", make_pod(), make_pod(), None, QueueingHint.SKIP),
    (
        "skip-queue-on-other-unscheduled-pod",
        _named("pod1", "uid0", q({"cpu": "1"})),
        _named("pod2", "uid1", q({"cpu": "2"})),
        _named("pod2", "uid1", q({"cpu": "1"})),
        QueueingHint.SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        _named("pod1", "pod1", q({"cpu": "1"})),
        _named("pod2", "pod2", q({"memory": "2"}), node="fake"),
        _named("pod2", "pod2", q({"memory": "1"}), node="fake"),
        QueueingHint.SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        _named("pod1", "pod1", q({"cpu": "1"}), pod_level=True),
        _named("pod2", "pod2", q({"memory": "2"}), node="fake", pod_level=True),
        _named("pod2", "pod2", q({"memory": "1"}), node="fake", pod_level=True),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-other-pod-some-resource-scale-down",
        _named("pod1", "pod1", q({"cpu": "1"})),
        _named("pod2", "pod2", q({"cpu": "2"}), node="fake"),
        _named("pod2", "pod2", q({"cpu": "1"}), node="fake"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-other-pod-some-pod-level-resource-scale-down",
        _named("pod1", "pod1", q({"cpu": "1"}), pod_level=True),
        _named("pod2", "pod2", q({"cpu": "2"}), node="fake", pod_level=True),
        _named("pod2", "pod2", q({"cpu": "1"}), node="fake", pod_level=True),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-resource-scale-down",
        _named("pod1", "pod1", q({"cpu": "1"})),
        _named("pod1", "pod1", q({"cpu": "2"})),
        _named("pod1", "pod1", q({"cpu": "1"})),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"), [c[1:] for c in POD_HINT_CASES], ids=[c[0] for c in POD_HINT_CASES]
)
def test_is_schedulable_after_pod_event(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert after_pod_event(pod, old, new) == want


def _cap(values: dict[str, str]) -> Any:
    """st.MakeNode().Capacity(...): always adds pods: 32."""
    return make_node("n", q({"pods": "32", **values}))


NODE_HINT_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("backoff-wrong-new-object", make_pod(), None, "not-a-node", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", make_pod(), "not-a-node", make_node("n"), QueueingHint.QUEUE),
    (
        "skip-queue-on-node-add-without-sufficient-resources",
        make_pod(rs(mem=2)),
        None,
        _cap({"memory": "1"}),
        QueueingHint.SKIP,
    ),
    (
        "skip-queue-on-node-add-without-required-resource-type",
        make_pod(rs(extra={EXT_A: 1})),
        None,
        _cap({EXT_B: "1"}),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-node-add-with-sufficient-resources",
        make_pod(rs(mem=2, extra={EXT_A: 1})),
        None,
        _cap({"memory": "4", EXT_A: "2"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-unrelated-changes",
        make_pod(rs(mem=2, extra={EXT_A: 1})),
        _cap({"memory": "2", EXT_A: "2"}),
        _cap({"memory": "2", EXT_A: "1", EXT_B: "2"}),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-pod-requested-resources-increase",
        make_pod(rs(mem=2, extra={EXT_A: 1})),
        _cap({"memory": "2", EXT_A: "1"}),
        _cap({"memory": "2", EXT_A: "2"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-node-changes-from-suitable-to-unsuitable",
        make_pod(rs(mem=2, extra={EXT_A: 1})),
        _cap({"memory": "4", EXT_A: "2"}),
        _cap({"memory": "1", EXT_A: "2"}),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-node-changes-from-unsuitable-to-suitable",
        make_pod(rs(mem=2, extra={EXT_A: 1})),
        _cap({"memory": "1", EXT_A: "2"}),
        _cap({"memory": "4", EXT_A: "2"}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_is_schedulable_after_node_change(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert after_node_change(pod, old, new) == want


# ---- extended resources backed by DRA (fit_test.go, DRAExtendedResource cases) ------------------

EXT_DRA = "extended.resource.dra.io/something"
DRA_CLASS = DeviceClass("device-class-name", extended_resource_name=EXT_DRA)


def dra_fit(
    version: KubernetesVersion, table: NodeTable, classes: tuple[DeviceClass, ...]
) -> NodeResourcesFit:
    store = DraStore()
    for c in classes:
        store.upsert_class(c)
    handle = Handle(table, services=ClusterServices(dra=DraServices(store)), features=Features(version))
    fit: NodeResourcesFit = NodeResourcesFit.from_profile(handle, {})
    return fit


# (name, gate on (v1.37) or off (v1.35), the class known, pod requests, node allocatable, want)
DRA_FIT_CASES: list[tuple[str, bool, bool, dict[str, int], dict[str, int], Status | None]] = [
    ("extended resource backed by device plugin", True, True, rs(extra={EXT_A: 1}), ENOUGH, None),
    ("extended resource backed by DRA", True, True, rs(1, 1, {EXT_DRA: 1}), ENOUGH, None),
    ("extended resource backed by DRA, nil draManager", True, False, rs(1, 1, {EXT_A: 1}), ENOUGH, None),
    (
        "extended resource backed by DRA not enabled",
        False,
        True,
        rs(1, 1, {EXT_DRA: 1}),
        ENOUGH,
        unres(insufficient(EXT_DRA)),
    ),
    (
        "extended resource NOT backed by DRA",
        True,
        True,
        rs(1, 1, {EXT_B: 1}),
        ENOUGH,
        unres(insufficient(EXT_B)),
    ),
    (
        "extended resource was backed by Device Plugin (Allocatable: 0)",
        True,
        True,
        rs(extra={EXT_DRA: 1}),
        {**ENOUGH, EXT_DRA: 0},
        None,
    ),
    # A node listing the resource serves it by its device plugin: Fit counts it there.
    (
        "DRA-backed resource the node lists in allocatable is checked",
        True,
        True,
        rs(extra={EXT_DRA: 3}),
        {**ENOUGH, EXT_DRA: 2},
        unres(insufficient(EXT_DRA)),
    ),
    (
        "DRA-backed resource the node lists in allocatable fits",
        True,
        True,
        rs(extra={EXT_DRA: 2}),
        {**ENOUGH, EXT_DRA: 2},
        None,
    ),
]


@pytest.mark.parametrize(
    ("enabled", "known", "requests", "allocatable", "want"),
    [c[1:] for c in DRA_FIT_CASES],
    ids=[c[0] for c in DRA_FIT_CASES],
)
def test_dra_backed_extended_resources(
    enabled: bool, known: bool, requests: dict[str, int], allocatable: dict[str, int], want: Status | None
) -> None:
    table = make_table([make_node("node", allocatable)])
    pod = make_pod(requests)
    fit = dra_fit(V1_37 if enabled else V1_35, table, (DRA_CLASS,) if known else ())
    state = CycleState()
    fit.pre_filter(state, pod)
    got = statuses(fit.filter(state, pod, all_rows(table)))[0]
    assert got == want
    # The one-row paths (preemption's dry runs, nominated pods) decide alike.
    single = fit.filter_row(state, pod, 0)
    assert (single if not single.is_success else None) == want
    assert fit.fits_adding_in_turn(state, 0, (), (), ()) == []
    # Signatures: a pod whose resource a class serves cannot share another pod's verdicts.
    served = enabled and known and any(n in (EXT_DRA,) for n in requests)
    assert (fit.sign_pod(pod) is None) == served


def test_dra_backed_resource_on_many_rows() -> None:
    nodes = [
        make_node("plain", ENOUGH),
        make_node("lists-1", {**ENOUGH, EXT_DRA: 1}),
        make_node("lists-4", {**ENOUGH, EXT_DRA: 4}),
    ]
    table = make_table(nodes)
    pod = make_pod(rs(extra={EXT_DRA: 2}))
    fit = dra_fit(V1_37, table, (DRA_CLASS,))
    state = CycleState()
    fit.pre_filter(state, pod)
    assert statuses(fit.filter(state, pod, all_rows(table))) == [None, unres(insufficient(EXT_DRA)), None]


DEVICE_CLASS_HINT_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    (
        "add-implicit-name",
        make_pod(rs(extra={"deviceclass.resource.kubernetes.io/gpu": 1})),
        None,
        DeviceClass("gpu"),
        QueueingHint.QUEUE,
    ),
    ("add-explicit-name", make_pod(rs(extra={EXT_DRA: 1})), None, DRA_CLASS, QueueingHint.QUEUE),
    ("add-unrelated", make_pod(rs(extra={EXT_B: 1})), None, DRA_CLASS, QueueingHint.SKIP),
    ("update-same-name", make_pod(rs(extra={EXT_DRA: 1})), DRA_CLASS, DRA_CLASS, QueueingHint.SKIP),
    (
        "update-to-requested-name",
        make_pod(rs(extra={EXT_DRA: 1})),
        DeviceClass("device-class-name"),
        DRA_CLASS,
        QueueingHint.QUEUE,
    ),
    ("wrong-object", make_pod(), None, "not-a-class", QueueingHint.QUEUE),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [c[1:] for c in DEVICE_CLASS_HINT_CASES],
    ids=[c[0] for c in DEVICE_CLASS_HINT_CASES],
)
def test_is_schedulable_after_device_class_event(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert after_device_class_event(pod, old, new) == want


def test_node_hint_counts_a_dra_backed_resource_as_fitting() -> None:
    pod = make_pod(rs(extra={EXT_DRA: 1}))
    node = make_node("n", ENOUGH)
    assert after_node_change(pod, None, node) == QueueingHint.SKIP
    assert after_node_change(pod, None, node, frozenset({EXT_DRA})) == QueueingHint.QUEUE


# ---- property: a passing node always has room ------------------------------------------------

RESOURCES = ["cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi"]
quantity = st.integers(min_value=0, max_value=12)
requests = st.dictionaries(st.sampled_from(RESOURCES), quantity, max_size=4)
node_allocs = st.dictionaries(st.sampled_from([*RESOURCES, "pods"]), quantity, max_size=6)


def _reference(pod: Pod, alloc_: dict[str, int], used: dict[str, int], pod_count: int) -> Status | None:
    """fitsRequest for one node, written out directly from fit.go."""
    reasons, unresolvable = [], False
    if pod_count + 1 > alloc_.get("pods", 0):
        reasons.append("Too many pods")
    for name in [
        "cpu",
        "memory",
        "ephemeral-storage",
        *sorted(n for n in pod.requests if "/" in n or "-2Mi" in n),
    ]:
        want = pod.requests.get(name, 0)
        if want > 0 and want > alloc_.get(name, 0) - used.get(name, 0):
            reasons.append(insufficient(name))
            unresolvable |= want > alloc_.get(name, 0)
    if not reasons:
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, tuple(reasons))


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(st.tuples(node_allocs, st.lists(requests, max_size=3)), min_size=1, max_size=6),
    pod_request=requests,
)
def test_filter_never_passes_a_node_without_room(
    nodes: list[tuple[dict[str, int], list[dict[str, int]]]], pod_request: dict[str, int]
) -> None:
    # The last node declares every resource (as 0): NodeTable.add_pod fails on a resource no node
    # has declared yet (reported separately), so keep the generated pods clear of that.
    nodes = [*nodes, ({name: 0 for name in RESOURCES}, [])]
    table = make_table([make_node(f"n{i}", a) for i, (a, _) in enumerate(nodes)])
    for row, (_, placed) in enumerate(nodes):
        for req in placed:  # the table accepts overcommitted nodes, as the cache does
            table.add_pod(make_pod(req), row)
    pod = make_pod(pod_request)
    fit = plugin(NodeResourcesFit, table)
    state = CycleState()
    fit.pre_filter(state, pod)
    got = statuses(fit.filter(state, pod, all_rows(table)))
    for row, (node_alloc, placed) in enumerate(nodes):
        used: dict[str, int] = {}
        for req in placed:
            for name, value in req.items():
                used[name] = used.get(name, 0) + value
        assert got[row] == _reference(pod, node_alloc, used, len(placed))
        if got[row] is None:
            assert len(placed) + 1 <= node_alloc.get("pods", 0)
            for name, value in pod.requests.items():
                if value > 0:
                    assert value <= node_alloc.get(name, 0) - used.get(name, 0)


def test_score_all_uses_non_zero_requests() -> None:
    """Pods without requests count 100m / 200Mi for cpu and memory when scoring."""
    table = make_table([make_node("n", {"cpu": 1000, "memory": 1000 * 1024 * 1024, "pods": 10})])
    table.add_pod(make_pod({}), 0)
    most = plugin(NodeResourcesFit, table, {"scoringStrategy": MOST})
    # (200m / 1000m * 100 + 400Mi / 1000Mi * 100) / 2 = (20 + 40) / 2
    assert score_all(most, make_pod({}), table) == [30]


def test_fit_score_ignores_pod_level_requests_like_v1_35_4() -> None:
    """Upstream's Fit scorer is built without the PodLevelResources gate: scoring sees the
    containers only, while filtering honours spec.resources (pod-level requests)."""
    from policy_scheduler.scheduler.model import Container, Pod
    from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
        ResourceSpec,
        pod_resource_requests,
    )

    pod = Pod(
        "p",
        containers=(Container("c", requests={"cpu": 100, "memory": 128 << 20}),),
        pod_requests={"cpu": 3000},
    )
    specs = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    assert pod.requests["cpu"] == 3000  # what Filter checks
    assert pod_resource_requests(pod, specs, False, pod_level=False) == [100, 128 << 20]  # what Fit scores
    assert pod_resource_requests(pod, specs, True) == [3000, 128 << 20]  # BalancedAllocation's view
