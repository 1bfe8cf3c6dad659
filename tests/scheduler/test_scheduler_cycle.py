"""The scheduling cycle: node search, rotation, nominated node, FitError, tie-break, reserve/permit.

Cases follow schedule_one_test.go (TestSchedulerSchedulePod, TestNumFeasibleNodesToFind,
TestFairEvaluationForNodes, TestPreferNominatedNodeFilterCallCounts) and framework/types_test.go
(TestFitError_Error), v1.35.4.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.cache import Cache
from policy_scheduler.scheduler.config import (
    EXTENSION_POINTS,
    PluginRef,
    PluginSet,
    ProfileConfig,
    ResolvedProfile,
)
from policy_scheduler.scheduler.cycle_failure import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE
from policy_scheduler.scheduler.filter_search import num_feasible_nodes_to_find
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, FitError, fit_error_message
from policy_scheduler.scheduler.framework.interfaces import (
    AlreadyBound,
    BindPlugin,
    FilterPlugin,
    FilterResult,
    Handle,
    PermitPlugin,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Container, ContainerPort, Node, Pod, Taint
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.schedule_one import NO_NODES_AVAILABLE, ScheduleOne, SchedulingError
from tests.builders import make_node, make_pod

ERR_REASON_FAKE = "Nodes failed the fake plugin"

# ---- test plugins ------------------------------------------------------------------------------------


class Sort(QueueSortPlugin):
    name = "Sort"

    def sort_key(self, info: Any) -> tuple[Any, ...]:
        return (0,)


class Binder(BindPlugin):
    name = "Binder"
    bound: ClassVar[list[tuple[str, str]]] = []

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        Binder.bound.append((pod.name, node_name))
        return SUCCESS


class Recording(FilterPlugin):
    """Counts filter calls per node; fails the nodes in `fail` with `reason`."""

    name = "Recording"
    fail: ClassVar[frozenset[str]] = frozenset()
    reason: ClassVar[str] = ERR_REASON_FAKE
    code: ClassVar[Code] = Code.UNSCHEDULABLE
    calls: ClassVar[list[list[str]]]

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        names = self.table.names_of(rows.tolist())
        type(self).calls.append(names)
        failed = np.asarray([n in self.fail for n in names], dtype=np.bool_)
        return FilterResult.reject_where(failed, Status(self.code, (self.reason.format(pod=pod.name),)))


def filt(
    name: str, fail: Sequence[str] = (), reason: str = ERR_REASON_FAKE, code: Code = Code.UNSCHEDULABLE
) -> type[Recording]:
    attrs = {"name": name, "fail": frozenset(fail), "reason": reason, "code": code, "calls": []}
    return type(name, (Recording,), attrs)


class MatchFilter(FilterPlugin):
    """tf.MatchFilterPlugin: only the node named like the pod fits."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        failed = np.asarray([n != pod.name for n in self.table.names_of(rows.tolist())], dtype=np.bool_)
        return FilterResult.reject_where(failed, Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,)))


class NoPodsFilter(FilterPlugin):
    """Fails nodes that already run pods."""

    name = "NoPodsFilter"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        failed = np.asarray([bool(self.table.pods[int(r)]) for r in rows], dtype=np.bool_)
        return FilterResult.reject_where(failed, Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,)))


class ByName(ScorePlugin):
    """Scores given per node name (others 0); `explode` makes scoring an error."""

    name = "ByName"
    scores: ClassVar[Mapping[str, int]] = {}
    explode: ClassVar[bool] = False

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        if self.explode:
            raise AssertionError("scoring must be skipped")
        return np.asarray([self.scores.get(n, 0) for n in self.table.names_of(rows.tolist())], dtype=np.int64)


def scorer(name: str, scores: Mapping[str, int] | None = None, explode: bool = False) -> type[Plugin]:
    return type(name, (ByName,), {"name": name, "scores": dict(scores or {}), "explode": explode})


class NumericMap(ScorePlugin):
    """The node named "3" scores 3, and so on."""

    name = "NumericMap"

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.asarray([int(n) for n in self.table.names_of(rows.tolist())], dtype=np.int64)


class ReverseNumericMap(NumericMap):
    name = "ReverseNumericMap"

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        reversed_scores: IntArray = scores.max() + scores.min() - scores
        return reversed_scores


class FakePreFilter(PreFilterPlugin):
    name = "FakePreFilter"
    nodes: ClassVar[frozenset[str] | None] = None
    status: ClassVar[Status] = SUCCESS

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        return (None if self.nodes is None else PreFilterResult(self.nodes)), self.status


def prefilter(name: str, nodes: Sequence[str] | None = None, status: Status = SUCCESS) -> type[Plugin]:
    return type(
        name,
        (FakePreFilter,),
        {"name": name, "nodes": None if nodes is None else frozenset(nodes), "status": status},
    )


class FakeReserve(ReservePlugin):
    name = "FakeReserve"
    status: ClassVar[Status] = SUCCESS
    unreserved: ClassVar[list[str]] = []

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        FakeReserve.unreserved.append(f"{self.name}:{pod.name}@{node_name}")


class FakePermit(PermitPlugin):
    name = "FakePermit"
    status: ClassVar[Status] = SUCCESS
    timeout: ClassVar[float] = 0.0

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        return self.status, self.timeout


# ---- fakes -------------------------------------------------------------------------------------------


class FakeQueue:
    def __init__(self) -> None:
        self.unschedulable: list[QueuedPodInfo] = []
        self.requeued: list[QueuedPodInfo] = []
        self.done_uids: list[str] = []
        self.nominations: dict[str, str] = {}
        self.moves: list[Any] = []
        self.nominated: dict[str, list[Pod]] = {}

    def done(self, uid: str) -> None:
        self.done_uids.append(uid)

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, scheduling_cycle: int) -> None:
        self.unschedulable.append(info)

    def requeue(self, info: QueuedPodInfo) -> None:
        self.requeued.append(info)

    def move_all_to_active_or_backoff(
        self, event: object, old: object, new: object, precheck: Any = None
    ) -> None:
        self.moves.append((event, old, new, precheck))

    def activate_nominated(self, pod: Pod, node_name: str) -> None:
        self.nominations[pod.key] = node_name

    def delete_nominated(self, pod: Pod) -> None:
        self.nominations.pop(pod.key, None)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.nominated.get(node_name, []))


class Hooks:
    def __init__(self) -> None:
        self.failures: list[tuple[str, str, str, str | None]] = []
        self.scheduled_on: list[tuple[str, str]] = []
        self.cycles: list[str] = []

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self.scheduled_on.append((pod.name, node_name))

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        self.failures.append((pod.name, reason, message, nominated_node))

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        pass

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        self.cycles.append(result)


PluginEntry = type[Plugin] | tuple[type[Plugin], int]


def make_framework(
    cache: Cache,
    plugins: Mapping[str, Sequence[PluginEntry]],
    percentage: int | None = None,
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
    handle = Handle(cache.table) if nominator is None else Handle(cache.table, nominator=nominator)
    framework = Framework(ResolvedProfile("test", percentage, points, {}, 1.0, 10.0, None), registry, handle)
    return framework


def default_framework(cache: Cache, percentage: int | None = None) -> Framework:
    """The default profile without PostFilter (preemption is tested elsewhere)."""
    config = ProfileConfig(
        scheduler_name="test",
        percentage_of_nodes_to_score=percentage,
        plugins={"postFilter": PluginSet(disabled=(PluginRef("*"),))},
    )
    profile = resolve_profile(config, implemented_plugin_names())
    handle = Handle(cache.table)
    framework = Framework(profile, in_tree_registry(), handle)
    return framework


def make_cache(*names: str, allocatable: Mapping[str, int] | None = None) -> Cache:
    cache = Cache()
    for name in names:
        cache.add_node(
            Node(name, labels={"kubernetes.io/hostname": name}, allocatable=dict(allocatable or {}))
        )
    return cache


def make_scheduler(cache: Cache, framework: Framework, seed: int = 0) -> tuple[ScheduleOne, FakeQueue, Hooks]:
    queue, hooks = FakeQueue(), Hooks()
    return (
        ScheduleOne(cache, queue, {"test": framework}, hooks=hooks, rng=np.random.default_rng(seed)),
        queue,
        hooks,
    )


# Pods of the "test" profile, each with one container "c" (empty unless cpu/memory are given).
pod = partial(make_pod, scheduler_name="test", requests={})


def info(p: Pod) -> QueuedPodInfo:
    return QueuedPodInfo(p, timestamp=0.0)


def schedule(sched: ScheduleOne, p: Pod) -> Any:
    framework = sched.frameworks[p.scheduler_name]
    return sched.schedule_pod(framework, CycleState(), p)


def fit_error(sched: ScheduleOne, p: Pod) -> FitError:
    with pytest.raises(FitError) as caught:
        schedule(sched, p)
    return caught.value


@pytest.fixture(autouse=True)
def _reset() -> None:
    Binder.bound.clear()
    FakeReserve.unreserved.clear()


# ---- numFeasibleNodesToFind --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("percentage", "nodes", "want"),
    [
        (None, 10, 10),
        (40, 10, 10),
        (None, 1000, 420),
        (40, 1000, 400),
        (None, 6000, 300),
        (40, 6000, 2400),
        (0, 1000, 420),
        (None, 99, 99),
        (None, 100, 100),  # 49% of 100 is below the 100-node floor
        (1, 5000, 100),
        (100, 5000, 5000),
        (None, 50_000, 2500),  # adaptive percentage floors at 5%
    ],
)
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, want: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == want


# ---- TestSchedulerSchedulePod --------------------------------------------------------------------------


def test_false_filter_fit_error() -> None:
    cache = make_cache("node1", "node2")
    false_filter = filt("FalseFilter", ["node1", "node2"])
    sched, _, _ = make_scheduler(cache, make_framework(cache, {"filter": [false_filter]}))
    err = fit_error(sched, pod("2"))
    assert err.num_all_nodes == 2
    assert err.diagnosis.node_to_status == {
        "node1": Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,), "FalseFilter"),
        "node2": Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,), "FalseFilter"),
    }
    assert err.diagnosis.unschedulable_plugins == {"FalseFilter"}
    assert str(err) == "0/2 nodes are available: 2 Nodes failed the fake plugin."


def test_true_filter_equal_scores_evaluates_all() -> None:
    cache = make_cache("node1", "node2")
    fw = make_framework(cache, {"filter": [filt("TrueFilter")], "score": [scorer("Equal")]})
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("ignore"))
    assert result.node_name in {"node1", "node2"}
    assert (result.evaluated_nodes, result.feasible_nodes) == (2, 2)


@pytest.mark.parametrize(
    ("scores", "pod_name", "want"),
    [
        ([(NumericMap, 1)], "ignore", "3"),
        ([(NumericMap, 1), (ReverseNumericMap, 2)], "2", "1"),
    ],
    ids=["test 4", "test 6"],
)
def test_numeric_scores(scores: list[PluginEntry], pod_name: str, want: str) -> None:
    cache = make_cache("3", "2", "1")
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [filt("TrueFilter")], "score": scores})
    )
    assert schedule(sched, pod(pod_name)).node_name == want


def test_match_filter_with_scores() -> None:
    cache = make_cache("3", "2", "1")
    fw = make_framework(cache, {"filter": [MatchFilter], "score": [NumericMap]})
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("2"))
    assert result.node_name == "2"
    assert result.feasible_nodes == 1


def test_no_pods_and_match_filter_each_reject_one_node() -> None:
    cache = make_cache("1", "2")
    cache.add_pod(Pod("2", uid="2", node_name="2", phase="Running"))
    fw = make_framework(cache, {"filter": [NoPodsFilter, MatchFilter], "score": [NumericMap]})
    sched, _, _ = make_scheduler(cache, fw)
    err = fit_error(sched, pod("2"))
    assert err.diagnosis.node_to_status == {
        "1": Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,), "MatchFilter"),
        "2": Status(Code.UNSCHEDULABLE, (ERR_REASON_FAKE,), "NoPodsFilter"),
    }
    assert err.diagnosis.unschedulable_plugins == {"MatchFilter", "NoPodsFilter"}


def test_prefilter_unresolvable_status() -> None:
    cache = make_cache("1", "2")
    status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("injected unschedulable status",))
    fw = make_framework(
        cache, {"preFilter": [prefilter("FakePreFilter", status=status)], "filter": [filt("F")]}
    )
    sched, _, _ = make_scheduler(cache, fw)
    err = fit_error(sched, pod("test-prefilter"))
    assert err.diagnosis.node_to_status == {}
    assert err.diagnosis.absent_nodes_status == status.with_plugin("FakePreFilter")
    assert err.diagnosis.pre_filter_msg == "injected unschedulable status"
    assert err.diagnosis.unschedulable_plugins == {"FakePreFilter"}
    assert str(err) == "0/2 nodes are available: injected unschedulable status."


def test_prefilter_error_status() -> None:
    cache = make_cache("1", "2")
    status = Status(Code.ERROR, ("injected error status",))
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"preFilter": [prefilter("FakePreFilter", status=status)]})
    )
    with pytest.raises(
        SchedulingError, match=r'^running PreFilter plugin "FakePreFilter": injected error status$'
    ):
        schedule(sched, pod("test-prefilter"))


def test_prefilter_narrowing_without_score_plugins_evaluates_one_node() -> None:
    cache = make_cache("node1", "node2", "node3")
    fw = make_framework(
        cache,
        {
            "preFilter": [
                prefilter("FakePreFilter1"),
                prefilter("FakePreFilter2", ["node2"]),
                prefilter("FakePreFilter3", ["node1", "node2"]),
            ]
        },
    )
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("test-prefilter"))
    assert (result.node_name, result.evaluated_nodes) == ("node2", 1)


def test_prefilter_non_intersecting() -> None:
    cache = make_cache("node1", "node2", "node3")
    fw = make_framework(
        cache,
        {
            "preFilter": [
                prefilter("FakePreFilter1"),
                prefilter("FakePreFilter2", ["node2"]),
                prefilter("FakePreFilter3", ["node1"]),
            ]
        },
    )
    sched, _, _ = make_scheduler(cache, fw)
    err = fit_error(sched, pod("test-prefilter"))
    msg = "node(s) didn't satisfy plugin(s) [FakePreFilter2 FakePreFilter3] simultaneously"
    assert err.diagnosis.pre_filter_msg == msg
    assert err.diagnosis.unschedulable_plugins == {"FakePreFilter2", "FakePreFilter3"}
    assert str(err) == f"0/3 nodes are available: {msg}."


def test_prefilter_and_filter_both_reject() -> None:
    cache = make_cache("node1", "node2")
    fake_filter = filt("FakeFilter", ["node2"], reason="injecting failure for pod {pod}")
    fw = make_framework(
        cache, {"preFilter": [prefilter("FakePreFilter", ["node2"])], "filter": [fake_filter]}
    )
    sched, _, _ = make_scheduler(cache, fw)
    err = fit_error(sched, pod("test-prefilter"))
    assert err.diagnosis.node_to_status == {
        "node2": Status(Code.UNSCHEDULABLE, ("injecting failure for pod test-prefilter",), "FakeFilter")
    }
    assert err.diagnosis.absent_nodes_status == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't satisfy plugin(s) [FakePreFilter]",)
    )
    assert err.diagnosis.unschedulable_plugins == {"FakePreFilter", "FakeFilter"}
    assert err.diagnosis.pre_filter_msg == ""
    assert str(err) == (
        "0/2 nodes are available: 1 injecting failure for pod test-prefilter, "
        "1 node(s) didn't satisfy plugin(s) [FakePreFilter]."
    )


def test_prefilter_returning_an_unknown_node() -> None:
    cache = make_cache("1", "2")
    fw = make_framework(
        cache, {"preFilter": [prefilter("FakePreFilter", ["invalid-node"])], "filter": [filt("TrueFilter")]}
    )
    sched, _, _ = make_scheduler(cache, fw)
    err = fit_error(sched, pod("test-prefilter"))
    assert err.diagnosis.node_to_status == {}
    assert str(err) == "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [FakePreFilter]."


def test_prefilter_skip_skips_the_filter() -> None:
    class SkipBoth(PreFilterPlugin, FilterPlugin):
        name = "FakeFilter2"

        def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
            return None, Status(Code.SKIP)

        def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
            return FilterResult.reject_all(len(rows), Status(Code.ERROR, ("must not run",)))

    cache = make_cache("node1", "node2", "node3")
    fw = make_framework(
        cache,
        {
            "preFilter": [prefilter("FakePreFilter1"), SkipBoth],
            "filter": [filt("FakeFilter1", ["node1"]), SkipBoth],
            "score": [scorer("Equal")],
        },
    )
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("test-prefilter"))
    assert result.node_name in {"node2", "node3"}
    assert result.evaluated_nodes == 3


def test_without_score_plugins_one_node_is_evaluated() -> None:
    cache = make_cache("node1", "node2", "node3")
    true_filter = filt("TrueFilter")
    sched, _, _ = make_scheduler(cache, make_framework(cache, {"filter": [true_filter]}))
    result = schedule(sched, pod("pod1"))
    # The vectorized search may filter a few more nodes, but only the first one counts.
    assert result.evaluated_nodes == 1
    assert result.feasible_nodes == 1
    assert result.node_name == "node1"
    assert sched.next_start_node_index == 1


def test_filter_error_is_a_scheduling_error() -> None:
    cache = make_cache("1", "2")
    failing = filt("Broken", ["2"], reason="disk on fire", code=Code.ERROR)
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [failing], "score": [scorer("Equal")]})
    )
    with pytest.raises(SchedulingError, match=r'^running "Broken" filter plugin: disk on fire$'):
        schedule(sched, pod("p"))


def test_unresolvable_filter_status_is_kept() -> None:
    cache = make_cache("3")
    fake = filt(
        "FakeFilter",
        ["3"],
        reason="injecting failure for pod {pod}",
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    )
    sched, _, _ = make_scheduler(cache, make_framework(cache, {"filter": [fake], "score": [NumericMap]}))
    err = fit_error(sched, pod("test-filter"))
    assert err.diagnosis.node_to_status["3"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert str(err) == "0/1 nodes are available: 1 injecting failure for pod test-filter."


def test_no_nodes() -> None:
    cache = make_cache()
    sched, _, _ = make_scheduler(cache, make_framework(cache, {}))
    with pytest.raises(SchedulingError, match=NO_NODES_AVAILABLE):
        schedule(sched, pod("p"))


# ---- FitError messages with the in-tree plugins -----------------------------------------------------------

ALLOC = {"cpu": 1000, "memory": 1 << 30, "pods": 110}


_node = partial(make_node, hostname=True, allocatable=ALLOC)


@pytest.mark.parametrize(
    ("nodes", "existing", "the_pod", "want"),
    [
        pytest.param(
            [_node("a"), _node("b"), _node("c")],
            [],
            pod("p", cpu=2000),
            "0/3 nodes are available: 3 Insufficient cpu.",
            id="cpu",
        ),
        pytest.param(
            [_node("a"), _node("b")],
            [],
            pod("p", cpu=2000, memory=2 << 30),
            "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
            id="cpu and memory",
        ),
        pytest.param(
            [
                _node("tainted", taints=(Taint("dedicated", "db", "NoSchedule"),)),
                _node("labelled", labels={"disk": "hdd"}),
                _node(
                    "small", allocatable={"cpu": 100, "memory": 1 << 20, "pods": 10}, labels={"disk": "ssd"}
                ),
                _node("cordoned", unschedulable=True, labels={"disk": "ssd"}),
            ],
            [],
            pod("p", cpu=500, memory=1 << 28, node_selector={"disk": "ssd"}),
            "0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) didn't match Pod's node affinity/selector, "
            "1 node(s) had untolerated taint(s), 1 node(s) were unschedulable.",
            id="mixed reasons",
        ),
        pytest.param(
            [_node(f"n{i}", allocatable={"cpu": 100, "memory": 1 << 30, "pods": 110}) for i in range(10)]
            + [_node("x1", unschedulable=True), _node("x2", unschedulable=True)],
            [],
            pod("p", cpu=500),
            "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) were unschedulable.",
            id="histogram sorted as strings",
        ),
        pytest.param(
            [_node("full", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 1}), _node("ports")],
            [
                Pod("old", uid="old", node_name="full"),
                Pod(
                    "web",
                    uid="web",
                    node_name="ports",
                    containers=(Container("c", ports=(ContainerPort(80, 80),)),),
                ),
            ],
            Pod(
                "p",
                uid="p",
                scheduler_name="test",
                containers=(Container("c", ports=(ContainerPort(80, 80),)),),
            ),
            "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't have free ports for the requested pod ports.",
            id="pods and ports",
        ),
    ],
)
def test_fit_error_messages_with_in_tree_plugins(
    nodes: list[Node], existing: list[Pod], the_pod: Pod, want: str
) -> None:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in existing:
        cache.add_pod(p)
    sched, _, _ = make_scheduler(cache, default_framework(cache))
    assert str(fit_error(sched, the_pod)) == want


@pytest.mark.parametrize(
    ("diagnosis", "nodes", "want"),
    [
        (
            Diagnosis(
                node_to_status=NodeToStatus(
                    {
                        f"node{i}": Status(
                            Code.UNSCHEDULABLE, ("Node(s) failed PreFilter plugin FalsePreFilter",)
                        )
                        for i in range(3)
                    }
                ),
                pre_filter_msg="Node(s) failed PreFilter plugin FalsePreFilter",
            ),
            3,
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.",
        ),
        (
            Diagnosis(
                node_to_status=NodeToStatus(
                    {
                        f"node{i}": Status(
                            Code.UNSCHEDULABLE, ("Node(s) failed PreFilter plugin FalsePreFilter",)
                        )
                        for i in range(3)
                    }
                ),
                pre_filter_msg="Node(s) failed PreFilter plugin FalsePreFilter",
                post_filter_msg="Error running PostFilter plugin FailedPostFilter",
            ),
            3,
            "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter. Error running PostFilter plugin FailedPostFilter",
        ),
        (
            Diagnosis(
                node_to_status=NodeToStatus(
                    {
                        f"node{i}": Status(
                            Code.UNSCHEDULABLE, ("Node(s) failed Filter plugin FalseFilter-1",)
                        )
                        for i in range(3)
                    }
                )
            ),
            3,
            "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.",
        ),
        (
            Diagnosis(
                node_to_status=NodeToStatus(
                    {
                        "node1": Status(Code.UNSCHEDULABLE, ("Node(s) failed Filter plugin FalseFilter-1",)),
                        "node2": Status(Code.UNSCHEDULABLE, ("Node(s) failed Filter plugin FalseFilter-1",)),
                        "node3": Status(Code.UNSCHEDULABLE, ("Node(s) failed Filter plugin FalseFilter-2",)),
                    }
                ),
                post_filter_msg="Error running PostFilter plugin FailedPostFilter",
            ),
            3,
            "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1. "
            "Error running PostFilter plugin FailedPostFilter",
        ),
        (
            Diagnosis(
                node_to_status=NodeToStatus(
                    {"node1": Status(Code.UNSCHEDULABLE, ("Node failed Permit plugin Permit-1",))}
                )
            ),
            1,
            "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
        ),
        (Diagnosis(), 2, "0/2 nodes are available:"),
    ],
    ids=["prefilter", "prefilter+postfilter", "one filter", "two filters+postfilter", "permit", "no reasons"],
)
def test_fit_error_error(diagnosis: Diagnosis, nodes: int, want: str) -> None:
    assert fit_error_message(nodes, diagnosis) == want


def test_equal_statuses_from_different_passes_count_together() -> None:
    # Statuses are counted by identity (speed); equal objects from two filter passes are two
    # entries of status_counts, and the message sums their nodes all the same.
    first = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    second = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    taint = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint",), "TaintToleration")
    diagnosis = Diagnosis(NodeToStatus({"a": first, "b": second, "c": first, "d": taint}))
    assert sorted(n for _, n in diagnosis.status_counts()) == [1, 1, 2]
    assert fit_error_message(4, diagnosis) == (
        "0/4 nodes are available: 1 node(s) had untolerated taint, 3 Insufficient cpu."
    )


# ---- node search ---------------------------------------------------------------------------------------------


def test_rotating_start_index_advances_by_processed_nodes() -> None:
    names = [f"n{i:03d}" for i in range(300)]
    cache = make_cache(*names)
    true_filter = filt("TrueFilter")
    fw = make_framework(cache, {"filter": [true_filter], "score": [scorer("Equal")]})
    sched, _, _ = make_scheduler(cache, fw)
    to_find = num_feasible_nodes_to_find(None, 300)
    assert to_find == 144
    seen: list[set[str]] = []
    for _ in range(3):
        result = schedule(sched, pod("p"))
        assert (result.evaluated_nodes, result.feasible_nodes) == (144, 144)
        assert result.feasible_rows is not None
        seen.append(set(cache.table.names_of(result.feasible_rows.tolist())))
    assert sched.next_start_node_index == (3 * 144) % 300
    assert seen[0] == set(names[:144])
    assert seen[1] == set(names[144:288])
    assert seen[2] == set(names[288:] + names[:132])


def test_rotation_counts_rejected_nodes() -> None:
    names = [f"n{i:03d}" for i in range(300)]
    cache = make_cache(*names)
    odd = filt("Odd", names[1::2])
    sched, _, _ = make_scheduler(cache, make_framework(cache, {"filter": [odd], "score": [scorer("Equal")]}))
    result = schedule(sched, pod("p"))
    # The 144th feasible node is n286; the search goes on through n287 (rejected) and stops at
    # n288, the 145th feasible node, which is not counted: 288 processed, 144 of them rejected.
    assert (result.feasible_nodes, result.evaluated_nodes) == (144, 288)
    assert sched.next_start_node_index == 288
    # A pod that fits nowhere processes every node: the index comes back where it was.
    sched.next_start_node_index = 17
    everything = filt("Nothing", names)
    sched2, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [everything], "score": [scorer("Equal")]})
    )
    sched2.next_start_node_index = 17
    fit_error(sched2, pod("p"))
    assert sched2.next_start_node_index == 17


def test_a_pod_that_fits_nowhere_is_filtered_in_two_passes() -> None:
    names = [f"n{i:04d}" for i in range(5000)]
    cache = make_cache(*names)
    nothing = filt("Nothing", names)
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [nothing], "score": [scorer("Equal")]})
    )
    err = fit_error(sched, pod("p"))
    assert len(err.diagnosis.node_to_status) == 5000
    # The first chunk found nothing: the rest went in one pass, not in doubling chunks.
    assert [len(call) for call in nothing.calls] == [len(nothing.calls[0]), 5000 - len(nothing.calls[0])]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    nodes=st.integers(1, 700),
    data=st.data(),
)
def test_the_chunked_search_stops_where_a_node_by_node_search_would(nodes: int, data: st.DataObject) -> None:
    """findNodesThatPassFilters checks nodes one by one from the rotating index and stops at
    feasible node to_find + 1; the chunks must give the same nodes, count and next index."""
    passing = data.draw(st.lists(st.booleans(), min_size=nodes, max_size=nodes))
    start = data.draw(st.integers(0, nodes - 1))
    names = [f"n{i:03d}" for i in range(nodes)]
    cache = make_cache(*names)
    failing = filt("Some", [name for name, ok in zip(names, passing, strict=True) if not ok])
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [failing], "score": [scorer("Equal")]})
    )
    sched.next_start_node_index = start
    to_find = num_feasible_nodes_to_find(None, nodes)
    feasible: list[str] = []
    processed = 0
    for i in range(nodes):
        name = names[(start + i) % nodes]
        if passing[(start + i) % nodes]:
            if len(feasible) == to_find:
                break  # feasible node to_find + 1: not counted
            feasible.append(name)
        processed += 1
    if not feasible:
        err = fit_error(sched, pod("p"))
        assert len(err.diagnosis.node_to_status) == nodes
    else:
        result = schedule(sched, pod("p"))
        assert result.feasible_rows is not None
        assert cache.table.names_of(result.feasible_rows.tolist()) == feasible
        assert result.evaluated_nodes == processed
    assert sched.next_start_node_index == (start + processed) % nodes


def test_fair_evaluation_for_nodes() -> None:
    # TestFairEvaluationForNodes: 500 nodes, the search starts where the last one stopped.
    cache = make_cache(*[str(i) for i in range(500)])
    fw = make_framework(cache, {"filter": [filt("TrueFilter")], "score": [scorer("Equal")]})
    sched, _, _ = make_scheduler(cache, fw)
    to_find = num_feasible_nodes_to_find(None, 500)
    for i in range(2):
        schedule(sched, pod("p"))
        assert sched.next_start_node_index == (i + 1) * to_find % 500


def test_percentage_of_nodes_to_score_100_evaluates_all() -> None:
    cache = make_cache(*[f"n{i}" for i in range(300)])
    fw = make_framework(cache, {"filter": [filt("TrueFilter")], "score": [scorer("Equal")]}, percentage=100)
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("p"))
    assert (result.evaluated_nodes, result.feasible_nodes) == (300, 300)
    assert sched.next_start_node_index == 0


def test_prefilter_narrowing_is_searched_in_tree_order_with_rotation() -> None:
    cache = Cache()
    for i, zone in enumerate("abcabcabca"):
        cache.add_node(Node(f"n{i}", labels={"topology.kubernetes.io/zone": zone}))
    allowed = ["n9", "n1", "n4", "n3"]
    recording = filt("Rec")
    fw = make_framework(
        cache,
        {"preFilter": [prefilter("Narrow", allowed)], "filter": [recording], "score": [scorer("Equal")]},
    )
    sched, _, _ = make_scheduler(cache, fw)
    schedule(sched, pod("p"))
    # Tree order: a: n0 n3 n6 n9, b: n1 n4 n7, c: n2 n5 n8 -> n0 n1 n2 n3 n4 n5 n6 n7 n8 n9.
    assert recording.calls == [["n1", "n3", "n4", "n9"]]
    assert sched.next_start_node_index == 4
    sched.next_start_node_index = 5  # 5 % 4 = 1: start at the second allowed node
    schedule(sched, pod("p"))
    assert recording.calls[-1] == ["n3", "n4", "n9", "n1"]


def test_nominated_node_is_evaluated_first_and_alone() -> None:
    cache = make_cache("n1", "n2", "n3")
    recording = filt("Rec")
    fw = make_framework(cache, {"filter": [recording], "score": [scorer("Prefer1", {"n1": 100})]})
    sched, _, _ = make_scheduler(cache, fw)
    sched.next_start_node_index = 1
    result = schedule(sched, pod("p", nominated_node_name="n3"))
    assert result.node_name == "n3"
    assert (result.evaluated_nodes, result.feasible_nodes) == (1, 1)
    assert recording.calls == [["n3"]]
    assert sched.next_start_node_index == 1, "no search, no rotation"


def test_rejected_nominated_node_falls_back_to_a_full_search() -> None:
    cache = make_cache("n1", "n2", "n3")
    recording = filt("Rec", ["n3"])
    fw = make_framework(cache, {"filter": [recording], "score": [scorer("Prefer1", {"n1": 100})]})
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("p", nominated_node_name="n3"))
    assert result.node_name == "n1"
    assert recording.calls[0] == ["n3"]
    assert (result.evaluated_nodes, result.feasible_nodes) == (3, 2), "n3 is counted once"


def test_rejected_nominated_node_counted_once_in_fit_error() -> None:
    cache = make_cache("n1", "n2", "n3")
    fw = make_framework(cache, {"filter": [filt("No", ["n1", "n2", "n3"])], "score": [scorer("Equal")]})
    sched, _, _ = make_scheduler(cache, fw)
    assert (
        str(fit_error(sched, pod("p", nominated_node_name="n2")))
        == "0/3 nodes are available: 3 Nodes failed the fake plugin."
    )


def test_unknown_nominated_node_is_ignored() -> None:
    cache = make_cache("n1", "n2")
    recording = filt("Rec")
    sched, _, _ = make_scheduler(
        cache, make_framework(cache, {"filter": [recording], "score": [scorer("Equal")]})
    )
    schedule(sched, pod("p", nominated_node_name="gone"))
    assert recording.calls == [["n1", "n2"]]


def test_single_feasible_node_skips_scoring() -> None:
    cache = make_cache("n1", "n2", "n3")
    fw = make_framework(cache, {"filter": [filt("F", ["n1", "n3"])], "score": [scorer("Boom", explode=True)]})
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("p"))
    assert (result.node_name, result.evaluated_nodes, result.feasible_nodes, result.scores) == (
        "n2",
        3,
        1,
        None,
    )


def test_highest_total_score_wins() -> None:
    cache = make_cache("a", "b", "c")
    fw = make_framework(
        cache,
        {"score": [(scorer("S1", {"a": 10, "b": 30, "c": 20}), 1), (scorer("S2", {"a": 50, "c": 10}), 1)]},
    )
    sched, _, _ = make_scheduler(cache, fw)
    for seed in range(5):
        sched.rng = np.random.default_rng(seed)
        assert schedule(sched, pod("p")).node_name == "a"


def _tie_choices(seed: int, pods: int = 60) -> list[str]:
    cache = make_cache(*[f"n{i}" for i in range(10)])
    fw = make_framework(cache, {"score": [scorer("Equal", {f"n{i}": 7 for i in range(10)})]}, percentage=100)
    sched, _, _ = make_scheduler(cache, fw, seed=seed)
    return [schedule(sched, pod("p")).node_name for _ in range(pods)]


def test_tie_break_is_seeded() -> None:
    assert _tie_choices(1) == _tie_choices(1)
    runs = {tuple(_tie_choices(seed)) for seed in range(5)}
    assert len(runs) == 5, "different seeds choose differently"
    counts = Counter(_tie_choices(3, pods=500))
    assert set(counts) == {f"n{i}" for i in range(10)}, "every tied node can win"


def test_ties_only_among_the_best() -> None:
    cache = make_cache("a", "b", "c", "d")
    fw = make_framework(cache, {"score": [scorer("S", {"a": 5, "b": 9, "c": 9, "d": 1})]})
    winners = set()
    for seed in range(40):
        sched, _, _ = make_scheduler(cache, fw, seed=seed)
        winners.add(schedule(sched, pod("p")).node_name)
    assert winners == {"b", "c"}


# ---- schedule_one ------------------------------------------------------------------------------------------


def test_schedule_one_assumes_and_binds() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    sched, queue, hooks = make_scheduler(cache, default_framework(cache))
    p = pod("p", cpu=300)
    task = sched.schedule_one(info(p))
    assert task is not None
    assert task.node_name == "n1"
    assert cache.is_assumed(p)
    assert int(cache.table.requested[cache.table.resource_index["cpu"], 0]) == 300
    Binder.bound.clear()

    async def bind() -> None:
        await sched.binding_cycle(task)

    sched.frameworks["test"].handle.binder = _MemBinder()
    asyncio.run(bind())
    assert hooks.scheduled_on == [("p", "n1")]
    assert queue.done_uids == ["p"]
    assert hooks.cycles == ["scheduled"]


class _MemBinder:
    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.fail:
            raise RuntimeError(self.fail)
        self.bound.append((pod.name, node_name))


def test_binding_failure_forgets_the_pod() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    fw = default_framework(cache)
    fw.handle.binder = _MemBinder(fail="conflict")
    sched, queue, hooks = make_scheduler(cache, fw)
    p = pod("p", cpu=300)
    task = sched.schedule_one(info(p))
    assert task is not None
    asyncio.run(sched.binding_cycle(task))
    assert not cache.is_assumed(p)
    assert int(cache.table.requested[cache.table.resource_index["cpu"], 0]) == 0
    assert hooks.failures == [
        ("p", REASON_SCHEDULER_ERROR, 'running Bind plugin "DefaultBinder": conflict', None)
    ]
    assert len(queue.unschedulable) == 1
    assert len(queue.moves) == 1


class _BoundEarlierBinder:
    """Finds the pod already bound to `node` by an earlier binding whose answer was lost."""

    def __init__(self, node: str) -> None:
        self.node = node

    async def bind(self, pod: Pod, node_name: str) -> None:
        raise AlreadyBound(pod.key, self.node)


def test_a_pod_bound_elsewhere_by_an_earlier_binding_is_reported_there_not_requeued() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    fw = default_framework(cache)
    fw.handle.binder = _BoundEarlierBinder("n9")
    sched, queue, hooks = make_scheduler(cache, fw)
    p = pod("p", cpu=300)
    task = sched.schedule_one(info(p))
    assert task is not None
    assert task.node_name == "n1"
    asyncio.run(sched.binding_cycle(task))
    # n1 is free again; the watch will bring the pod into the cache on n9.
    assert not cache.is_assumed(p)
    assert int(cache.table.requested[cache.table.resource_index["cpu"], 0]) == 0
    assert hooks.scheduled_on == [("p", "n9")]
    assert hooks.failures == []
    assert queue.unschedulable == []
    assert queue.done_uids == ["p"]
    assert len(queue.moves) == 1  # pods waiting for n1's room are told
    assert hooks.cycles == ["scheduled"]


def test_schedule_one_fit_error_records_plugins() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    sched, queue, hooks = make_scheduler(cache, default_framework(cache))
    i = info(pod("p", cpu=5000))
    assert sched.schedule_one(i) is None
    assert hooks.failures == [
        ("p", REASON_UNSCHEDULABLE, "0/1 nodes are available: 1 Insufficient cpu.", None)
    ]
    assert i.unschedulable_plugins == {"NodeResourcesFit"}
    assert queue.unschedulable == [i]
    assert hooks.cycles == ["unschedulable"]


def test_schedule_one_malformed_pod() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    sched, queue, hooks = make_scheduler(cache, default_framework(cache))
    p = pod("p")
    p.malformed = 'spec.containers[0].resources.requests.cpu: invalid quantity "x"'
    assert sched.schedule_one(info(p)) is None
    assert hooks.failures == [("p", REASON_UNSCHEDULABLE, p.malformed, None)]
    assert len(queue.unschedulable) == 1
    assert not cache.is_assumed(p)


def test_schedule_one_without_profile_and_terminating_pods() -> None:
    cache = make_cache("n1", allocatable=ALLOC)
    sched, queue, hooks = make_scheduler(cache, default_framework(cache))
    lost = Pod("lost", uid="lost", scheduler_name="other")
    assert sched.schedule_one(info(lost)) is None
    assert hooks.failures[-1][:2] == ("lost", REASON_UNSCHEDULABLE)
    assert "'other'" in hooks.failures[-1][2]
    dying = pod("dying", deletion_timestamp=5.0)
    assert sched.schedule_one(info(dying)) is None
    assert queue.done_uids == ["dying"]
    assert len(hooks.failures) == 1


def test_schedule_one_with_no_nodes_is_unschedulable() -> None:
    # ErrNoNodesAvailable is an UnschedulableAndUnresolvable status upstream: reason Unschedulable.
    cache = make_cache()
    sched, queue, hooks = make_scheduler(cache, default_framework(cache))
    i = info(pod("p"))
    assert sched.schedule_one(i) is None
    assert hooks.failures == [("p", REASON_UNSCHEDULABLE, NO_NODES_AVAILABLE, None)]
    assert queue.unschedulable == [i]
    assert i.unschedulable_plugins == set()


def _reserve_permit_scheduler(
    reserve_status: Status = SUCCESS, permit_status: Status = SUCCESS, timeout: float = 0.0
) -> tuple[ScheduleOne, FakeQueue, Hooks, Cache]:
    cache = make_cache("n1", allocatable=ALLOC)
    res = type("Res", (FakeReserve,), {"name": "Res", "status": reserve_status})
    per = type("Per", (FakePermit,), {"name": "Per", "status": permit_status, "timeout": timeout})
    fw = make_framework(cache, {"reserve": [res], "permit": [per]})
    sched, queue, hooks = make_scheduler(cache, fw)
    return sched, queue, hooks, cache


@pytest.mark.parametrize(
    ("reserve_status", "permit_status", "plugin"),
    [
        (Status(Code.UNSCHEDULABLE, ("Node failed Reserve plugin Reserve-1",)), SUCCESS, "Res"),
        (SUCCESS, Status(Code.UNSCHEDULABLE, ("Node failed Permit plugin Permit-1",)), "Per"),
    ],
    ids=["reserve", "permit"],
)
def test_reserve_or_permit_rejection_is_a_one_node_fit_error(
    reserve_status: Status, permit_status: Status, plugin: str
) -> None:
    sched, queue, hooks, cache = _reserve_permit_scheduler(reserve_status, permit_status)
    p = pod("p", cpu=100, nominated_node_name="n1")
    i = info(p)
    assert sched.schedule_one(i) is None
    reason = (reserve_status if plugin == "Res" else permit_status).message
    # "" asks the status writer to clear status.nominatedNodeName too (upstream's clearNominatedNode).
    assert hooks.failures == [("p", REASON_UNSCHEDULABLE, f"0/1 nodes are available: 1 {reason}.", "")]
    assert i.unschedulable_plugins == {plugin}
    assert FakeReserve.unreserved == ["Res:p@n1"]
    assert not cache.is_assumed(p)
    assert int(cache.table.requested[cache.table.resource_index["cpu"], 0]) == 0
    assert queue.nominations == {"default/p": ""}, "the stale nomination is cleared"
    assert hooks.cycles == ["unschedulable"]


def test_reserve_error_is_a_scheduler_error() -> None:
    sched, _, hooks, _ = _reserve_permit_scheduler(reserve_status=Status(Code.ERROR, ("boom",)))
    i = info(pod("p"))
    assert sched.schedule_one(i) is None
    assert hooks.failures == [("p", REASON_SCHEDULER_ERROR, 'running Reserve plugin "Res": boom', None)]
    assert i.unschedulable_plugins == set()


def test_permit_timeout_in_binding_cycle_is_a_fit_error() -> None:
    sched, queue, hooks, cache = _reserve_permit_scheduler(permit_status=Status(Code.WAIT), timeout=0.01)
    p = pod("p", cpu=100)
    i = info(p)
    task = sched.schedule_one(i)
    assert task is not None
    assert cache.is_assumed(p)
    asyncio.run(sched.binding_cycle(task))
    msg = "0/1 nodes are available: 1 rejected due to timeout after waiting 10ms at plugin Per."
    assert hooks.failures == [("p", REASON_UNSCHEDULABLE, msg, None)]
    assert i.unschedulable_plugins == {"Per"}
    assert not cache.is_assumed(p)
    assert FakeReserve.unreserved == ["Res:p@n1"]
    # The freed room is announced, but not to the rejected pod itself.
    assert len(queue.moves) == 1
    precheck = queue.moves[0][3]
    assert precheck is not None
    assert not precheck(p)
    assert precheck(pod("other"))


def test_rejected_nominated_node_counts_in_the_rotation() -> None:
    # processedNodes = len(feasible) + len(NodeToStatus): a rejected nominated node that the
    # search did not reach again still counts, as upstream.
    names = [f"n{i:03d}" for i in range(200)]
    cache = make_cache(*names)
    fw = make_framework(cache, {"filter": [filt("No150", ["n150"])], "score": [scorer("Equal")]})
    sched, _, _ = make_scheduler(cache, fw)
    result = schedule(sched, pod("p", nominated_node_name="n150"))
    assert (result.feasible_nodes, result.evaluated_nodes) == (100, 101)
    assert sched.next_start_node_index == 101


class _NominateN1(PostFilterPlugin):
    name = "NominateN1"

    def post_filter(self, state: Any, pod: Pod, diagnosis: Any) -> tuple[PostFilterResult | None, Status]:
        return PostFilterResult("n1"), SUCCESS


class _ClearingHooks(Hooks):
    def __init__(self) -> None:
        super().__init__()
        self.cleared: list[str] = []

    def nomination_cleared(self, pod: Pod) -> None:
        self.cleared.append(pod.name)


def test_preemption_takes_the_room_of_lower_priority_nominations_only() -> None:
    """prepareCandidate: lower-priority pods nominated to the chosen node lose the nomination;
    equal or higher priority ones, and nominations elsewhere, keep theirs."""
    cache = make_cache("n1", "n2")
    fw = make_framework(cache, {"filter": [filt("Nothing", ["n1", "n2"])], "postFilter": [_NominateN1]})
    sched, queue, _ = make_scheduler(cache, fw)
    hooks = _ClearingHooks()
    sched.hooks = hooks
    low, equal, high, elsewhere = (
        pod("low", priority=1),
        pod("equal", priority=5),
        pod("high", priority=9),
        pod("elsewhere", priority=1),
    )
    queue.nominated = {"n1": [low, equal, high], "n2": [elsewhere]}
    for p in (low, equal, high, elsewhere):
        queue.nominations[p.key] = "n1" if p is not elsewhere else "n2"
    assert sched.schedule_one(info(pod("preemptor", priority=5))) is None
    assert hooks.cleared == ["low"]
    assert "default/low" not in queue.nominations
    assert queue.nominations["default/equal"] == "n1"
    assert queue.nominations["default/high"] == "n1"
    assert queue.nominations["default/elsewhere"] == "n2"
    assert queue.nominations["default/preemptor"] == "n1"
