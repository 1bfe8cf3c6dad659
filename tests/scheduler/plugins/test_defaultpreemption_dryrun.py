"""DryRunPreemption / SelectVictimsOnNode: ported from upstream TestDryRunPreemption, plus the
reprieve order, nominated pods and the exact restoration of the live table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.model import Container, ContainerPort, LabelSelector, Node, Pod, Requirement
from policy_scheduler.scheduler.model import TopologySpreadConstraint as Spread
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import (
    filter_pods_with_pdb_violation,
    select_victims_on_node,
)

from ._build_defaultpreemption import (
    BEST_EFFORT,
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NOW,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    FixedRng,
    PDBFake,
    anti_affinity_exists,
    build,
    dry_run,
    match_labels,
    node,
    pod,
    post_filter,
    statuses,
    victim_names,
)

FOO = match_labels(app="foo")
EXISTS_FOO = LabelSelector(match_expressions=(Requirement("foo", "Exists"),))


def topo_node(spec: str) -> Node:
    """ "name/zone" as upstream: labels hostname, zone, region from the parts."""
    parts = spec.split("/")
    return node(parts[0], labels=dict(zip(("hostname", "zone", "region"), parts, strict=False)))


@dataclass
class Case:
    name: str
    nodes: list[str]
    preemptor: Pod
    pods: list[Pod]
    expected: list[tuple[str, list[str], int]]
    pdbs: list[Any] = field(default_factory=list)
    extra_filters: tuple[str, ...] = ()


def _p(name: str, node_name: str, priority: int, req: dict[str, int] | None = None, **kw: Any) -> Pod:
    return pod(name, node_name, priority, req, **kw)


CASES = [
    Case(
        "a pod that does not fit on any node",
        ["node1", "node2"],
        pod("p", priority=HIGH),
        [_p("p1", "node1", MID), _p("p2", "node2", MID)],
        [],
        extra_filters=("FalseFilter",),
    ),
    Case(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=LARGE),
        [_p("p1", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)],
        [("node1", ["p1"], 0), ("node2", ["p2"], 0)],
    ),
    Case(
        "a pod that would fit on the nodes, but other pods running are higher priority, "
        "no preemption would happen",
        ["node1", "node2"],
        pod("p", priority=LOW, req=LARGE),
        [_p("p1", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)],
        [],
    ),
    Case(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=LARGE),
        [_p("p1.1", "node1", LOW, SMALL), _p("p1.2", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)],
        [("node1", ["p1.2"], 0), ("node2", ["p2"], 0)],
    ),
    Case(
        "mixed priority pods are preempted",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=LARGE),
        [
            _p("p1.1", "node1", MID, SMALL),
            _p("p1.2", "node1", LOW, SMALL),
            _p("p1.3", "node1", MID, MEDIUM),
            _p("p1.4", "node1", HIGH, SMALL),
            _p("p2", "node2", HIGH, LARGE),
        ],
        [("node1", ["p1.2", "p1.3"], 0)],
    ),
    Case(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=LARGE),
        [
            _p("p1.1", "node1", LOW, SMALL, start=5),
            _p("p1.2", "node1", LOW, SMALL, start=4),
            _p("p1.3", "node1", MID, MEDIUM, start=3),
            _p("p1.4", "node1", HIGH, SMALL, start=2),
            _p("p2", "node2", HIGH, LARGE, start=1),
        ],
        [("node1", ["p1.1", "p1.3"], 0)],
    ),
    Case(
        "pod with anti-affinity is preempted",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=SMALL, labels={"foo": ""}),
        [
            _p(
                "p1.1",
                "node1",
                LOW,
                SMALL,
                labels={"foo": ""},
                affinity=anti_affinity_exists("foo", "hostname"),
            ),
            _p("p1.2", "node1", MID, SMALL),
            _p("p1.3", "node1", HIGH, SMALL),
            _p("p2", "node2", HIGH, SMALL),
        ],
        [("node1", ["p1.1"], 0)],
    ),
    Case(
        "preemption to resolve pod topology spread filter failure",
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        pod(
            "p",
            priority=HIGH,
            labels={"foo": ""},
            spread=(
                Spread(1, "zone", "DoNotSchedule", EXISTS_FOO),
                Spread(1, "hostname", "DoNotSchedule", EXISTS_FOO),
            ),
        ),
        [
            _p("pod-a1", "node-a", MID, labels={"foo": ""}),
            _p("pod-a2", "node-a", LOW, labels={"foo": ""}),
            _p("pod-b1", "node-b", LOW, labels={"foo": ""}),
            _p("pod-x1", "node-x", HIGH, labels={"foo": ""}),
            _p("pod-x2", "node-x", HIGH, labels={"foo": ""}),
        ],
        [("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)],
    ),
    Case(
        "preemption with violation of same pdb",
        ["node1"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
            _p("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
        ],
        [("node1", ["p1.1", "p1.2"], 1)],
        pdbs=[PDBFake(FOO, 1)],
    ),
    Case(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim doesn't belong to DisruptedPods",
        ["node1"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
            _p("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
        ],
        [("node1", ["p1.1", "p1.2"], 1)],
        pdbs=[PDBFake(FOO, 1, disrupted_pods=frozenset({"p2"}))],
    ),
    Case(
        "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
        ["node1"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
            _p("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
        ],
        [("node1", ["p1.1", "p1.2"], 0)],
        pdbs=[PDBFake(FOO, 1, disrupted_pods=frozenset({"p1.2"}))],
    ),
    Case(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as 'nonViolating'",
        ["node1"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}),
            _p("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"}),
            _p("p1.3", "node1", MID, MEDIUM, labels={"app": "foo"}),
        ],
        [("node1", ["p1.1", "p1.2", "p1.3"], 1)],
        pdbs=[PDBFake(FOO, 1, disrupted_pods=frozenset({"p1.3"}))],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dry_run_preemption(case: Case) -> None:
    env = build([topo_node(n) for n in case.nodes], case.pods, extra_filters=case.extra_filters)
    before = env.snapshot()
    assert dry_run(env, case.preemptor, case.pdbs) == case.expected
    after = env.snapshot()
    for key in ("requested", "non_zero", "pod_count"):
        assert np.array_equal(before[key], after[key]), key
    assert before["pods"] == after["pods"]


FIVE = ["node1", "node2", "node3", "node4", "node5"]
LIMIT_2 = {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}


def _five(priorities: list[int], labels: list[dict[str, str]] | None = None) -> list[Pod]:
    labels = labels or [{}] * 5
    return [
        _p(f"p{i + 1}", f"node{i + 1}", prio, LARGE, labels=labels[i]) for i, prio in enumerate(priorities)
    ]


@pytest.mark.parametrize(
    ("name", "priorities", "offset", "expected"),
    [
        # cycle=0 => offset=4 => node5 (yes), node1 (yes)
        (
            "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
            [MID] * 5,
            4,
            ["node1", "node5"],
        ),
        # offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        (
            "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
            [MID, VERY_HIGH, MID, MID, VERY_HIGH],
            4,
            ["node1", "node3"],
        ),
        ("offset 1 wraps nothing", [MID] * 5, 1, ["node2", "node3"]),
        ("offset 3", [MID] * 5, 3, ["node4", "node5"]),
    ],
)
def test_candidate_limit_and_offset(
    name: str, priorities: list[int], offset: int, expected: list[str]
) -> None:
    env = build([node(n) for n in FIVE], _five(priorities), args=LIMIT_2)
    assert env.plugin.num_candidates(5) == 2
    got = dry_run(env, pod("p", priority=HIGH, req=LARGE), offset=offset)
    assert [c[0] for c in got] == expected


def test_preemption_looks_past_num_candidates_until_a_non_pdb_violating_node_is_found() -> None:
    foo = {"app": "foo"}
    env = build(
        [node(n) for n in FIVE],
        _five([MID] * 5, [foo, foo, {}, {}, foo]),
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
    )
    got = dry_run(env, pod("p", priority=HIGH, req=LARGE), [PDBFake(FOO, 0)], offset=4)
    # node5 (pdb), node1 (pdb), node2 (pdb, list full), node3 (ok) -> stop
    assert got == [("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)]


def test_enforce_drops_violating_nodes_and_keeps_searching() -> None:
    foo = {"app": "foo"}
    env = build(
        [node(n) for n in FIVE],
        _five([MID] * 5, [foo, foo, {}, {}, foo]),
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
    )
    got = dry_run(env, pod("p", priority=HIGH, req=LARGE), [PDBFake(FOO, 0)], offset=4, enforce=True)
    # node5, node1, node2 are dropped; node3 and node4 are the two candidates.
    assert got == [("node3", ["p3"], 0), ("node4", ["p4"], 0)]


@pytest.mark.parametrize(
    ("args", "nodes", "want"),
    [
        ({}, 5, 5),
        ({}, 1000, 100),
        ({}, 2000, 200),
        ({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 5, 2),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 10, 3),
        ({"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0}, 7, 7),
        ({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 0}, 9, 0),
    ],
)
def test_calculate_num_candidates(args: dict[str, int], nodes: int, want: int) -> None:
    env = build([node("n")], args=args)
    assert env.plugin.num_candidates(nodes) == want


def test_random_offset_comes_from_handle_rng() -> None:
    """With the candidate limit at 1, the offset alone decides which node is nominated."""
    nodes = [node(n) for n in FIVE]
    for offset in range(5):
        env = build(
            nodes,
            _five([MID] * 5),
            args={"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 1},
            rng=FixedRng(offset),
            policy=BEST_EFFORT,
        )
        result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE))
        assert status.is_success
        assert result is not None
        assert result.nominated_node_name == FIVE[offset]


# ---- reprieve order -------------------------------------------------------------------------


def test_reprieve_tries_pdb_violating_pods_first() -> None:
    """The PDB-violating pod is reprieved before the more important non-violating one, so the
    low-priority pod under a PDB stays and the unprotected mid-priority pod is the victim."""
    pods = [
        _p("protected-low", "node1", LOW, MEDIUM, labels={"app": "foo"}),
        _p("free-mid", "node1", MID, MEDIUM),
    ]
    env = build([node("node1")], pods)
    # The preemptor needs 300m: one of the two 200m pods must go.
    got = dry_run(env, pod("p", priority=HIGH, req=LARGE), [PDBFake(FOO, 0)])
    assert got == [("node1", ["free-mid"], 0)]
    # Without the PDB, the most important pod (free-mid) is reprieved first and the low one goes.
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node1", ["protected-low"], 0)]


def test_reprieve_within_a_group_goes_by_priority_then_start_time() -> None:
    pods = [
        _p("old-low", "node1", LOW, MEDIUM, start=1),
        _p("new-low", "node1", LOW, MEDIUM, start=2),
    ]
    env = build([node("node1")], pods)
    # Equal priority: the earlier start is more important, reprieved first; the newer one goes.
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node1", ["new-low"], 0)]


def test_filter_pods_with_pdb_violation_is_stable_and_counts_down() -> None:
    pods = [pod(f"p{i}", "n", labels={"app": "foo"}) for i in range(4)]
    other = pod("other", "n", labels={"app": "bar"})
    pdbs = [PDBFake(FOO, 2)]
    violating, non_violating = filter_pods_with_pdb_violation([*pods, other], pdbs)
    assert [p.name for p in non_violating] == ["p0", "p1", "other"]
    assert [p.name for p in violating] == ["p2", "p3"]


@pytest.mark.parametrize(
    ("pdb", "pod_namespace", "labels", "violating"),
    [
        (PDBFake(None, 0), "default", {"app": "foo"}, False),  # nil selector selects nothing
        (PDBFake(LabelSelector(), 0), "default", {"app": "foo"}, True),  # empty: whole namespace
        (PDBFake(LabelSelector(), 0), "default", {}, True),
        (PDBFake(FOO, 0, namespace="other"), "default", {"app": "foo"}, False),
        (PDBFake(FOO, 0), "default", {"app": "bar"}, False),
        (
            PDBFake(LabelSelector(match_expressions=(Requirement("app", "Bogus"),)), 0),
            "default",
            {"app": "x"},
            False,
        ),
        (PDBFake(FOO, -1), "default", {"app": "foo"}, True),
    ],
)
def test_pdb_matching(pdb: PDBFake, pod_namespace: str, labels: dict[str, str], violating: bool) -> None:
    victim = pod("v", "n", labels=labels, namespace=pod_namespace)
    got_violating, _ = filter_pods_with_pdb_violation([victim], [pdb])
    assert bool(got_violating) == violating


def test_pdbs_service_may_be_a_callable() -> None:
    calls: list[int] = []

    def lister() -> list[PDBFake]:
        calls.append(1)
        return [PDBFake(FOO, 0)]

    pods = [_p("p1", "node1", MID, LARGE, labels={"app": "foo"})]
    env = build([node("node1")], pods, policy=BEST_EFFORT, services={"list_pdbs": lister})
    result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE))
    assert status.is_success
    assert victim_names(result) == ["p1"]
    assert calls == [1]


# ---- nominated pods ------------------------------------------------------------------------


def test_nominated_pods_of_higher_priority_reserve_their_room() -> None:
    """A VERY_HIGH pod nominated to node1 counts as running there: removing the MID pod is not
    enough any more, so node2 is chosen."""
    pods = [_p("p1", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)]
    nominated = {"node1": [pod("nom", priority=VERY_HIGH, req=LARGE, nominated="node1")]}
    env = build([node("node1"), node("node2")], pods, nominated=nominated, rng=FixedRng(0))
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node2", ["p2"], 0)]


def test_nominated_pods_of_lower_priority_are_ignored() -> None:
    pods = [_p("p1", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)]
    nominated = {"node1": [pod("nom", priority=LOW, req=MEDIUM, nominated="node1")]}
    env = build([node("node1"), node("node2")], pods, nominated=nominated)
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node1", ["p1"], 0), ("node2", ["p2"], 0)]


def test_nominated_pod_makes_more_victims_needed() -> None:
    pods = [_p("p1.1", "node1", LOW, SMALL), _p("p1.2", "node1", MID, MEDIUM)]
    env = build([node("node1")], pods)
    # 200 (p1.2, reprieved first) + 300 fits; p1.1 no longer does.
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node1", ["p1.1"], 0)]
    nominated = {"node1": [pod("nom", priority=HIGH, req=MEDIUM, nominated="node1")]}
    env = build([node("node1")], pods, nominated=nominated)
    # The equal-priority nominated pod holds 200m: both pods must go.
    assert dry_run(env, pod("p", priority=HIGH, req=LARGE)) == [("node1", ["p1.1", "p1.2"], 0)]


# ---- the live table is restored exactly -----------------------------------------------------


def _busy_cluster() -> list[Pod]:
    port = ContainerPort(container_port=80, host_port=8080)
    hosted = dataclasses.replace(
        pod("hosted", "node1", LOW), containers=(Container("c", requests=dict(SMALL), ports=(port,)),)
    )
    return [
        hosted,
        _p("a", "node1", MID, MEDIUM, labels={"app": "foo"}),
        _p("b", "node1", LOW, SMALL, labels={"foo": ""}, affinity=anti_affinity_exists("foo", "hostname")),
        _p("c", "node2", HIGH, MEDIUM),
        _p("d", "node2", LOW, MEDIUM),
    ]


@pytest.mark.parametrize("budget", [BEST_EFFORT, None])
def test_table_is_restored_exactly_after_post_filter(budget: Any) -> None:
    env = build(
        [topo_node("node1/z1"), topo_node("node2/z1")], _busy_cluster(), pdbs=[PDBFake(FOO, 1)], policy=budget
    )
    before = env.snapshot()
    generation = env.table.generation
    preemptor = pod("p", priority=VERY_HIGH, req={"cpu": 450, "memory": 100}, labels={"foo": ""})
    result, status = post_filter(env, preemptor)
    assert status.is_success, status
    assert result is not None
    assert result.victims
    after = env.snapshot()
    for key in ("requested", "non_zero", "pod_count"):
        assert np.array_equal(before[key], after[key]), key
    assert before["pods"] == after["pods"]  # same pods, same order
    assert before["host_ports"] == after["host_ports"]
    assert env.table.generation > generation  # caches keyed by generation are invalidated


def test_table_is_restored_when_an_extension_fails() -> None:
    env = build(
        [node("node1", LARGE, labels={"error": "true"})],
        [_p("p1", "node1", LOW)],
        extra_pre_filters=("test-plugin",),
    )
    before = env.snapshot()
    state = CycleState()
    env.framework.run_pre_filter(state, pod("p", priority=HIGH))
    found = select_victims_on_node(
        env.framework,
        state.clone(),
        pod("p", priority=HIGH),
        0,
        [],
        lambda v: True,
        NOW,
        env.framework.adjusting_filter(state.clone()),
    )
    assert found.status.code == Code.ERROR
    after = env.snapshot()
    assert np.array_equal(before["requested"], after["requested"])
    assert before["pods"] == after["pods"]


def test_select_victims_reports_no_victims_and_filter_failures() -> None:
    env = build([node("node1")], [_p("big", "node1", HIGH, LARGE), _p("p1", "node1", LOW, SMALL)])
    preemptor = pod("p", priority=HIGH, req=LARGE)
    state = CycleState()
    env.framework.run_pre_filter(state, preemptor)
    eligible = lambda v: v.priority < HIGH  # noqa: E731
    none = select_victims_on_node(
        env.framework,
        state.clone(),
        preemptor,
        0,
        [],
        lambda v: False,
        NOW,
        env.framework.adjusting_filter(state.clone()),
    )
    assert none.status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert none.status.message == "No preemption victims found for incoming pod"
    too_big = select_victims_on_node(
        env.framework,
        state.clone(),
        preemptor,
        0,
        [],
        eligible,
        NOW,
        env.framework.adjusting_filter(state.clone()),
    )
    assert too_big.status.code == Code.UNSCHEDULABLE
    assert too_big.status.reasons == ("Insufficient cpu", "Insufficient memory")
    assert too_big.victims == []


# ---- which nodes are searched ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "absent", "want"),
    [
        (
            {"node3": Code.UNSCHEDULABLE, "node1": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE},
            None,
            "node1",
        ),
        ({"node3": Code.UNSCHEDULABLE, "node2": Code.UNSCHEDULABLE}, None, "node2"),
        ({"node1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}, Code.UNSCHEDULABLE, "node2"),
        ({"node1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node2": Code.PENDING}, Code.UNSCHEDULABLE, "node3"),
    ],
)
def test_nodes_are_searched_in_node_tree_order(
    explicit: dict[str, Code], absent: Code | None, want: str
) -> None:
    """Only Unschedulable nodes (explicit or absent) are dry-run, in table order from the offset."""
    names = ["node1", "node2", "node3"]
    env = build(
        [node(n) for n in names],
        [_p(f"p{i}", n, MID, LARGE) for i, n in enumerate(names)],
        args={"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 1},
        rng=FixedRng(0),
        policy=BEST_EFFORT,
    )
    diagnosis = statuses(explicit, absent or Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE), diagnosis)
    assert status.is_success
    assert result is not None
    assert result.nominated_node_name == want
