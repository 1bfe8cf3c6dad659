"""The nominated-pods index of RunFilterPluginsWithNominatedPods against a per-node reference.

The framework re-filters only rows whose node holds a nominated pod of priority >= the pod's,
and without active PreFilter extensions filters all of them in one batch. The reference below
is upstream's per-node addGENominatedPods loop, asked about every node.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import Status
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    ContainerPort,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Taint,
)
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL, NodeTable, Rows
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.queue.nominator import PodNominator


def _pod(name: str, cpu: int, priority: int, port: int | None, anti: bool) -> Pod:
    ports = (ContainerPort(container_port=80, host_port=port),) if port else ()
    affinity = None
    if anti:
        term = PodAffinityTerm(HOSTNAME_LABEL, LabelSelector(match_labels=(("app", "web"),)))
        affinity = Affinity(pod_anti_affinity=PodAffinity(required=(term,)))
    return Pod(
        name,
        uid=name,
        priority=priority,
        labels={"app": "web"},
        affinity=affinity,
        containers=(Container("c", requests={"cpu": cpu}, ports=ports),),
    )


pods = st.builds(
    _pod,
    name=st.just(""),
    cpu=st.sampled_from([0, 200, 500, 900]),
    priority=st.integers(-2, 2),
    port=st.sampled_from([None, None, 8080]),
    anti=st.booleans(),
)


def _reference(
    fw: Framework, nominator: PodNominator, state: CycleState, pod: Pod, rows: Rows
) -> list[Status]:
    without = fw.run_filters(state, pod, rows)
    out = []
    for i, row in enumerate(rows.tolist()):
        nominated = [
            p
            for p in nominator.nominated_pods_for_node(fw.table.nodes[row].name)
            if p.priority >= pod.priority
            and p.uid != pod.uid
            and p.key != pod.key
            and p.key not in fw.table.pods[row]
        ]
        status = fw.nominated.filter_with_added_pods(state, pod, row, nominated) if nominated else None
        out.append(status if status is not None and not status.is_success else without.status_at(i))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    placed=st.lists(st.tuples(pods, st.integers(0, 5)), max_size=8),
    nominated=st.lists(st.tuples(pods, st.integers(0, 5)), max_size=8),
    pod=pods,
    self_nominated=st.booleans(),
    subset=st.lists(st.integers(0, 5), unique=True, min_size=1),
    tainted=st.sets(st.integers(0, 5), max_size=2),
    cordoned=st.sets(st.integers(0, 5), max_size=2),
)
def test_indexed_pass_matches_per_node_reference(
    nodes: int,
    placed: list[tuple[Pod, int]],
    nominated: list[tuple[Pod, int]],
    pod: Pod,
    self_nominated: bool,
    subset: list[int],
    tainted: set[int],
    cordoned: set[int],
) -> None:
    table = NodeTable()
    for i in range(nodes):
        name = f"n{i}"
        table.set_node(
            Node(
                name,
                labels={HOSTNAME_LABEL: name},
                allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 3},
                # node-only filters (their one-row paths) reject some nodes
                taints=(Taint("dedicated", "x", "NoSchedule"),) if i in tainted else (),
                unschedulable=i in cordoned,
            )
        )
    for j, (other, row) in enumerate(placed):
        table.add_pod(dataclasses.replace(other, name=f"placed-{j}", uid=f"placed-{j}"), row % nodes)
    nominator = PodNominator()
    for j, (other, row) in enumerate(nominated):
        nominator.add_nominated_pod(
            dataclasses.replace(other, name=f"nom-{j}", uid=f"nom-{j}"), f"n{row % nodes}"
        )
    pod = dataclasses.replace(pod, name="pod", uid="pod")
    if self_nominated:
        nominator.add_nominated_pod(pod, "n0")
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    fw = Framework(profile, in_tree_registry(), Handle(table, nominator=nominator))
    state = CycleState()
    _, status, _ = fw.run_pre_filter(state, pod)
    if not status.is_success:
        return
    before = [dict(p) for p in table.pods[: len(table)]]
    requested = table.requested.copy()
    for rows in (
        np.arange(len(table), dtype=np.intp),
        np.asarray([r for r in subset if r < nodes] or [0], dtype=np.intp),
    ):
        got = fw.run_filters_with_nominated_pods(state, pod, rows)
        want = _reference(fw, nominator, state, pod, rows)
        assert [got.status_at(i) for i in range(len(rows))] == want
        for i, row in enumerate(rows.tolist()):  # one row at a time, as preemption asks
            single = fw.run_filters_with_nominated_pods(state, pod, np.asarray([row], dtype=np.intp))
            assert single.status_at(0) == want[i]
            # The array-free path of preemption's dry runs decides the same.
            assert fw.filter_row_with_nominated_pods(state, pod, row) == want[i]
            assert fw.filter_row(state, pod, row) == fw.run_filters(state, pod, np.asarray([row])).status_at(
                0
            )
    # Every trial placement was undone.
    assert [dict(p) for p in table.pods[: len(table)]] == before
    assert (table.requested == requested).all()


def test_priorities_follow_nominations() -> None:
    nominator = PodNominator()
    low, high = _pod("low", 100, 1, None, False), _pod("high", 100, 7, None, False)
    empty = nominator.nominated_priorities()
    assert dict(empty) == {}
    nominator.add_nominated_pod(low, "n1")
    nominator.add_nominated_pod(high, "n1")
    first = nominator.nominated_priorities()
    assert dict(first) == {"n1": 7}
    assert nominator.nominated_priorities() is first  # unchanged: the same object (cache key)
    nominator.delete_nominated_pod_if_exists(high)
    assert dict(nominator.nominated_priorities()) == {"n1": 1}
    nominator.add_nominated_pod(low, "n2")  # moves
    assert dict(nominator.nominated_priorities()) == {"n2": 1}
    nominator.delete_nominated_pod_if_exists(low)
    assert dict(nominator.nominated_priorities()) == {}


def test_row_cache_follows_node_changes() -> None:
    nominator = PodNominator()
    table = NodeTable()
    for name in ("a", "b", "c"):
        table.set_node(Node(name, labels={HOSTNAME_LABEL: name}, allocatable={"cpu": 1000, "pods": 5}))
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    fw = Framework(profile, in_tree_registry(), Handle(table, nominator=nominator))
    nominator.add_nominated_pod(_pod("big", 900, 5, None, False), "c")
    pod = _pod("p", 500, 0, None, False)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    rows = np.arange(len(table), dtype=np.intp)
    assert fw.run_filters_with_nominated_pods(state, pod, rows).passed.tolist() == [True, True, False]
    table.remove_node("a")  # "c" moves to row 0
    rows = np.arange(len(table), dtype=np.intp)
    assert [table.nodes[r].name for r in rows] == ["c", "b"]
    assert fw.run_filters_with_nominated_pods(state, pod, rows).passed.tolist() == [False, True]


def test_plain_pod_pass_places_nothing_on_the_table() -> None:
    """With NodeResourcesFit the only filter reading the node's pods, the pass with nominated
    pods is answered by integers (Framework.adjusting_filter) and agrees with placing them."""
    table = NodeTable()
    for i in range(3):
        table.set_node(Node(f"n{i}", labels={HOSTNAME_LABEL: f"n{i}"}, allocatable={"cpu": 1000, "pods": 3}))
    nominator = PodNominator()
    nominator.add_nominated_pod(_pod("nom-0", 600, 5, None, False), "n0")
    nominator.add_nominated_pod(_pod("nom-1", 100, 5, None, False), "n1")
    nominator.add_nominated_pod(_pod("nom-2", 900, -1, None, False), "n2")  # lower: not counted
    fw = Framework(
        resolve_profile(ProfileConfig(), implemented_plugin_names()),
        in_tree_registry(),
        Handle(table, nominator=nominator),
    )
    pod = _pod("pod", 500, 1, None, False)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    assert fw.adjusting_filter(state) is fw.plugins["NodeResourcesFit"]
    rows = np.arange(3, dtype=np.intp)
    want = _reference(fw, nominator, state, pod, rows)
    placed: list[str] = []
    real_add = table.add_pod

    def counting_add(added: Pod, row: int) -> None:
        placed.append(added.key)
        real_add(added, row)

    table.add_pod = counting_add  # type: ignore[method-assign,assignment]
    fw.plugin_metrics = by_integers = CountingMetrics()
    got = fw.run_filters_with_nominated_pods(state, pod, rows)
    assert [got.status_at(i) for i in range(3)] == want
    assert [s.is_success for s in want] == [False, True, True]
    assert placed == []
    # Plugins evaluated as often as when the nominated pods are placed and the rows re-filtered.
    fw.plugin_metrics = by_placing = CountingMetrics()
    fw.adjusting_filter = lambda *_: None  # type: ignore[method-assign]
    fw.run_filters_with_nominated_pods(state, pod, rows)
    assert placed
    assert by_integers.counts == by_placing.counts


class CountingMetrics:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def evaluated(self, profile: str, plugin: str, point: str, count: int) -> None:
        if point == "Filter":
            self.counts[plugin] = self.counts.get(plugin, 0) + count

    def executed(self, plugin: str, point: str, code: str, seconds: float) -> None:
        return None


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "delete"]), st.integers(0, 5), st.integers(-3, 3), st.integers(0, 2)
        ),
        max_size=30,
    )
)
def test_priorities_kept_incrementally_match_a_rescan(steps: list[tuple[str, int, int, int]]) -> None:
    nominator = PodNominator()
    for action, which, priority, node in steps:
        pod = _pod(f"p{which}", 100, priority, None, False)
        if action == "add":
            nominator.add_nominated_pod(pod, f"n{node}")
        else:
            nominator.delete_nominated_pod_if_exists(pod)
        rescan = {
            name: max(p.priority for p in nominator.nominated_pods_for_node(name))
            for name in nominator.nominated_node_names()
        }
        assert dict(nominator.nominated_priorities()) == rescan


def test_nodes_failing_alike_share_one_status() -> None:
    """The pass with nominated pods adds one status per distinct failure, not one per node:
    the diagnosis and the FitError message group nodes by status."""
    table = NodeTable()
    for i in range(50):
        table.set_node(Node(f"n{i}", labels={HOSTNAME_LABEL: f"n{i}"}, allocatable={"cpu": 1000, "pods": 3}))
    nominator = PodNominator()
    for i in range(40):
        nominator.add_nominated_pod(_pod(f"nom-{i}", 600, 5, None, False), f"n{i}")
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    fw = Framework(profile, in_tree_registry(), Handle(table, nominator=nominator))
    pod = _pod("p", 500, 0, None, False)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    outcome = fw.run_filters_with_nominated_pods(state, pod, np.arange(len(table), dtype=np.intp))
    assert outcome.passed.tolist() == [False] * 40 + [True] * 10
    assert len(outcome.statuses) == 1
    assert outcome.status_at(0).reasons == ("Insufficient cpu",)
    assert outcome.status_at(0).plugin == "NodeResourcesFit"
