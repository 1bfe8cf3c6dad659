"""SelectVictimsOnNode computed by NodeResourcesFit's integers (Framework.adjusting_filter: the
victims are never taken off the table) gives the same victims, statuses, violation counts and
evaluation counts as removing them and re-filtering the row after each step, the loop upstream
runs; and the row comes back unchanged."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import SUCCESS
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL, NodeTable
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import NodeVictims, select_victims_on_node
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.queue.nominator import PodNominator
from tests.scheduler.plugins._build_defaultpreemption import PDBFake, match_labels

GPU = "example.com/gpu"


class CountingMetrics:
    def __init__(self) -> None:
        self.evaluations = 0

    def evaluated(self, profile: str, plugin: str, point: str, count: int) -> None:
        if point == "Filter" and plugin == "NodeResourcesFit":
            self.evaluations += count

    def executed(self, plugin: str, point: str, code: str, seconds: float) -> None:
        return None


def _pod(name: str, cpu: int, memory: int, gpu: int, priority: int, app: str) -> Pod:
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests[GPU] = gpu
    return Pod(
        name,
        uid=name,
        priority=priority,
        start_time=float(priority),
        labels={"app": app},
        containers=(Container("c", requests=requests),),
    )


pods = st.builds(
    _pod,
    name=st.just(""),
    cpu=st.sampled_from([0, 100, 500, 1000, 1500]),
    memory=st.sampled_from([0, 1 << 28, 1 << 29]),
    gpu=st.sampled_from([0, 0, 1, 2]),
    priority=st.integers(0, 12),
    app=st.sampled_from(["a", "b"]),
)


@contextmanager
def _refiltering(fw: Framework) -> Iterator[None]:
    """The framework without the integer path: victims are removed from the table and every
    reprieve step filters the row again."""
    fw.adjusting_filter = lambda *_: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        del fw.adjusting_filter


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    placed=st.lists(pods, min_size=1, max_size=7),
    nominated=st.lists(pods, max_size=3),
    pod=pods,
    max_pods=st.integers(2, 9),
    budget=st.none() | st.integers(0, 2),
)
def test_resource_reprieve_matches_refiltering(
    placed: list[Pod], nominated: list[Pod], pod: Pod, max_pods: int, budget: int | None
) -> None:
    table = NodeTable()
    table.set_node(
        Node(
            "n0",
            labels={HOSTNAME_LABEL: "n0"},
            allocatable={"cpu": 4000, "memory": 1 << 31, "pods": max_pods, GPU: 2},
        )
    )
    for j, other in enumerate(placed):
        table.add_pod(dataclasses.replace(other, name=f"placed-{j}", uid=f"placed-{j}"), 0)
    nominator = PodNominator()
    for j, other in enumerate(nominated):
        nominator.add_nominated_pod(dataclasses.replace(other, name=f"nom-{j}", uid=f"nom-{j}"), "n0")
    pod = dataclasses.replace(pod, name="pod", uid="pod", priority=pod.priority + 5)
    metrics = CountingMetrics()
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    fw = Framework(profile, in_tree_registry(), Handle(table, nominator=nominator))
    fw.plugin_metrics = metrics
    state = CycleState()
    _, status, _ = fw.run_pre_filter(state, pod)
    if not status.is_success:
        return
    pdbs = [] if budget is None else [PDBFake(match_labels(app="a"), budget)]
    before = (dict(table.pods[0]), table.requested[:, 0].copy(), int(table.pod_count[0]))

    def victims() -> tuple[NodeVictims, int]:
        metrics.evaluations = 0
        skipped = set(state.skip_filter)
        found = select_victims_on_node(
            fw, state, pod, 0, pdbs, lambda p: p.priority < pod.priority, 20.0, fw.adjusting_filter(state)
        )
        assert state.skip_filter == skipped  # the caller's state is left as it was (no clone needed)
        assert dict(table.pods[0]) == before[0]
        assert (table.requested[:, 0] == before[1]).all()
        assert int(table.pod_count[0]) == before[2]
        return found, metrics.evaluations

    fast, fast_evaluations = victims()
    with _refiltering(fw):
        slow, slow_evaluations = victims()
    assert [v.name for v in fast.victims] == [v.name for v in slow.victims]
    assert fast.num_pdb_violations == slow.num_pdb_violations
    assert fast.status == slow.status
    assert fast_evaluations == slow_evaluations


def _full_node_and_a_preemptor() -> tuple[NodeTable, Framework, Pod, CycleState]:
    """One 2-cpu node full with two 1-cpu low-priority pods, and a 1-cpu preemptor's cycle state."""
    table = NodeTable()
    table.set_node(
        Node("n0", labels={HOSTNAME_LABEL: "n0"}, allocatable={"cpu": 2000, "memory": 1 << 30, "pods": 9})
    )
    for j in range(2):
        table.add_pod(_pod(f"low-{j}", 1000, 0, 0, 1, "a"), 0)
    fw = Framework(
        resolve_profile(ProfileConfig(), implemented_plugin_names()), in_tree_registry(), Handle(table)
    )
    pod = _pod("high", 1000, 0, 0, 10, "a")
    state = CycleState()
    fw.run_pre_filter(state, pod)
    return table, fw, pod, state


def test_shortcut_is_taken_for_a_plain_pod() -> None:
    """Guards the property above against comparing the slow path with itself."""
    table, fw, pod, state = _full_node_and_a_preemptor()
    fit = fw.adjusting_filter(state)
    assert fit is fw.plugins["NodeResourcesFit"]
    victims = list(table.pods[0].values())
    assert not fw.filter_row_with_nominated_pods(state, pod, 0, fit).is_success
    assert fw.filter_row_with_nominated_pods(state, pod, 0, fit, victims[:1]) == SUCCESS
    state.skip_filter |= fw.node_only_filters
    assert fw.fits_adding_in_turn(state, pod, 0, fit, victims, victims) == [True, False]


def test_the_room_of_a_dry_run_follows_table_changes() -> None:
    """The free room kept between one dry run's questions about a node is not reused once the
    table changes, even when asked with the same list of pods taken off."""
    table, fw, pod, state = _full_node_and_a_preemptor()
    fit = fw.adjusting_filter(state)
    assert fit is not None
    removed = list(table.pods[0].values())[:1]
    assert fw.filter_row_with_nominated_pods(state, pod, 0, fit, removed) == SUCCESS
    table.add_pod(_pod("other", 500, 0, 0, 20, "b"), 0)
    assert not fw.filter_row_with_nominated_pods(state, pod, 0, fit, removed).is_success
