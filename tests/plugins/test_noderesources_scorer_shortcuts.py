"""The scorers' shortcut for rows that count every resource gives the general path's scores, and
both give what upstream's per-node Go loops give (Python floats are IEEE doubles, as Go's)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.scheduler.plugins.noderesources.balanced_allocation import (
    balanced_general,
    balanced_resource_scorer,
)
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    least_allocated_general,
    least_allocated_scorer,
)

MAX_NODE_SCORE = 100


def go_balanced(requested: list[int], allocatable: list[int]) -> int:
    fractions = []
    total = 0.0
    for r, a in zip(requested, allocatable, strict=True):
        if a == 0:
            continue
        fraction = min(r / a, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def go_least(requested: list[int], allocatable: list[int], weights: list[int]) -> int:
    node_score = weight_sum = 0
    for r, a, w in zip(requested, allocatable, weights, strict=True):
        if a == 0:
            continue
        node_score += (0 if r > a else (a - r) * MAX_NODE_SCORE // a) * w
        weight_sum += w
    return 0 if weight_sum == 0 else node_score // weight_sum


quantity = st.integers(min_value=1, max_value=10**12)


@st.composite
def matrices(draw: st.DrawFn, resources: int, present_only: bool) -> tuple[np.ndarray, np.ndarray]:
    rows = draw(st.integers(min_value=1, max_value=12))
    allocatable = np.array(
        [
            [
                draw(quantity if present_only else st.sampled_from([0, 1, 7, 4000, 10**11]))
                for _ in range(rows)
            ]
            for _ in range(resources)
        ],
        dtype=np.int64,
    )
    requested = np.array(
        [[draw(st.integers(min_value=0, max_value=2 * int(a) + 1)) for a in line] for line in allocatable],
        dtype=np.int64,
    )
    return requested, allocatable


def columns(matrix: np.ndarray) -> list[list[int]]:
    rows: list[list[int]] = matrix.T.tolist()
    return rows


@given(matrices(2, present_only=True))
def test_balanced_shortcut_matches_the_general_path_and_go(case: tuple[np.ndarray, np.ndarray]) -> None:
    requested, allocatable = case
    shortcut = balanced_resource_scorer(requested, allocatable).tolist()
    assert shortcut == balanced_general(requested, allocatable, allocatable != 0).tolist()
    assert shortcut == [
        go_balanced(r, a) for r, a in zip(columns(requested), columns(allocatable), strict=True)
    ]


@given(st.integers(min_value=1, max_value=4).flatmap(lambda n: matrices(n, present_only=False)))
def test_balanced_general_path_matches_go(case: tuple[np.ndarray, np.ndarray]) -> None:
    requested, allocatable = case
    got = balanced_resource_scorer(requested, allocatable).tolist()
    assert got == [go_balanced(r, a) for r, a in zip(columns(requested), columns(allocatable), strict=True)]


@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(
            matrices(n, present_only=True), st.lists(st.integers(1, 100), min_size=n, max_size=n)
        )
    )
)
def test_least_allocated_shortcut_matches_the_general_path_and_go(
    case: tuple[tuple[np.ndarray, np.ndarray], list[int]],
) -> None:
    (requested, allocatable), weights = case
    resources = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    shortcut = least_allocated_scorer(resources)(requested, allocatable).tolist()
    general = least_allocated_general(requested, allocatable, np.array(weights, dtype=np.int64)).tolist()
    assert shortcut == general
    assert shortcut == [
        go_least(r, a, weights) for r, a in zip(columns(requested), columns(allocatable), strict=True)
    ]


@given(
    st.integers(min_value=1, max_value=4).flatmap(
        lambda n: st.tuples(
            matrices(n, present_only=False), st.lists(st.integers(1, 100), min_size=n, max_size=n)
        )
    )
)
def test_least_allocated_with_missing_resources_matches_go(
    case: tuple[tuple[np.ndarray, np.ndarray], list[int]],
) -> None:
    (requested, allocatable), weights = case
    resources = [ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)]
    got = least_allocated_scorer(resources)(requested, allocatable).tolist()
    assert got == [
        go_least(r, a, weights) for r, a in zip(columns(requested), columns(allocatable), strict=True)
    ]
