"""Framework runtime: how a profile's plugins are run at each extension point.

Cases follow framework/runtime/framework_test.go and schedule_one_test.go (v1.35.4), using tiny
test plugins plus the real in-tree plugins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from policy_scheduler.scheduler.config import EXTENSION_POINTS, PluginRef, ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.durations import go_duration
from policy_scheduler.scheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    FilterResult,
    Handle,
    PermitPlugin,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    default_normalize,
)
from policy_scheduler.scheduler.framework.outcomes import FrameworkError
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Container, Node, Pod, Taint
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.queue.nominator import PodNominator
from tests.aio import settle

# ---- test plugins ------------------------------------------------------------------------------------

CALLS: list[str] = []


class Sort(QueueSortPlugin):
    name = "Sort"

    def sort_key(self, info: Any) -> tuple[Any, ...]:
        return (0,)


class Binder(BindPlugin):
    name = "Binder"

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        CALLS.append(f"bind:{self.name}")
        return SUCCESS


class FakePreFilter(PreFilterPlugin):
    """tf.FakePreFilterPlugin: returns a fixed result and status."""

    name = "FakePreFilter"
    result: ClassVar[PreFilterResult | None] = None
    status: ClassVar[Status] = SUCCESS

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        CALLS.append(f"prefilter:{self.name}")
        return self.result, self.status


def prefilter(name: str, nodes: Sequence[str] | None = None, status: Status = SUCCESS) -> type[Plugin]:
    result = None if nodes is None else PreFilterResult(frozenset(nodes))
    return type(name, (FakePreFilter,), {"name": name, "result": result, "status": status})


class FakeFilter(FilterPlugin):
    """tf.FakeFilterPlugin: fails the nodes in `codes` with "injecting failure for pod <name>"."""

    name = "FakeFilter"
    codes: ClassVar[Mapping[str, Code]] = {}
    seen: ClassVar[list[list[str]]]

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        names = self.table.names_of(rows.tolist())
        type(self).seen.append(names)
        statuses: list[Status] = []
        index = np.zeros(len(rows), dtype=np.int32)
        passed = np.ones(len(rows), dtype=np.bool_)
        for i, name in enumerate(names):
            code = self.codes.get(name)
            if code is None:
                continue
            passed[i] = False
            index[i] = len(statuses)
            statuses.append(Status(code, (f"injecting failure for pod {pod.name}",)))
        return FilterResult(passed, index, tuple(statuses))


def filt(name: str, codes: Mapping[str, Code] | None = None, reason: str | None = None) -> type[FakeFilter]:
    attrs: dict[str, Any] = {"name": name, "codes": dict(codes or {}), "seen": []}
    if reason is not None:

        def filter(self: FakeFilter, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
            type(self).seen.append(self.table.names_of(rows.tolist()))
            failed = np.asarray([n in self.codes for n in self.table.names_of(rows.tolist())], dtype=np.bool_)
            return FilterResult.reject_where(failed, Status(Code.UNSCHEDULABLE, (reason,)))

        attrs["filter"] = filter
    return type(name, (FakeFilter,), attrs)


class FakeScore(ScorePlugin):
    name = "FakeScore"
    scores: ClassVar[Mapping[str, int]] = {}
    reverse: ClassVar[bool] = False
    normalize: ClassVar[bool] = False

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.asarray([self.scores.get(n, 0) for n in self.table.names_of(rows.tolist())], dtype=np.int64)

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize(scores, self.reverse) if self.normalize else scores


def scorer(
    name: str, scores: Mapping[str, int], normalize: bool = False, reverse: bool = False
) -> type[Plugin]:
    return type(
        name, (FakeScore,), {"name": name, "scores": dict(scores), "normalize": normalize, "reverse": reverse}
    )


class SkippingPreScore(PreScorePlugin, ScorePlugin):
    name = "SkippingPreScore"

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        return SKIP

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        raise AssertionError("Score runs although PreScore returned Skip")


class FakeReserve(ReservePlugin):
    name = "FakeReserve"
    status: ClassVar[Status] = SUCCESS

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        CALLS.append(f"reserve:{self.name}")
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        CALLS.append(f"unreserve:{self.name}")


def reserve(name: str, status: Status = SUCCESS) -> type[Plugin]:
    return type(name, (FakeReserve,), {"name": name, "status": status})


class FakePermit(PermitPlugin):
    name = "FakePermit"
    status: ClassVar[Status] = SUCCESS
    timeout: ClassVar[float] = 0.0

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        CALLS.append(f"permit:{self.name}")
        return self.status, self.timeout


def permit(name: str, status: Status = SUCCESS, timeout: float = 0.0) -> type[Plugin]:
    return type(name, (FakePermit,), {"name": name, "status": status, "timeout": timeout})


class FakeBind(BindPlugin):
    name = "FakeBind"
    status: ClassVar[Status] = SUCCESS

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        CALLS.append(f"bind:{self.name}")
        return self.status


def binder(name: str, status: Status) -> type[Plugin]:
    return type(name, (FakeBind,), {"name": name, "status": status})


# ---- building frameworks -----------------------------------------------------------------------------


def make_table(*names: str, allocatable: Mapping[str, int] | None = None) -> NodeTable:
    table = NodeTable()
    for name in names:
        table.set_node(
            Node(name, labels={"kubernetes.io/hostname": name}, allocatable=dict(allocatable or {}))
        )
    return table


def make_framework(
    table: NodeTable,
    plugins: Mapping[str, Sequence[type[Plugin] | tuple[type[Plugin], int]]],
    nominator: Any = None,
) -> Framework:
    registry: dict[str, type[Plugin]] = {"Sort": Sort, "Binder": Binder}
    points: dict[str, tuple[PluginRef, ...]] = {point: () for point in EXTENSION_POINTS}
    points["queueSort"] = (PluginRef("Sort"),)
    points["bind"] = (PluginRef("Binder"),)
    for point, entries in plugins.items():
        refs = []
        for entry in entries:
            cls, weight = entry if isinstance(entry, tuple) else (entry, 0)
            registry[cls.name] = cls
            refs.append(PluginRef(cls.name, weight))
        points[point] = tuple(refs)
    profile = ResolvedProfile("test", None, points, {}, 1.0, 10.0, None)
    handle = Handle(table) if nominator is None else Handle(table, nominator=nominator)
    framework = Framework(profile, registry, handle)
    return framework


def all_rows(table: NodeTable) -> Rows:
    return np.arange(len(table), dtype=np.intp)


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


POD = Pod("test-pod", uid="test-pod")


# ---- construction ------------------------------------------------------------------------------------


def test_framework_requires_queue_sort_and_bind_and_matching_points() -> None:
    table = make_table("n1")
    profile = ResolvedProfile("x", None, {p: () for p in EXTENSION_POINTS}, {}, 1.0, 10.0, None)
    with pytest.raises(FrameworkError, match="exactly one queueSort"):
        Framework(profile, {}, Handle(table))
    points: dict[str, tuple[PluginRef, ...]] = {p: () for p in EXTENSION_POINTS}
    points["queueSort"] = (PluginRef("Sort"),)
    with pytest.raises(FrameworkError, match="at least one bind"):
        Framework(ResolvedProfile("x", None, points, {}, 1.0, 10.0, None), {"Sort": Sort}, Handle(table))
    with pytest.raises(FrameworkError, match="does not implement filter"):
        make_framework(table, {"filter": [prefilter("OnlyPre")]})
    with pytest.raises(FrameworkError, match="does not implement score"):
        make_framework(table, {"score": [prefilter("OnlyPre2")]})
    points = {p: () for p in EXTENSION_POINTS}
    points["queueSort"] = (PluginRef("Nope"),)
    with pytest.raises(FrameworkError, match="unknown plugin 'Nope'"):
        Framework(ResolvedProfile("x", None, points, {}, 1.0, 10.0, None), {}, Handle(table))


def test_one_instance_per_plugin_across_points() -> None:
    class Both(PreFilterPlugin, FilterPlugin):
        name = "Both"

        def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
            return None, SUCCESS

        def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
            return FilterResult.all_pass(len(rows))

    fw = make_framework(make_table("n1"), {"preFilter": [Both], "filter": [Both]})
    assert id(fw.points.pre_filter[0]) == id(fw.points.filter[0]) == id(fw.plugins["Both"])


# ---- PreFilter -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plugins", "want_nodes", "want_status", "want_plugins"),
    [
        pytest.param([prefilter("A"), prefilter("B")], None, SUCCESS, set(), id="all nodes"),
        pytest.param(
            [prefilter("A"), prefilter("B", ["node2"]), prefilter("C", ["node1", "node2"])],
            {"node2"},
            SUCCESS,
            {"B", "C"},
            id="narrowed and merged",
        ),
        pytest.param(
            [prefilter("A"), prefilter("FakePreFilter2", ["node2"]), prefilter("FakePreFilter3", ["node1"])],
            set(),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ("node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously",),
            ),
            {"FakePreFilter2", "FakePreFilter3"},
            id="non-intersecting",
        ),
        pytest.param(
            [prefilter("FakePreFilter1"), prefilter("FakePreFilter2", [])],
            set(),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't satisfy plugin FakePreFilter2",)),
            {"FakePreFilter2"},
            id="empty node set",
        ),
        pytest.param(
            [prefilter("Zed", ["n1", "n2"]), prefilter("Alpha", ["n3"]), prefilter("Never", ["n9"])],
            set(),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ("node(s) didn't satisfy plugin(s) [Alpha Zed] simultaneously",),
            ),
            {"Alpha", "Zed"},
            id="sorted names and stop at the first empty intersection",
        ),
    ],
)
def test_pre_filter_results(
    plugins: list[type[Plugin]], want_nodes: set[str] | None, want_status: Status, want_plugins: set[str]
) -> None:
    fw = make_framework(make_table("node1", "node2", "node3"), {"preFilter": plugins})
    result, status, with_nodes = fw.run_pre_filter(CycleState(), POD)
    assert status == want_status
    assert with_nodes == want_plugins
    got = None if result is None else result.node_names
    assert got == (None if want_nodes is None else frozenset(want_nodes))
    if "Never" in {p.name for p in plugins}:
        assert "prefilter:Never" not in CALLS


def test_pre_filter_unschedulable_continues_unresolvable_stops() -> None:
    fw = make_framework(
        make_table("n1"),
        {
            "preFilter": [
                prefilter("First", status=Status(Code.UNSCHEDULABLE, ("first says no",))),
                prefilter("Second", ["n1"]),
                prefilter("Third", status=Status(Code.UNSCHEDULABLE, ("third says no",))),
            ]
        },
    )
    result, status, plugins = fw.run_pre_filter(CycleState(), POD)
    # Every PreFilter ran (preemption may still help); the last Unschedulable status is returned.
    assert CALLS == ["prefilter:First", "prefilter:Second", "prefilter:Third"]
    assert status == Status(Code.UNSCHEDULABLE, ("third says no",), "Third")
    assert result is not None
    assert result.node_names == frozenset({"n1"})
    assert plugins == {"Second"}

    CALLS.clear()
    fw = make_framework(
        make_table("n1"),
        {
            "preFilter": [
                prefilter(
                    "First",
                    status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("injected unschedulable status",)),
                ),
                prefilter("Second"),
            ]
        },
    )
    result, status, plugins = fw.run_pre_filter(CycleState(), POD)
    assert CALLS == ["prefilter:First"]
    assert result is None
    assert plugins == set()
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("injected unschedulable status",), "First")


def test_pre_filter_error_is_wrapped_like_upstream() -> None:
    fw = make_framework(
        make_table("n1"),
        {
            "preFilter": [
                prefilter("FakePreFilter", status=Status(Code.ERROR, ("injected error status",))),
                prefilter("Later"),
            ]
        },
    )
    result, status, _ = fw.run_pre_filter(CycleState(), POD)
    assert result is None
    assert status.code == Code.ERROR
    assert status.message == 'running PreFilter plugin "FakePreFilter": injected error status'
    assert "prefilter:Later" not in CALLS


def test_pre_filter_skip_sets_skip_filter_and_filter_is_not_run() -> None:
    class PreAndFilter(PreFilterPlugin, FilterPlugin):
        name = "FakeFilter2"

        def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
            return None, SKIP

        def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
            raise AssertionError("a skipped plugin's Filter must not run")

    other = filt("FakeFilter1", {"node1": Code.UNSCHEDULABLE})
    fw = make_framework(
        make_table("node1", "node2", "node3"), {"preFilter": [PreAndFilter], "filter": [other, PreAndFilter]}
    )
    state = CycleState()
    state.skip_filter = {"stale"}
    _, status, _ = fw.run_pre_filter(state, POD)
    assert status.is_success
    assert state.skip_filter == {"FakeFilter2"}
    outcome = fw.run_filters(state, POD, all_rows(fw.handle.table))
    assert outcome.passed.tolist() == [False, True, True]


# ---- Filter --------------------------------------------------------------------------------------------


def test_filter_first_failure_wins_per_node() -> None:
    a = filt("A", {"n1": Code.UNSCHEDULABLE, "n3": Code.UNSCHEDULABLE_AND_UNRESOLVABLE})
    b = filt("B", {"n1": Code.UNSCHEDULABLE, "n2": Code.UNSCHEDULABLE}, reason="b says no")
    c = filt("C", {"n2": Code.UNSCHEDULABLE, "n4": Code.UNSCHEDULABLE}, reason="c says no")
    table = make_table("n1", "n2", "n3", "n4", "n5")
    fw = make_framework(table, {"filter": [a, b, c]})
    outcome = fw.run_filters(CycleState(), POD, all_rows(table))
    got = [outcome.status_at(i) for i in range(5)]
    assert got == [
        Status(Code.UNSCHEDULABLE, ("injecting failure for pod test-pod",), "A"),
        Status(Code.UNSCHEDULABLE, ("b says no",), "B"),
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("injecting failure for pod test-pod",), "A"),
        Status(Code.UNSCHEDULABLE, ("c says no",), "C"),
        SUCCESS,
    ]
    assert outcome.passed.tolist() == [False, False, False, False, True]
    # Later plugins only see the rows still alive.
    assert a.seen == [["n1", "n2", "n3", "n4", "n5"]]
    assert b.seen == [["n2", "n4", "n5"]]
    assert c.seen == [["n4", "n5"]]
    assert outcome.error() is None


def test_filter_stops_calling_plugins_when_every_row_failed() -> None:
    a = filt("A", {"n1": Code.UNSCHEDULABLE})
    b = filt("B")
    fw = make_framework(make_table("n1"), {"filter": [a, b]})
    outcome = fw.run_filters(CycleState(), POD, all_rows(fw.handle.table))
    assert not outcome.passed.any()
    assert b.seen == []


def test_filter_rows_subset_and_error_status() -> None:
    a = filt("A", {"n2": Code.ERROR})
    table = make_table("n1", "n2", "n3")
    fw = make_framework(table, {"filter": [a]})
    rows = np.asarray([2, 1], dtype=np.intp)
    outcome = fw.run_filters(CycleState(), POD, rows)
    assert outcome.rows.tolist() == [2, 1]
    assert outcome.passed.tolist() == [True, False]
    err = outcome.error()
    assert err == Status(Code.ERROR, ("injecting failure for pod test-pod",), "A")


@pytest.mark.parametrize("code", [Code.SKIP, Code.WAIT, Code.ERROR])
def test_filter_statuses_other_than_rejections_become_errors(code: Code) -> None:
    odd = filt("Odd", {"n1": code})
    table = make_table("n1", "n2")
    outcome = make_framework(table, {"filter": [odd]}).run_filters(CycleState(), POD, all_rows(table))
    assert outcome.passed.tolist() == [False, True]
    assert outcome.error() == Status(Code.ERROR, ("injecting failure for pod test-pod",), "Odd")


def test_filter_with_in_tree_plugins_reports_the_first_plugin_in_profile_order() -> None:
    table = NodeTable()
    table.set_node(
        Node(
            "tainted-small",
            taints=(Taint("k", "v"),),
            allocatable={"cpu": 100, "memory": 1 << 30, "pods": 10},
        )
    )
    table.set_node(Node("small", allocatable={"cpu": 100, "memory": 1 << 30, "pods": 10}))
    table.set_node(
        Node("unschedulable", unschedulable=True, allocatable={"cpu": 4000, "memory": 1 << 30, "pods": 10})
    )
    table.set_node(Node("big", allocatable={"cpu": 4000, "memory": 1 << 30, "pods": 10}))
    profile = resolve_profile(ProfileConfig(), implemented_plugin_names())
    handle = Handle(table)
    fw = Framework(profile, in_tree_registry(), handle)
    pod = Pod("p", uid="p", containers=(Container("c", requests={"cpu": 500}),))
    state = CycleState()
    _, status, _ = fw.run_pre_filter(state, pod)
    assert status.is_success
    outcome = fw.run_filters(state, pod, all_rows(table))
    got = [(outcome.status_at(i).plugin, outcome.status_at(i).message) for i in range(4)]
    assert got == [
        ("TaintToleration", "node(s) had untolerated taint(s)"),
        ("NodeResourcesFit", "Insufficient cpu"),
        ("NodeUnschedulable", "node(s) were unschedulable"),
        ("", ""),
    ]


# ---- nominated pods ---------------------------------------------------------------------------------------


class NeedsCompanion(FilterPlugin):
    """Passes only on nodes running a pod labelled app=companion (like required pod affinity)."""

    name = "NeedsCompanion"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        ok = np.asarray(
            [any(p.labels.get("app") == "companion" for p in self.table.pods[int(r)].values()) for r in rows],
            dtype=np.bool_,
        )
        return FilterResult.reject_where(~ok, Status(Code.UNSCHEDULABLE, ("no companion",)))


class Crowded(FilterPlugin):
    """Fails nodes with any pod on them (like anti-affinity or a full node)."""

    name = "Crowded"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        busy = np.asarray([bool(self.table.pods[int(r)]) for r in rows], dtype=np.bool_)
        return FilterResult.reject_where(busy, Status(Code.UNSCHEDULABLE, ("crowded",)))


def cpu_pod(name: str, cpu: int, priority: int = 0, labels: dict[str, str] | None = None) -> Pod:
    return Pod(
        name,
        uid=name,
        priority=priority,
        labels=dict(labels or {}),
        containers=(Container("c", requests={"cpu": cpu}),),
    )


def _fit_framework(nominator: PodNominator) -> tuple[NodeTable, Framework]:
    table = make_table("n1", "n2", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 10})
    registry = in_tree_registry()
    fit = registry["NodeResourcesFit"]
    return table, make_framework(table, {"preFilter": [fit], "filter": [fit]}, nominator)


@pytest.mark.parametrize(
    ("nominated_priority", "want_n1"),
    [(10, "Insufficient cpu"), (5, "Insufficient cpu"), (4, None)],
    ids=["higher priority nominated pod counts", "equal priority counts", "lower priority ignored"],
)
def test_nominated_pods_of_equal_or_higher_priority_take_room(
    nominated_priority: int, want_n1: str | None
) -> None:
    nominator = PodNominator()
    table, fw = _fit_framework(nominator)
    nominator.add_nominated_pod(cpu_pod("nominated", 800, nominated_priority), "n1")
    pod = cpu_pod("p", 500, priority=5)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    outcome = fw.run_filters_with_nominated_pods(state, pod, all_rows(table))
    n1 = outcome.status_at(0)
    assert (None if n1.is_success else n1.message) == want_n1
    assert outcome.passed[1]
    # The trial placement was reverted.
    assert int(table.requested[table.resource_index["cpu"], 0]) == 0
    assert table.pods[0] == {}


def test_the_pod_itself_is_not_counted_as_nominated() -> None:
    nominator = PodNominator()
    table, fw = _fit_framework(nominator)
    pod = cpu_pod("p", 800, priority=5)
    nominator.add_nominated_pod(pod, "n1")
    state = CycleState()
    fw.run_pre_filter(state, pod)
    assert fw.run_filters_with_nominated_pods(state, pod, all_rows(table)).passed.tolist() == [True, True]


def test_node_must_pass_with_and_without_nominated_pods() -> None:
    nominator = PodNominator()
    table = make_table("n1", "n2")
    fw = make_framework(table, {"filter": [NeedsCompanion]}, nominator)
    companion = cpu_pod("companion", 0, priority=10, labels={"app": "companion"})
    nominator.add_nominated_pod(companion, "n1")
    outcome = fw.run_filters_with_nominated_pods(CycleState(), POD, all_rows(table))
    # n1 passes only with the nominated companion, which is not there yet: rejected.
    assert outcome.passed.tolist() == [False, False]
    assert outcome.status_at(0).message == "no companion"
    table.add_pod(Pod("real-companion", uid="rc", labels={"app": "companion"}), 0)
    outcome = fw.run_filters_with_nominated_pods(CycleState(), POD, all_rows(table))
    assert outcome.passed.tolist() == [True, False]


def test_status_comes_from_the_pass_with_nominated_pods_when_both_fail() -> None:
    # Upstream runs the pass with nominated pods first and returns its status when it fails.
    nominator = PodNominator()
    table = make_table("n1")
    fw = make_framework(table, {"filter": [Crowded, NeedsCompanion]}, nominator)
    nominator.add_nominated_pod(cpu_pod("other", 0, priority=10), "n1")
    outcome = fw.run_filters_with_nominated_pods(CycleState(), POD, all_rows(table))
    assert not outcome.passed[0]
    assert outcome.status_at(0) == Status(Code.UNSCHEDULABLE, ("crowded",), "Crowded")


def test_only_nodes_holding_higher_or_equal_priority_nominations_are_asked() -> None:
    class Counting(PodNominator):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list[str] = []

        def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
            self.asked.append(node_name)
            return super().nominated_pods_for_node(node_name)

    nominator = Counting()
    table = make_table("n1", "n2", "n3", "n4", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 10})
    fit = in_tree_registry()["NodeResourcesFit"]
    fw = make_framework(table, {"preFilter": [fit], "filter": [fit]}, nominator)
    nominator.add_nominated_pod(cpu_pod("big", 900, priority=1), "n2")
    nominator.add_nominated_pod(cpu_pod("low", 900, priority=-1), "n3")
    pod = cpu_pod("p", 500)
    state = CycleState()
    fw.run_pre_filter(state, pod)
    outcome = fw.run_filters_with_nominated_pods(state, pod, all_rows(table))
    assert outcome.passed.tolist() == [True, False, True, True]
    assert nominator.asked == ["n2"]
    # One row at a time (preemption's dry runs) takes the same decisions.
    for row, want in enumerate([True, False, True, True]):
        single = fw.run_filters_with_nominated_pods(state, pod, np.asarray([row], dtype=np.intp))
        assert bool(single.passed[0]) is want


# ---- Score ------------------------------------------------------------------------------------------------


def test_scores_are_normalized_then_weighted_and_summed() -> None:
    table = make_table("3", "2", "1")
    numeric = scorer("NumericMap", {"3": 3, "2": 2, "1": 1})
    reverse = scorer("ReverseNumericMap", {"3": 3, "2": 2, "1": 1}, normalize=True, reverse=True)
    fw = make_framework(table, {"score": [(numeric, 1), (reverse, 2)]})
    outcome = fw.run_score(CycleState(), POD, all_rows(table))
    # reverse normalize of [3,2,1] by max 3: 100 - [100, 66, 33] = [0, 34, 67]; weight 2.
    assert outcome.by_plugin["NumericMap"].tolist() == [3, 2, 1]
    assert outcome.by_plugin["ReverseNumericMap"].tolist() == [0, 68, 134]
    assert outcome.total.tolist() == [3, 70, 135]


def test_weight_zero_in_refs_means_one() -> None:
    table = make_table("a", "b")
    fw = make_framework(table, {"score": [scorer("S", {"a": 10, "b": 20})]})
    assert fw.run_score(CycleState(), POD, all_rows(table)).total.tolist() == [10, 20]


@pytest.mark.parametrize("bad", [101, -1])
def test_score_out_of_range_after_normalize_is_an_error(bad: int) -> None:
    table = make_table("a", "b")
    fw = make_framework(table, {"score": [scorer("Bad", {"a": bad, "b": 1})]})
    with pytest.raises(FrameworkError) as caught:
        fw.run_score(CycleState(), POD, all_rows(table))
    assert str(caught.value) == (
        f'applying score defaultWeights on Score plugins: plugin "Bad" returns an invalid score {bad}, '
        "it should in the range of [0, 100] after normalizing"
    )


class FloatScore(ScorePlugin):
    name = "FloatScore"

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.full(len(rows), 50.7)  # the bug under test: floats, not int64


def test_float_scores_fail_instead_of_being_truncated() -> None:
    table = make_table("a", "b")
    fw = make_framework(table, {"score": [FloatScore]})
    with pytest.raises(TypeError, match="same_kind"):
        fw.run_score(CycleState(), POD, all_rows(table))


def test_normalize_brings_scores_into_range() -> None:
    table = make_table("a", "b")
    fw = make_framework(table, {"score": [scorer("Big", {"a": 1000, "b": 500}, normalize=True)]})
    assert fw.run_score(CycleState(), POD, all_rows(table)).total.tolist() == [100, 50]


def test_pre_score_skip_skips_score() -> None:
    table = make_table("node1", "node2")
    fw = make_framework(
        table, {"preScore": [SkippingPreScore], "score": [SkippingPreScore, scorer("Other", {"node1": 5})]}
    )
    state = CycleState()
    assert fw.run_pre_score(state, POD, all_rows(table)).is_success
    assert state.skip_score == {"SkippingPreScore"}
    outcome = fw.run_score(state, POD, all_rows(table))
    assert outcome.total.tolist() == [5, 0]
    assert "SkippingPreScore" not in outcome.by_plugin


def test_pre_score_error_is_wrapped_like_upstream() -> None:
    class Failing(PreScorePlugin):
        name = "Failing"

        def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
            return Status(Code.ERROR, ("boom",))

    table = make_table("a")
    fw = make_framework(table, {"preScore": [Failing]})
    status = fw.run_pre_score(CycleState(), POD, all_rows(table))
    assert status.code == Code.ERROR
    assert status.message == 'running PreScore plugin "Failing": boom'


# ---- Reserve / Permit / Bind --------------------------------------------------------------------------------


def test_reserve_order_and_unreserve_in_reverse() -> None:
    fw = make_framework(
        make_table("n1"),
        {"reserve": [reserve("R1"), reserve("R2", Status(Code.UNSCHEDULABLE, ("no room",))), reserve("R3")]},
    )
    status = fw.run_reserve(CycleState(), POD, "n1")
    assert status == Status(Code.UNSCHEDULABLE, ("no room",), "R2")
    assert CALLS == ["reserve:R1", "reserve:R2"]
    CALLS.clear()
    fw.run_unreserve(CycleState(), POD, "n1")
    # Unreserve runs on every reserve plugin, in reverse order.
    assert CALLS == ["unreserve:R3", "unreserve:R2", "unreserve:R1"]


def test_reserve_and_permit_errors_are_wrapped_like_upstream() -> None:
    fw = make_framework(
        make_table("n1"),
        {
            "reserve": [reserve("R1", Status(Code.ERROR, ("boom",)))],
            "permit": [permit("P1", Status(Code.ERROR, ("bang",)))],
        },
    )
    assert fw.run_reserve(CycleState(), POD, "n1") == Status(
        Code.ERROR, ('running Reserve plugin "R1": boom',), "R1"
    )
    assert fw.run_permit(CycleState(), POD, "n1") == Status(
        Code.ERROR, ('running Permit plugin "P1": bang',), "P1"
    )


def test_reserve_all_succeed() -> None:
    fw = make_framework(make_table("n1"), {"reserve": [reserve("R1"), reserve("R2")]})
    assert fw.run_reserve(CycleState(), POD, "n1") is SUCCESS
    assert CALLS == ["reserve:R1", "reserve:R2"]


def test_permit_rejection_stops_and_names_the_plugin() -> None:
    fw = make_framework(
        make_table("n1"),
        {
            "permit": [
                permit("P1", Status(Code.WAIT), 10),
                permit("P2", Status(Code.UNSCHEDULABLE, ("rejected by P2",))),
                permit("P3"),
            ]
        },
    )
    status = fw.run_permit(CycleState(), POD, "n1")
    assert status == Status(Code.UNSCHEDULABLE, ("rejected by P2",), "P2")
    assert CALLS == ["permit:P1", "permit:P2"]
    assert fw.waiting_pod(POD.uid) is None


def test_permit_success_without_waiting() -> None:
    fw = make_framework(make_table("n1"), {"permit": [permit("P1"), permit("P2")]})
    assert fw.run_permit(CycleState(), POD, "n1").is_success
    assert asyncio.run(fw.wait_on_permit(POD)).is_success


def test_permit_wait_is_allowed_by_every_waiting_plugin() -> None:
    fw = make_framework(
        make_table("n1"),
        {"permit": [permit("P1", Status(Code.WAIT), 10), permit("P2", Status(Code.WAIT), 10)]},
    )
    assert fw.run_permit(CycleState(), POD, "n1").code == Code.WAIT

    async def scenario() -> Status:
        waiting = fw.waiting_pod(POD.uid)
        assert waiting is not None
        task = asyncio.create_task(fw.wait_on_permit(POD))
        await asyncio.sleep(0)
        waiting.allow("P1")
        await settle()
        assert not task.done(), "P2 has not allowed yet"
        waiting.allow("P2")
        return await asyncio.wait_for(task, 1)

    assert asyncio.run(scenario()).is_success
    assert fw.waiting_pod(POD.uid) is None


def test_permit_wait_rejected_by_plugin() -> None:
    fw = make_framework(make_table("n1"), {"permit": [permit("P1", Status(Code.WAIT), 10)]})
    fw.run_permit(CycleState(), POD, "n1")

    async def scenario() -> Status:
        waiting = fw.waiting_pod(POD.uid)
        assert waiting is not None
        task = asyncio.create_task(fw.wait_on_permit(POD))
        await asyncio.sleep(0)
        waiting.reject("P1", "not today")
        return await asyncio.wait_for(task, 1)

    assert asyncio.run(scenario()) == Status(Code.UNSCHEDULABLE, ("not today",), "P1")


def test_permit_wait_times_out_with_upstream_message() -> None:
    fw = make_framework(
        make_table("n1"),
        {"permit": [permit("Slow", Status(Code.WAIT), 0.05), permit("Slower", Status(Code.WAIT), 30)]},
    )
    fw.run_permit(CycleState(), POD, "n1")
    status = asyncio.run(asyncio.wait_for(fw.wait_on_permit(POD), 2))
    assert status == Status(
        Code.UNSCHEDULABLE, ("rejected due to timeout after waiting 50ms at plugin Slow",), "Slow"
    )
    assert fw.waiting_pod(POD.uid) is None


def test_permit_wait_is_capped_at_fifteen_minutes() -> None:
    fw = make_framework(make_table("n1"), {"permit": [permit("Forever", Status(Code.WAIT), 3600)]})
    fw.run_permit(CycleState(), POD, "n1")
    waiting = fw.waiting_pod(POD.uid)
    assert waiting is not None
    assert waiting.waits == {"Forever": 900.0}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.000000001, "1ns"),
        (0.0000015, "1.5µs"),
        (0.05, "50ms"),
        (0.0015, "1.5ms"),
        (1, "1s"),
        (1.5, "1.5s"),
        (10, "10s"),
        (60, "1m0s"),
        (90, "1m30s"),
        (900, "15m0s"),
        (3600, "1h0m0s"),
        (3661.25, "1h1m1.25s"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


@pytest.mark.parametrize(
    ("plugins", "want", "calls"),
    [
        (
            [("B1", SKIP), ("B2", SUCCESS), ("B3", SUCCESS)],
            Status(Code.SUCCESS, (), "B2"),
            ["bind:B1", "bind:B2"],
        ),
        ([("B1", SKIP), ("B2", SKIP)], SKIP, ["bind:B1", "bind:B2"]),
        (
            [("B1", Status(Code.ERROR, ("api down",))), ("B2", SUCCESS)],
            Status(Code.ERROR, ('running Bind plugin "B1": api down',), "B1"),
            ["bind:B1"],
        ),
        (
            [("B1", Status(Code.UNSCHEDULABLE, ("node gone",))), ("B2", SUCCESS)],
            Status(Code.UNSCHEDULABLE, ("node gone",), "B1"),
            ["bind:B1"],
        ),
    ],
    ids=["first non-skip binds", "all skip", "error stops", "rejection stops"],
)
def test_bind_skip_chain(plugins: list[tuple[str, Status]], want: Status, calls: list[str]) -> None:
    table = make_table("n1")
    fw = make_framework(table, {})
    registry = {name: binder(name, status) for name, status in plugins}
    points = dict(fw.profile.points) | {"bind": tuple(PluginRef(n) for n in registry)}
    profile = ResolvedProfile("test", None, points, {}, 1.0, 10.0, None)
    fw = Framework(profile, {"Sort": Sort, **registry}, Handle(table))
    status = asyncio.run(fw.run_bind(CycleState(), POD, "n1"))
    assert status.code == want.code
    assert status.reasons == want.reasons
    if want.code != Code.SKIP:
        assert status.plugin == want.plugin
    assert calls == CALLS
