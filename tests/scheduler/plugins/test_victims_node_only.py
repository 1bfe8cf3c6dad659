"""Victim selection asks node-only filters once per node, with the same victims as before."""

from __future__ import annotations

from typing import ClassVar

from policy_scheduler.scheduler.config import EXTENSION_POINTS, PluginRef, ResolvedProfile
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable, Rows
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import select_victims_on_node
from policy_scheduler.scheduler.plugins.registry import in_tree_registry


class CountingNodeFilter(FilterPlugin):
    name = "CountingNodeFilter"
    node_only = True
    calls: ClassVar[list[int]] = []

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        self.calls.append(len(rows))
        return FilterResult.all_pass(len(rows))


class CountingPodFilter(CountingNodeFilter):
    name = "CountingPodFilter"
    node_only = False
    calls: ClassVar[list[int]] = []


def _pod(name: str, cpu: int, priority: int, start: float = 0.0) -> Pod:
    return Pod(
        name,
        uid=name,
        priority=priority,
        start_time=start,
        containers=(Container("c", requests={"cpu": cpu}),),
    )


def _victims(node_only: bool) -> tuple[list[str], int, int]:
    CountingNodeFilter.node_only = node_only
    CountingNodeFilter.calls.clear()
    CountingPodFilter.calls.clear()
    table = NodeTable()
    table.set_node(Node("n", allocatable={"cpu": 4000, "memory": 1 << 30, "pods": 10}))
    for i, cpu in enumerate([1000, 1000, 1500, 500]):
        table.add_pod(_pod(f"low-{i}", cpu, priority=i, start=float(i)), 0)
    fit = in_tree_registry()["NodeResourcesFit"]
    registry = {"NodeResourcesFit": fit, CountingNodeFilter.name: CountingNodeFilter}
    registry[CountingPodFilter.name] = CountingPodFilter
    registry.update({k: in_tree_registry()[k] for k in ("PrioritySort", "DefaultBinder")})
    points: dict[str, tuple[PluginRef, ...]] = {point: () for point in EXTENSION_POINTS}
    points.update(
        queueSort=(PluginRef("PrioritySort"),),
        bind=(PluginRef("DefaultBinder"),),
        preFilter=(PluginRef("NodeResourcesFit"),),
        filter=(  # the counting filters first: run_filters stops at the first rejection
            PluginRef(CountingNodeFilter.name),
            PluginRef(CountingPodFilter.name),
            PluginRef("NodeResourcesFit"),
        ),
    )
    fw = Framework(ResolvedProfile("p", None, points, {}, 1.0, 10.0, None), registry, Handle(table))
    pod = _pod("high", 2500, priority=100)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    found = select_victims_on_node(
        fw, state.clone(), pod, 0, (), lambda p: p.priority < 100, 10.0, fw.adjusting_filter(state.clone())
    )
    assert found.status.is_success
    return [v.name for v in found.victims], len(CountingNodeFilter.calls), len(CountingPodFilter.calls)


def test_node_only_filter_is_not_asked_again_while_adding_victims_back() -> None:
    try:
        before = _victims(node_only=False)
        after = _victims(node_only=True)
    finally:
        CountingNodeFilter.node_only = True
    assert after[0] == before[0]  # same victims
    assert before[1] == before[2] == 5  # once with every victim removed, once per reprieve
    assert after[1] == 1
    assert after[2] == 5


def test_dry_run_leaves_skipped_plugins_indexes_as_a_fresh_scan_builds_them() -> None:
    from policy_scheduler.scheduler.config import ProfileConfig
    from policy_scheduler.scheduler.plugins.interpodaffinity.index import AffinityIndex
    from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
    from policy_scheduler.scheduler.profile_resolution import resolve_profile

    table = NodeTable()
    table.set_node(Node("n", labels={"kubernetes.io/hostname": "n"}, allocatable={"cpu": 4000, "pods": 10}))
    for i in range(4):
        low = _pod(f"low-{i}", 1000, priority=1, start=float(i))
        table.add_pod(
            Pod(low.name, uid=low.uid, labels={"app": f"a{i}"}, priority=1, containers=low.containers), 0
        )
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    fw = Framework(profile, in_tree_registry(), Handle(table))
    listeners = list(table.listeners)
    pod = _pod("high", 2500, priority=100)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    assert "InterPodAffinity" in state.skip_filter  # its index is muted during the dry run
    found = select_victims_on_node(
        fw, state.clone(), pod, 0, (), lambda p: p.priority < 100, 10.0, fw.adjusting_filter(state.clone())
    )
    assert found.victims
    assert table.listeners == listeners
    kept = AffinityIndex.of(table)
    fresh = AffinityIndex.__new__(AffinityIndex)
    AffinityIndex.__init__(fresh, table)
    table.listeners.remove(fresh.listener)
    assert kept.by_namespace == fresh.by_namespace
    assert kept.by_label == fresh.by_label
