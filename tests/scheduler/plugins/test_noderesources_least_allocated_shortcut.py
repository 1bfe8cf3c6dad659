"""LeastAllocated's shortcut for rows that count every resource gives the general path's scores,
and both give upstream's leastResourceScorer loop (written out below in Python ints)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    least_allocated_general,
    least_allocated_scorer,
)

MAX_NODE_SCORE = 100


def go_least(requested: list[int], allocatable: list[int], weights: list[int]) -> int:
    node_score = weight_sum = 0
    for r, a, w in zip(requested, allocatable, weights, strict=True):
        if a == 0:
            continue
        node_score += (0 if r > a else (a - r) * MAX_NODE_SCORE // a) * w
        weight_sum += w
    return 0 if weight_sum == 0 else node_score // weight_sum


@st.composite
def cases(draw: st.DrawFn, every_resource: bool) -> tuple[np.ndarray, np.ndarray, list[int]]:
    resources = draw(st.integers(min_value=1, max_value=4))
    rows = draw(st.integers(min_value=1, max_value=12))
    quantity = st.integers(1, 10**12) if every_resource else st.sampled_from([0, 1, 7, 4000, 10**11])
    allocatable = np.array([[draw(quantity) for _ in range(rows)] for _ in range(resources)], dtype=np.int64)
    requested = np.array(
        [[draw(st.integers(0, 2 * int(a) + 1)) for a in line] for line in allocatable], dtype=np.int64
    )
    weights = draw(st.lists(st.integers(1, 100), min_size=resources, max_size=resources))
    return requested, allocatable, weights


@pytest.mark.parametrize("every_resource", [True, False], ids=["shortcut", "general"])
@given(data=st.data())
def test_least_allocated_matches_the_general_path_and_go(every_resource: bool, data: st.DataObject) -> None:
    requested, allocatable, weights = data.draw(cases(every_resource))
    got = least_allocated_scorer([ResourceSpec(f"r{i}", w) for i, w in enumerate(weights)])(
        requested, allocatable
    ).tolist()
    assert got == least_allocated_general(requested, allocatable, np.array(weights, dtype=np.int64)).tolist()
    rows: list[tuple[list[int], list[int]]] = list(
        zip(requested.T.tolist(), allocatable.T.tolist(), strict=True)
    )
    assert got == [go_least(r, a, weights) for r, a in rows]
