"""Invariants of the eviction order and the victims, checked on generated pods against a direct
port of the kubelet's pairwise comparison (multiSorter over the cmp functions)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.pressure.observations import PodUsage
from policy_scheduler.scheduler.pressure.pods import SYSTEM_CRITICAL_PRIORITY, PodFacts
from policy_scheduler.scheduler.pressure.ranking import (
    Measured,
    PodColumns,
    criteria_of,
    evictions,
    measure,
    rank,
)
from policy_scheduler.scheduler.pressure.signals import (
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    DiskLayout,
    rank_function,
)

SIGNALS = [MEMORY_AVAILABLE, NODEFS_AVAILABLE, NODEFS_INODES_FREE, IMAGEFS_AVAILABLE, PID_AVAILABLE]
small = st.integers(min_value=0, max_value=50)
maybe = st.one_of(st.none(), small)


@st.composite
def pods(draw: st.DrawFn, max_pods: int = 12) -> tuple[list[PodFacts], list[PodUsage | None]]:
    count = draw(st.integers(min_value=0, max_value=max_pods))
    facts: list[PodFacts] = []
    usage: list[PodUsage | None] = []
    for i in range(count):
        priority = draw(st.sampled_from([-1, 0, 0, 1, 1000, SYSTEM_CRITICAL_PRIORITY]))
        facts.append(
            PodFacts(
                f"ns{draw(st.integers(0, 2))}",
                f"pod-{i}",
                priority=priority,
                memory_request=draw(small),
                ephemeral_storage_request=draw(small),
                mirror=draw(st.booleans()) and draw(st.booleans()),
            )
        )
        if draw(st.integers(0, 5)) == 0:
            usage.append(None)  # no stats at all
            continue
        usage.append(
            PodUsage(
                memory_working_set=draw(maybe),
                rootfs_bytes=draw(maybe),
                rootfs_inodes=draw(maybe),
                logs_bytes=draw(maybe),
                logs_inodes=draw(maybe),
                local_volume_bytes=draw(maybe),
                local_volume_inodes=draw(maybe),
                processes=draw(maybe),
            )
        )
    return facts, usage


def cmp_bool(a: bool, b: bool) -> int:
    """cmpBool: true before false."""
    return 0 if a == b else (-1 if a else 1)


def reference_order(cols: PodColumns, m: Measured, criteria: tuple[str, ...]) -> list[int]:
    """orderedBy(...).Sort with the comparison functions written out as in helpers.go."""

    def exceeds(i: int, j: int) -> int:
        if not (cols.found[i] and cols.found[j]):
            return cmp_bool(not cols.found[i], not cols.found[j])
        return cmp_bool(bool(m.usage[i] > m.exceeds_request[i]), bool(m.usage[j] > m.exceeds_request[j]))

    def priority(i: int, j: int) -> int:
        a, b = int(cols.priority[i]), int(cols.priority[j])
        return 0 if a == b else (1 if a > b else -1)

    def usage(i: int, j: int) -> int:
        if not (cols.found[i] and cols.found[j]):
            return cmp_bool(not cols.found[i], not cols.found[j])
        a, b = int(m.usage[i] - m.above_request[i]), int(m.usage[j] - m.above_request[j])
        return 0 if a == b else (1 if b > a else -1)  # p2.Cmp(p1): larger first

    functions: dict[str, Callable[[int, int], int]] = {
        "exceedsRequests": exceeds,
        "priority": priority,
        "usageAboveRequests": usage,
    }

    def compare(i: int, j: int) -> int:
        for criterion in criteria:
            result = functions[criterion](i, j)
            if result:
                return result
        return (cols.facts[i].key.__lt__(cols.facts[j].key) and -1) or 1

    return sorted(range(len(cols)), key=functools.cmp_to_key(compare))


@settings(max_examples=100, deadline=None)
@given(
    pods(),
    st.sampled_from(SIGNALS),
    st.sampled_from([DiskLayout(), DiskLayout(True), DiskLayout(True, True)]),
)
def test_order_matches_the_kubelets_pairwise_comparison(
    given_pods: tuple[list[PodFacts], list[PodUsage | None]], signal: str, layout: DiskLayout
) -> None:
    facts, usage = given_pods
    cols = PodColumns.build(facts, usage, [0] * len(facts))
    function = rank_function(signal, layout)
    m = measure(cols, function)
    got = rank(cols, m, criteria_of(function)).tolist()
    assert got == reference_order(cols, m, criteria_of(function))


@settings(max_examples=100, deadline=None)
@given(pods(), st.sampled_from(SIGNALS), st.randoms(use_true_random=False))
def test_order_is_the_same_whatever_the_input_order(
    given_pods: tuple[list[PodFacts], list[PodUsage | None]], signal: str, rnd: object
) -> None:
    facts, usage = given_pods
    function = rank_function(signal, DiskLayout())

    def keys(f: list[PodFacts], u: list[PodUsage | None]) -> list[str]:
        cols = PodColumns.build(f, u, [0] * len(f))
        return [cols.facts[int(i)].key for i in rank(cols, measure(cols, function), criteria_of(function))]

    permutation = list(range(len(facts)))
    rnd.shuffle(permutation)  # type: ignore[attr-defined]
    shuffled = keys([facts[i] for i in permutation], [usage[i] for i in permutation])
    assert shuffled == keys(facts, usage)
    assert len(set(shuffled)) == len(shuffled)  # a total order: every pod once


@settings(max_examples=100, deadline=None)
@given(pods(), st.sampled_from(SIGNALS), st.integers(min_value=-10, max_value=400))
def test_victims_free_what_is_needed_and_no_more_pods_than_that(
    given_pods: tuple[list[PodFacts], list[PodUsage | None]], signal: str, needed: int
) -> None:
    facts, usage = given_pods
    cols = PodColumns.build(facts, usage, [0] * len(facts))
    function = rank_function(signal, DiskLayout())
    m = measure(cols, function)
    order = rank(cols, m, criteria_of(function))
    ev = evictions(cols, m, order, np.asarray([needed], dtype=np.int64))
    evictable = [bool(cols.evictable[i]) for i in ev.order]
    victims = [i for i, v in enumerate(ev.victim.tolist()) if v]
    assert all(evictable[i] for i in victims)  # never a static, mirror or critical pod
    # the victims are the first evictable pods in the order
    assert victims == [i for i, e in enumerate(evictable) if e][: len(victims)]
    freed = int(ev.frees[victims].sum()) if victims else 0
    everything = int(ev.frees[[i for i, e in enumerate(evictable) if e]].sum()) if any(evictable) else 0
    if needed <= 0:
        assert victims == []
    elif everything >= needed:
        assert freed >= needed  # back above threshold + minimum reclaim
        assert freed - int(ev.frees[victims[-1]]) < needed  # and not one pod more
    else:
        assert len(victims) == sum(evictable)  # as much as it can


@settings(max_examples=50, deadline=None)
@given(st.lists(pods(max_pods=5), min_size=1, max_size=4), st.sampled_from(SIGNALS))
def test_ranking_many_nodes_at_once_equals_ranking_each_alone(
    per_node: list[tuple[list[PodFacts], list[PodUsage | None]]], signal: str
) -> None:
    function = rank_function(signal, DiskLayout())
    facts: list[PodFacts] = []
    usage: list[PodUsage | None] = []
    node: list[int] = []
    alone: list[list[str]] = []
    for index, (f, u) in enumerate(per_node):
        f = [PodFacts(p.namespace, f"{p.name}-n{index}", priority=p.priority, memory_request=p.memory_request,
                      ephemeral_storage_request=p.ephemeral_storage_request, mirror=p.mirror) for p in f]  # fmt: skip
        facts += f
        usage += u
        node += [index] * len(f)
        cols = PodColumns.build(f, u, [0] * len(f))
        alone.append(
            [cols.facts[int(i)].key for i in rank(cols, measure(cols, function), criteria_of(function))]
        )
    cols = PodColumns.build(facts, usage, node)
    together = rank(cols, measure(cols, function), criteria_of(function))
    by_node: list[list[str]] = [[] for _ in per_node]
    for i in together.tolist():
        by_node[int(cols.node[i])].append(cols.facts[i].key)
    assert by_node == alone
