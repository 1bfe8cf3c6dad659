"""Every plugin's one-row filter (preemption's dry runs) decides as its batch filter on that row,
and Framework.filter_row attributes failures as run_filters does."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Container, Node, Pod, Taint, Toleration
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL, NodeTable, Rows
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile

NODES = (
    Node("plain", allocatable={"cpu": 2000, "memory": 1 << 30, "pods": 2}),
    Node("tainted", taints=(Taint("dedicated", "gpu", "NoSchedule"),), allocatable={"cpu": 4000, "pods": 9}),
    Node("cordoned", unschedulable=True, allocatable={"cpu": 4000, "memory": 1 << 30, "pods": 9}),
    Node("full", allocatable={"cpu": 500, "memory": 1 << 20, "pods": 1}),
)


def _pod(name: str, *, cpu: int = 100, node_name: str = "", tolerations: tuple[Toleration, ...] = ()) -> Pod:
    return Pod(
        name,
        uid=name,
        node_name=node_name,
        tolerations=tolerations,
        containers=(Container("c", requests={"cpu": cpu, "memory": 1 << 21}),),
    )


PODS = (
    _pod("plain"),
    _pod("big", cpu=3000),
    _pod("pinned", node_name="tainted"),
    _pod("pinned-elsewhere", node_name="nowhere"),
    _pod("tolerant", tolerations=(Toleration(operator="Exists"),)),
    _pod(
        "cordon-tolerant",
        tolerations=(Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),),
    ),
)


def _framework() -> Framework:
    table = NodeTable()
    for node in NODES:
        node.labels = {HOSTNAME_LABEL: node.name}
        table.set_node(node)
    table.add_pod(_pod("resident", cpu=400), table.index["full"])
    return Framework(
        resolve_profile(ProfileConfig(), implemented_plugin_names()), in_tree_registry(), Handle(table)
    )


@pytest.mark.parametrize("pod", PODS, ids=lambda p: p.name)
def test_each_plugins_row_filter_matches_its_batch_filter(pod: Pod) -> None:
    fw = _framework()
    state = CycleState()
    fw.run_pre_filter(state, pod)
    for plugin in fw.points.filter:
        for row in range(len(NODES)):
            batch = plugin.filter(state, pod, np.asarray([row], dtype=np.intp)).status_of(0)
            assert plugin.filter_row(state, pod, row) == batch, (plugin.name, NODES[row].name)
    for row in range(len(NODES)):
        want = fw.run_filters(state, pod, np.asarray([row], dtype=np.intp)).status_at(0)
        assert fw.filter_row(state, pod, row) == want


def test_fit_without_its_prefilter_state_is_an_error_named_after_it() -> None:
    fw = _framework()
    state = CycleState()  # PreFilter never ran
    fit = fw.plugins["NodeResourcesFit"]
    assert isinstance(fit, FilterPlugin)
    status = fit.filter_row(state, PODS[0], 0)
    assert status.code == Code.ERROR
    assert status == fit.filter(state, PODS[0], np.asarray([0], dtype=np.intp)).status_of(0)
    # The paths that answer for nominated pods without placing them say the same, never raise.
    rows = np.asarray([0, 1], dtype=np.intp)
    adjusted = fit.filter_adjusted(state, PODS[0], rows, [[PODS[1]], []])
    assert [adjusted.status_of(i) for i in range(2)] == [status, status]
    assert fit.filter_row_adjusted(state, PODS[0], 0, [PODS[1]], [PODS[2]]) == status


class Broken(FilterPlugin):
    name = "Broken"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        return FilterResult.reject_all(len(rows), Status(Code.SKIP, ("oops",)))


def test_a_failure_that_is_no_rejection_is_an_error_of_its_plugin_on_both_paths() -> None:
    fw = _framework()
    fw.points.filter = [Broken(fw.handle, {})]
    state = CycleState()
    got = fw.filter_row(state, PODS[0], 0)
    assert got == fw.run_filters(state, PODS[0], np.asarray([0], dtype=np.intp)).status_at(0)
    assert got.code == Code.ERROR
    assert got.plugin == "Broken"
