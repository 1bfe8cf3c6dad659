"""Candidate ranking: ported from upstream TestSelectBestCandidate, then each tie-breaker of
pickOneNodeForPreemption on its own."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import (
    Candidate,
    pick_one_node_for_preemption,
    select_candidate,
)

from ._build_defaultpreemption import (
    BEST_EFFORT,
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    FixedRng,
    build,
    candidate,
    node,
    pod,
    post_filter,
)

E0, E1, E2, E3, E4, E5, E6 = 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0


def _p(name: str, node_name: str, priority: int, req: dict[str, int], start: float = E0) -> Pod:
    return pod(name, node_name, priority, req, start=start)


SELECT_BEST = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        pod("p", priority=HIGH, req=LARGE),
        [_p("p1", "node1", MID, LARGE), _p("p2", "node2", MID, LARGE)],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM),
            _p("p1.2", "node1", MID, LARGE),
            _p("p2.1", "node2", MID, MEDIUM),
            _p("p2.2", "node2", LOW, MEDIUM),
            _p("p3.1", "node3", LOW, MEDIUM),
            _p("p3.2", "node3", LOW, MEDIUM),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM),
            _p("p1.2", "node1", MID, LARGE),
            _p("p2.1", "node2", MID, LARGE),
            _p("p2.2", "node2", LOW, MEDIUM),
            _p("p3.1", "node3", MID, MEDIUM),
            _p("p3.2", "node3", MID, MEDIUM),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, SMALL),
            _p("p1.2", "node1", NEG, SMALL),
            _p("p1.3", "node1", MID, SMALL),
            _p("p1.4", "node1", NEG, SMALL),
            _p("p2.1", "node2", MID, LARGE),
            _p("p2.2", "node2", NEG, MEDIUM),
            _p("p3.1", "node3", MID, MEDIUM),
            _p("p3.2", "node3", NEG, SMALL),
            _p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, SMALL),
            _p("p1.2", "node1", NEG, SMALL),
            _p("p1.3", "node1", NEG, SMALL),
            _p("p2.1", "node2", MID, LARGE),
            _p("p2.2", "node2", NEG, MEDIUM),
            _p("p3.1", "node3", MID, MEDIUM),
            _p("p3.2", "node3", NEG, SMALL),
            _p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        pod("p", priority=VERY_HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, SMALL),
            _p("p1.2", "node1", LOW, SMALL),
            _p("p1.3", "node1", LOW, SMALL),
            _p("p2.1", "node2", HIGH, LARGE),
            _p("p3.1", "node3", MID, MEDIUM),
            _p("p3.2", "node3", LOW, SMALL),
            _p("p3.3", "node3", LOW, SMALL),
            _p("p3.4", "node3", LOW, MEDIUM),
            _p("p4.1", "node4", MID, MEDIUM),
            _p("p4.2", "node4", MID, SMALL),
            _p("p4.3", "node4", MID, SMALL),
            _p("p4.4", "node4", NEG, SMALL),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, E2),
            _p("p1.2", "node1", MID, MEDIUM, E2),
            _p("p2.1", "node2", MID, MEDIUM, E3),
            _p("p2.2", "node2", MID, MEDIUM, E3),
            _p("p3.1", "node3", MID, MEDIUM, E1),
            _p("p3.2", "node3", MID, MEDIUM, E1),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", MID, MEDIUM, E4),
            _p("p1.2", "node1", MID, MEDIUM, E2),
            _p("p2.1", "node2", MID, MEDIUM, E5),
            _p("p2.2", "node2", MID, MEDIUM, E1),
            _p("p3.1", "node3", MID, MEDIUM, E3),
            _p("p3.2", "node3", MID, MEDIUM, E6),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", priority=HIGH, req=VERY_LARGE),
        [
            _p("p1.1", "node1", LOW, MEDIUM, E4),
            _p("p1.2", "node1", MID, MEDIUM, E2),
            _p("p2.1", "node2", MID, MEDIUM, E6),
            _p("p2.2", "node2", LOW, MEDIUM, E1),
            _p("p3.1", "node3", LOW, MEDIUM, E3),
            _p("p3.2", "node3", MID, MEDIUM, E5),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize(
    ("name", "nodes", "preemptor", "pods", "expected"), SELECT_BEST, ids=[c[0] for c in SELECT_BEST]
)
def test_select_best_candidate(
    name: str, nodes: list[str], preemptor: Pod, pods: list[Pod], expected: set[str], offset: int
) -> None:
    env = build([node(n) for n in nodes], pods, rng=FixedRng(offset), policy=BEST_EFFORT)
    result, status = post_filter(env, preemptor)
    assert status.is_success, status
    assert result is not None
    assert result.nominated_node_name in expected


# ---- each criterion alone ------------------------------------------------------------------

T = 100.0  # "now" for pods without a start time


def _v(name: str, priority: int, start: float | None = 10.0) -> Pod:
    return pod(name, priority=priority, start=start)


@pytest.mark.parametrize(
    ("name", "candidates", "want"),
    [
        (
            "fewest PDB violations wins over everything else",
            [
                candidate("a", [_v("a1", LOW)], 1),
                candidate("b", [_v("b1", MID), _v("b2", MID)], 0),
            ],
            "b",
        ),
        (
            "then the lowest highest-victim priority",
            [
                candidate("a", [_v("a1", MID)]),
                candidate("b", [_v("b1", LOW), _v("b2", LOW), _v("b3", LOW)]),
            ],
            "b",
        ),
        (
            "then the smallest sum of priorities",
            [
                candidate("a", [_v("a1", MID), _v("a2", MID)]),
                candidate("b", [_v("b1", MID), _v("b2", LOW)]),
            ],
            "b",
        ),
        (
            "negative priorities: the MaxInt32+1 offset makes more victims cost more",
            [
                candidate("a", [_v("a1", NEG), _v("a2", NEG)]),
                candidate("b", [_v("b1", NEG)]),
            ],
            "b",
        ),
        (
            "then the fewest victims (sums made equal through the MaxInt32+1 offset)",
            [
                candidate("a", [_v("a1", 0), _v("a2", -(2**30)), _v("a3", -(2**30))]),
                candidate("b", [_v("b1", 0), _v("b2", 0)]),
            ],
            "b",
        ),
        (
            "then the latest start among the highest-priority victims",
            [
                candidate("a", [_v("a1", MID, 5.0), _v("a2", LOW, 50.0)]),
                candidate("b", [_v("b1", MID, 7.0), _v("b2", LOW, 1.0)]),
            ],
            "b",
        ),
        (
            "the earliest of the highest-priority victims counts",
            [
                candidate("a", [_v("a1", MID, 8.0), _v("a2", MID, 2.0)]),
                candidate("b", [_v("b1", MID, 3.0), _v("b2", MID, 4.0)]),
            ],
            "b",
        ),
        (
            "a victim without a start time counts as starting now",
            [
                candidate("a", [_v("a1", MID, 50.0)]),
                candidate("b", [_v("b1", MID, None)]),
            ],
            "b",
        ),
        (
            "full tie: the first candidate",
            [
                candidate("a", [_v("a1", MID)]),
                candidate("b", [_v("b1", MID)]),
                candidate("c", [_v("c1", MID)]),
            ],
            "a",
        ),
        (
            "a criterion narrows before the next one decides",
            [
                candidate("a", [_v("a1", HIGH)]),
                candidate("b", [_v("b1", MID), _v("b2", MID)]),
                candidate("c", [_v("c1", MID), _v("c2", LOW)]),
                candidate("d", [_v("d1", MID), _v("d2", LOW)], 1),
            ],
            "c",
        ),
    ],
)
def test_pick_one_node_for_preemption(name: str, candidates: list[Candidate], want: str) -> None:
    assert pick_one_node_for_preemption(candidates, T).name == want
    assert pick_one_node_for_preemption(list(reversed(candidates)), T).name == (
        want if name != "full tie: the first candidate" else "c"
    )


def test_select_candidate_single_and_empty() -> None:
    only = candidate("a", [_v("a1", HIGH)], 3)
    assert select_candidate([only], T) is only
    assert select_candidate([], T) is None


def test_victims_are_ordered_most_important_first() -> None:
    pods = [
        _p("low-new", "node1", LOW, SMALL, 9.0),
        _p("mid", "node1", MID, SMALL, 1.0),
        _p("low-old", "node1", LOW, SMALL, 2.0),
        _p("neg", "node1", NEG, SMALL, 0.0),
    ]
    env = build([node("node1", {"cpu": 400, "memory": 400})], pods, policy=BEST_EFFORT)
    result, status = post_filter(env, pod("p", priority=HIGH, req={"cpu": 400, "memory": 400}))
    assert status.is_success
    assert result is not None
    assert [v.name for v in result.victims] == ["mid", "low-old", "low-new", "neg"]
