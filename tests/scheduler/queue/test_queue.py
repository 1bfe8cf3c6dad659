"""Scheduling queue state transitions, driven with a fake clock and stub frameworks.

Many cases are ported from kube-scheduler v1.35 backend/queue/*_test.go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import (
    Affinity,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Taint,
    Toleration,
)
from policy_scheduler.scheduler.queue import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    InFlightEvent,
    PriorityQueue,
    QueueClosed,
    SchedulingQueue,
    calculate_backoff_duration,
    le_priority_precheck,
    match_cluster_events,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from policy_scheduler.scheduler.queue.backoff import NO_BACKOFF, BackoffQueue
from policy_scheduler.scheduler.queue.hints import (
    Strategy,
    build_hint_map,
    entries_for_event,
    is_pod_worth_requeuing,
)
from tests.aio import eventually, settle
from tests.builders import make_pod
from tests.fakeclock import FakeClock

# ---- stubs -------------------------------------------------------------------------------------

START = 1000.0  # FakeClock()'s default time
NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
NODE_LABEL = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL)
NODE_UPDATE = ClusterEvent(Resource.NODE, Action.UPDATE)
NODE_TAINT = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT)
POD_LABEL = ClusterEvent(Resource.POD, Action.UPDATE_POD_LABEL)
GATES_GONE = ClusterEvent(Resource.POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
PV_ADD = ClusterEvent(Resource.WILDCARD, Action.ADD, "PersistentVolumeAdd")  # stands in for pvAdd


@dataclass
class StubProfile:
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0


def queue_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def skip_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.SKIP


def same_pod_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """SchedulingGates' hint: only the pod's own update can ungate it."""
    return QueueingHint.QUEUE if isinstance(new, Pod) and new.uid == pod.uid else QueueingHint.SKIP


GATES_EVENTS = [ClusterEventWithHint(GATES_GONE, same_pod_hint)]


@dataclass
class StubFramework:
    """The three calls the queue makes, plus the profile's backoff settings."""

    events: dict[str, list[ClusterEventWithHint]] = field(default_factory=dict)
    profile: StubProfile = field(default_factory=StubProfile)
    ascending: bool = False  # reversed priority order, to test live replacement
    gating_plugin: str = "SchedulingGates"
    pre_enqueue_calls: int = 0

    def queue_sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        priority = info.pod.priority if self.ascending else -info.pod.priority
        return (priority, info.timestamp)

    def run_pre_enqueue(self, pod: Pod) -> Status:
        self.pre_enqueue_calls += 1
        if pod.scheduling_gates:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"waiting for scheduling gates: {list(pod.scheduling_gates)}",),
                self.gating_plugin,
            )
        return SUCCESS

    def events_to_register(self) -> Mapping[str, Sequence[ClusterEventWithHint]]:
        return {"SchedulingGates": GATES_EVENTS, **self.events}


def make_queue(
    events: dict[str, list[ClusterEventWithHint]] | None = None,
    clock: FakeClock | None = None,
    **kwargs: Any,
) -> tuple[PriorityQueue, FakeClock]:
    clock = clock or FakeClock()
    frameworks = {"default-scheduler": StubFramework(events=events or {})}
    return PriorityQueue(frameworks, clock, **kwargs), clock


def pop_name(q: PriorityQueue) -> str | None:
    info = q.try_pop()
    return info.pod.name if info else None


def fail(q: PriorityQueue, info: QueuedPodInfo, *plugins: str, pending: Sequence[str] = ()) -> None:
    """What the scheduling loop does after a failed attempt."""
    info.unschedulable_plugins = set(plugins)
    info.pending_plugins = set(pending)
    assert q.add_unschedulable_if_not_present(info, q.scheduling_cycle)


def names(infos: Any) -> list[str]:
    return sorted(i.pod.name for i in infos)


# ---- ordering ----------------------------------------------------------------------------------


def test_priority_order_then_fifo_among_equals() -> None:
    q, clock = make_queue()
    for name, priority in [("low", 1), ("high-a", 10), ("mid", 5), ("high-b", 10), ("mid-b", 5)]:
        q.add(make_pod(name, priority=priority))
        clock.advance(1)
    assert [pop_name(q) for _ in range(6)] == ["high-a", "high-b", "mid", "mid-b", "low", None]


def test_equal_keys_pop_in_insertion_order() -> None:
    q, _ = make_queue()  # the clock does not move: identical sort keys
    for name in ["a", "b", "c", "d"]:
        q.add(make_pod(name))
    assert [pop_name(q) for _ in range(4)] == ["a", "b", "c", "d"]


def test_pop_counts_attempts_and_sets_initial_attempt_timestamp_once() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    assert info.attempts == 1
    assert info.initial_attempt_timestamp == START
    clock.advance(30)
    fail(q, info, "P")
    q.node_added(Node("n"))  # backoff (1 s) is long over: straight to activeQ
    again = q.try_pop()
    assert again is info
    assert again.attempts == 2
    assert again.initial_attempt_timestamp == START
    assert again.unschedulable_plugins == set()  # cleared on pop, as upstream


def test_update_reorders_active_pod() -> None:
    q, clock = make_queue()
    a, b = make_pod("a", priority=1), make_pod("b", priority=2)
    q.add(a)
    clock.advance(1)
    q.add(b)
    q.update(a, make_pod("a", priority=5, resource_version="2"))
    assert [pop_name(q), pop_name(q)] == ["a", "b"]


# ---- backoff -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("initial", "maximum", "count", "want"),
    [
        (1e-9, 32e-9, 0, 0.0),  # no backoff
        (3e-9, 1000e-9, 5, 48e-9),  # 3 * 2^4
        (1e-9, 32e-9, 16, 32e-9),  # hitting max backoff
        (1e-9, (2**31 - 1) * 1e-9, 32, (2**31 - 1) * 1e-9),  # overflow_32bit
        (1e-9, (2**63 - 1) * 1e-9, 64, (2**63 - 1) * 1e-9),  # overflow_64bit
        (1.0, 10.0, 1, 1.0),
        (1.0, 10.0, 2, 2.0),
        (1.0, 10.0, 3, 4.0),
        (1.0, 10.0, 4, 8.0),
        (1.0, 10.0, 5, 10.0),
        (1.0, 10.0, 6, 10.0),
        (1.0, 10.0, 200, 10.0),
    ],
)
def test_calculate_backoff_duration(initial: float, maximum: float, count: int, want: float) -> None:
    assert calculate_backoff_duration(count, initial, maximum) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("name", "initial", "maximum", "unschedulable", "errors", "cached", "want"),
    [
        ("no backoff", 1.0, 32.0, 0, 0, 0.0, NO_BACKOFF),
        ("returned from the cache", 1.0, 32.0, 1, 0, START + 0.5, START + 0.5),
        ("by unschedulable count", 1.0, 32.0, 16, 0, 0.0, START + 32),
        ("errors count wins", 1.0, 32.0, 5, 16, 0.0, START + 32),
        ("errors count alone", 1.0, 32.0, 5, 2, 0.0, START + 2),
        ("zero max means no backoff", 0.0, 0.0, 16, 0, 0.0, NO_BACKOFF),
    ],
)
def test_backoff_time(
    name: str, initial: float, maximum: float, unschedulable: int, errors: int, cached: float, want: float
) -> None:
    bq = BackoffQueue(FakeClock(), lambda _: (initial, maximum), lambda i: (0,))
    info = QueuedPodInfo(
        make_pod("p"),
        timestamp=START,
        unschedulable_count=unschedulable,
        consecutive_errors_count=errors,
        backoff_expiration=cached,
    )
    assert bq.backoff_time(info) == want


def test_backoff_expiration_is_aligned_down_to_the_second() -> None:
    bq = BackoffQueue(FakeClock(), lambda _: (1.0, 10.0), lambda i: (0,))
    info = QueuedPodInfo(make_pod("p"), timestamp=START + 0.7, unschedulable_count=1)
    assert bq.backoff_time(info) == START + 1  # floor(1000.7 + 1)


def test_backoff_durations_grow_with_each_rejection() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    seen: list[float] = []
    for _ in range(6):
        info = q.try_pop()
        assert info is not None
        fail(q, info, "P")
        assert q.where(info.pod) == "unschedulable"
        q.node_added(Node("n"))  # still backing off: moved to backoffQ
        assert q.where(info.pod) == "backoff"
        seen.append(info.backoff_expiration - info.timestamp)
        clock.advance(100)
        q.flush_backoff_completed()
        assert q.where(info.pod) == "active"
    assert seen == [1, 2, 4, 8, 10, 10]


def test_errors_back_off_by_consecutive_errors_and_reset_on_rejection() -> None:
    q, clock = make_queue()
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    for expected in [1, 2, 4]:
        fail(q, info)  # no rejecting plugin: an error
        assert q.where(info.pod) == "backoff"
        assert info.backoff_expiration - info.timestamp == expected
        clock.advance(100)
        q.flush_backoff_completed()
        info = q.try_pop()
        assert info is not None
    fail(q, info, "P")
    assert (info.consecutive_errors_count, info.unschedulable_count) == (0, 1)


def test_backoff_flush_moves_only_expired_pods() -> None:
    q, clock = make_queue(pop_from_backoff=False)
    q.add(make_pod("a"))
    clock.advance(0.5)
    q.add(make_pod("b"))
    a, b = q.try_pop(), q.try_pop()
    assert a is not None
    assert b is not None
    fail(q, a)  # timestamp 1000.5 -> expiry floor(1001.5) = 1001
    clock.advance(1)
    fail(q, b)  # timestamp 1001.5 -> expiry 1002
    assert q.pending_counts()["backoff"] == 2
    q.flush_backoff_completed()  # now 1001.5: a's expiry 1001 is not before floor(now)=1001
    assert q.pending_counts()["backoff"] == 2
    clock.advance(0.5)  # 1002: a is done, b (1002) is not
    q.flush_backoff_completed()
    assert q.where(a.pod) == "active"
    assert q.where(b.pod) == "backoff"
    clock.advance(1)
    q.flush_backoff_completed()
    assert q.pending_counts() == {"active": 2, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_pop_takes_rejected_pods_from_backoff_when_active_is_empty() -> None:
    """SchedulerPopFromBackoffQ: plugin-rejected pods may be popped early, errored pods may not."""
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("rejected"))
    q.add(make_pod("errored"))
    rejected, errored = q.try_pop(), q.try_pop()
    assert rejected is not None
    assert errored is not None
    fail(q, errored)
    fail(q, rejected, "P")
    q.node_added(Node("n"))
    assert q.pending_counts()["backoff"] == 2
    popped = q.try_pop()
    assert popped is rejected
    assert q.try_pop() is None
    assert q.where(errored.pod) == "backoff"


def test_pre_enqueue_runs_entering_backoff_not_leaving_it() -> None:
    framework = StubFramework()
    clock = FakeClock()
    q = PriorityQueue({"default-scheduler": framework}, clock)
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    fail(q, info)
    assert (q.where(info.pod), framework.pre_enqueue_calls) == ("backoff", 2)
    clock.advance(5)
    q.flush_backoff_completed()
    assert (q.where(info.pod), framework.pre_enqueue_calls) == ("active", 2)


def test_pod_backoff_settings_come_from_its_profile() -> None:
    clock = FakeClock()
    slow = StubFramework(profile=StubProfile(pod_initial_backoff_seconds=4, pod_max_backoff_seconds=60))
    q = PriorityQueue({"default-scheduler": StubFramework(), "slow": slow}, clock)
    q.add(make_pod("fast"))
    q.add(make_pod("slowpod", scheduler_name="slow"))
    infos = [q.try_pop(), q.try_pop()]
    for info in infos:
        assert info is not None
        fail(q, info)
    assert {i.pod.name: i.backoff_expiration - i.timestamp for i in infos if i} == {"fast": 1, "slowpod": 4}


# ---- unschedulable pool and cluster events -------------------------------------------------------


def unschedulable_pod(q: PriorityQueue, name: str, *plugins: str, priority: int = 0) -> QueuedPodInfo:
    q.add(make_pod(name, priority=priority))
    info = q.try_pop()
    assert info is not None
    assert info.pod.name == name
    fail(q, info, *plugins)
    assert q.where(info.pod) == "unschedulable"
    return info


@pytest.mark.parametrize(
    ("registered", "event", "step", "want"),
    [
        ([ClusterEventWithHint(NODE_ADD, queue_hint)], NODE_ADD, 0, "backoff"),  # still backing off
        ([ClusterEventWithHint(NODE_ADD, queue_hint)], NODE_ADD, 5, "active"),  # backoff over
        ([ClusterEventWithHint(NODE_ADD)], NODE_ADD, 5, "active"),  # no hint fn: Queue
        ([ClusterEventWithHint(NODE_ADD, skip_hint)], NODE_ADD, 5, "unschedulable"),
        ([ClusterEventWithHint(NODE_ADD, queue_hint)], EVENT_ASSIGNED_POD_ADD, 5, "unschedulable"),
        ([ClusterEventWithHint(NODE_UPDATE, queue_hint)], NODE_LABEL, 5, "active"),  # specific event
        ([ClusterEventWithHint(NODE_LABEL, queue_hint)], NODE_UPDATE, 5, "unschedulable"),  # general
        ([ClusterEventWithHint(NODE_ADD, queue_hint)], NODE_TAINT, 5, "active"),  # implicit NodeTaint
        ([ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ADD))], EVENT_ASSIGNED_POD_ADD, 5, "active"),
        ([], EVENT_UNSCHEDULABLE_TIMEOUT, 5, "active"),  # wildcard moves regardless of hints
        ([], EVENT_FORCE_ACTIVATE, 0, "backoff"),
    ],
)
def test_event_moves_unschedulable_pod(
    registered: list[ClusterEventWithHint], event: ClusterEvent, step: float, want: str
) -> None:
    q, clock = make_queue({"P": registered, "Other": [ClusterEventWithHint(NODE_ADD, queue_hint)]})
    info = unschedulable_pod(q, "p", "P")
    clock.advance(step)
    q.move_all_to_active_or_backoff(event, None, None)
    assert q.where(info.pod) == want


def test_only_hints_of_rejecting_plugins_count() -> None:
    q, clock = make_queue(
        {
            "P": [ClusterEventWithHint(NODE_ADD, skip_hint)],
            "Other": [ClusterEventWithHint(NODE_ADD, queue_hint)],
        }
    )
    info = unschedulable_pod(q, "p", "P")
    clock.advance(5)
    q.node_added(Node("n"))
    assert q.where(info.pod) == "unschedulable"


def test_pending_plugin_queue_skips_backoff() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, queue_hint)]})
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    fail(q, info, pending=["P"])
    q.node_added(Node("n"))  # backing off, but a pending plugin said Queue: activeQ
    assert q.where(info.pod) == "active"


def test_hint_that_raises_counts_as_queue() -> None:
    def broken(pod: Pod, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("boom")

    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD, broken)]})
    info = unschedulable_pod(q, "p", "P")
    clock.advance(5)
    q.node_added(Node("n"))
    assert q.where(info.pod) == "active"


def test_hints_receive_pod_old_and_new() -> None:
    calls: list[tuple[str, Any, Any]] = []

    def record(pod: Pod, old: Any, new: Any) -> QueueingHint:
        calls.append((pod.name, old, new))
        return QueueingHint.SKIP

    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_UPDATE, record)]})
    unschedulable_pod(q, "p", "P")
    old, new = Node("n", labels={"a": "1"}), Node("n", labels={"a": "2"})
    q.node_updated(old, new)
    assert calls == [("p", old, new)]


def test_precheck_limits_which_pods_move() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    low = unschedulable_pod(q, "low", "P", priority=1)
    high = unschedulable_pod(q, "high", "P", priority=9)
    clock.advance(5)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None, le_priority_precheck(5))
    assert (q.where(low.pod), q.where(high.pod)) == ("active", "unschedulable")


def test_assigned_pod_and_node_helpers_send_their_events() -> None:
    seen: list[str] = []

    def hint_for(label: str) -> Callable[[Pod, Any, Any], QueueingHint]:
        def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
            seen.append(label)
            return QueueingHint.SKIP

        return hint

    q, _ = make_queue(
        {
            "P": [
                ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ADD), hint_for("pod-add")),
                ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), hint_for("pod-delete")),
                ClusterEventWithHint(POD_LABEL, hint_for("pod-label")),
                ClusterEventWithHint(NODE_ADD, hint_for("node-add")),
                ClusterEventWithHint(NODE_TAINT, hint_for("node-taint")),
                ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.DELETE), hint_for("node-delete")),
            ]
        }
    )
    unschedulable_pod(q, "p", "P")
    bound = make_pod("bound", node_name="n")
    q.assigned_pod_added(bound)
    q.assigned_pod_updated(bound, make_pod("bound", node_name="n", labels={"x": "y"}))
    q.assigned_pod_deleted(bound)
    q.node_added(Node("n"))
    q.node_updated(Node("n"), Node("n", taints=(Taint("k"),)))
    q.node_updated(Node("n"), Node("n", labels={"only": "labels"}))  # nobody registered labels
    q.node_deleted(Node("n"))
    # A pod rejected by "P" has no cross-topology term: a pod added or relabelled elsewhere is not
    # offered to it (upstream's getUnschedulablePodsWithCrossTopologyTerm).
    assert seen == ["pod-delete", "node-add", "node-taint", "node-delete"]


def test_assigned_pod_events_reach_pods_with_a_cross_topology_term_only() -> None:
    """AssignedPodAdded / AssignedPodUpdated (v1.35): pods rejected by PodTopologySpread in the
    pod's namespace and pods with a required pod-affinity term the pod matches are offered the
    event; others only a scale-down (which may free room for any pod)."""
    offered: list[str] = []

    def hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
        offered.append(pod.name)
        return QueueingHint.SKIP

    q, _ = make_queue(
        {
            "PodTopologySpread": [ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ALL), hint)],
            "InterPodAffinity": [ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ALL), hint)],
            "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ALL), hint)],
        }
    )
    term = PodAffinityTerm("zone", LabelSelector(match_labels=(("app", "db"),)))
    with_affinity = make_pod("with-affinity", affinity=Affinity(pod_affinity=PodAffinity(required=(term,))))
    other_ns = make_pod("spread-elsewhere", namespace="other")
    for pod, plugin in (
        (make_pod("spread"), "PodTopologySpread"),
        (other_ns, "PodTopologySpread"),
        (with_affinity, "InterPodAffinity"),
        (make_pod("fit"), "NodeResourcesFit"),
    ):
        q.add(pod)
        info = q.try_pop()
        assert info is not None
        fail(q, info, plugin)
    db = make_pod("db", labels={"app": "db"}, node_name="n", cpu=100)
    q.assigned_pod_added(db)
    assert sorted(offered) == ["spread", "with-affinity"]
    offered.clear()
    q.assigned_pod_added(make_pod("web", labels={"app": "web"}, node_name="n"))
    assert offered == ["spread"]  # the affinity term does not match a web pod
    offered.clear()
    q.assigned_pod_updated(db, make_pod("db", labels={"app": "db"}, node_name="n", cpu=50))
    assert sorted(offered) == ["fit", "spread", "spread-elsewhere", "with-affinity"]  # scale-down


def test_unschedulable_timeout_flush_after_five_minutes() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    info = unschedulable_pod(q, "p", "P")
    clock.advance(300)
    q.flush_unschedulable_leftover()  # exactly 5 min: upstream requires strictly longer
    assert q.where(info.pod) == "unschedulable"
    clock.advance(0.5)
    q.flush_unschedulable_leftover()
    assert q.where(info.pod) == "active"
    assert q.incoming[("active", "UnschedulableTimeout")] == 1


def test_a_flushed_pod_is_marked_until_its_next_attempt_fails() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    info = unschedulable_pod(q, "p", "P")
    clock.advance(300.5)
    q.flush_unschedulable_leftover()
    popped = q.try_pop()
    assert popped is info
    assert popped.was_flushed_from_unschedulable  # bound now, it counts as scheduled after a flush
    popped.unschedulable_plugins = {"P"}
    q.add_unschedulable_if_not_present(popped)
    assert not info.was_flushed_from_unschedulable  # the attempt after the flush failed


def test_moved_event_is_counted_by_label() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    unschedulable_pod(q, "p", "P")
    clock.advance(5)
    q.node_added(Node("n"))
    assert q.incoming[("active", "NodeAdd")] == 1
    assert q.incoming[("unschedulable", "ScheduleAttemptFailure")] == 1


# ---- PreEnqueue gating ---------------------------------------------------------------------------


def test_gated_pod_is_never_popped_and_counted_apart() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    gated = make_pod("gated", scheduling_gates=("example.com/wait",))
    q.add(gated)
    assert q.where(gated) == "gated"
    info = q.get(gated)
    assert info is not None
    assert info.gating_plugin == "SchedulingGates"
    assert info.unschedulable_plugins == {"SchedulingGates"}
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert q.try_pop() is None
    q.node_added(Node("n"))  # not an event the gating plugin registered
    clock.advance(600)
    q.flush_unschedulable_leftover()  # UnschedulableTimeout does not match the gating events
    q.activate([gated])  # ForceActivate re-runs PreEnqueue: still gated
    assert q.where(gated) == "gated"
    assert q.try_pop() is None


def test_update_that_removes_gates_moves_pod_to_active() -> None:
    q, _ = make_queue()
    gated = make_pod("gated", scheduling_gates=("a", "b"))
    q.add(gated)
    fewer = make_pod("gated", scheduling_gates=("b",), resource_version="2")
    q.update(gated, fewer)
    assert q.where(fewer) == "gated"  # a gate remains
    open_pod = make_pod("gated", resource_version="3")
    q.update(fewer, open_pod)
    assert q.where(open_pod) == "active"
    info = q.try_pop()
    assert info is not None
    assert info.pod is open_pod
    assert not info.gated
    assert q.pending_counts()["gated"] == 0


def test_gates_eliminated_for_another_pod_does_not_ungate() -> None:
    q, _ = make_queue()
    gated = make_pod("gated", scheduling_gates=("a",))
    q.add(gated)
    other_old = make_pod("other", scheduling_gates=("a",))
    other_new = make_pod("other", node_name="n")
    q.move_all_to_active_or_backoff(GATES_GONE, other_old, other_new)
    assert q.where(gated) == "gated"


# ---- in-flight events ----------------------------------------------------------------------------


def test_event_during_attempt_sends_failed_pod_to_backoff() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, queue_hint)]})
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    q.node_added(Node("new-node"))  # arrives while p is being scheduled
    fail(q, info, "P")
    assert q.where(info.pod) == "backoff"
    assert q.in_flight_pods() == []


def test_event_before_pop_is_ignored_on_failure() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, queue_hint)]})
    q.add(make_pod("p"))
    q.add(make_pod("other"))
    first = q.try_pop()  # "p" in flight: the next event is logged
    q.node_added(Node("n1"))
    second = q.try_pop()
    assert first is not None
    assert second is not None
    fail(q, second, "P")  # n1 came before second's pop
    assert q.where(second.pod) == "unschedulable"
    fail(q, first, "P")  # but after first's
    assert q.where(first.pod) == "backoff"


def test_skip_hint_for_in_flight_event_keeps_pod_unschedulable() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    q.node_added(Node("n"))
    fail(q, info, "P")
    assert q.where(info.pod) == "unschedulable"


def test_update_of_in_flight_pod_is_recorded_and_replayed() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(POD_LABEL, same_pod_hint)]})
    pod = make_pod("p")
    q.add(pod)
    info = q.try_pop()
    assert info is not None
    relabeled = make_pod("p", labels={"a": "b"}, resource_version="2")
    q.update(pod, relabeled)
    assert q.where(relabeled) is None  # not re-added while in flight
    info.pod = relabeled  # the loop hands back the latest object
    fail(q, info, "P")
    assert q.where(relabeled) == "backoff"


def test_activate_in_flight_pod_requeues_it_when_it_fails() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    pod, other = make_pod("p"), make_pod("other")
    q.add(pod)
    q.add(other)
    info, other_info = q.try_pop(), q.try_pop()
    assert info is not None
    assert other_info is not None
    q.activate([pod])
    fail(q, other_info, "P")  # the ForceActivate targets p only
    assert q.where(other) == "unschedulable"
    fail(q, info, "P")
    assert q.where(pod) == "backoff"


def test_activate_moves_unschedulable_and_backoff_pods() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    unsched = unschedulable_pod(q, "u", "P")
    q.add(make_pod("b"))
    b = q.try_pop()
    assert b is not None
    fail(q, b)
    assert q.where(b.pod) == "backoff"
    q.activate([unsched.pod, b.pod, make_pod("unknown")])
    assert (q.where(unsched.pod), q.where(b.pod)) == ("active", "active")
    assert q.where(make_pod("unknown")) is None


def test_readding_a_queued_pod_is_refused_but_ends_flight() -> None:
    q, _ = make_queue()
    pod = make_pod("p")
    q.add(pod)
    info = q.try_pop()
    assert info is not None
    q.add(pod)  # e.g. a stale informer add
    info.unschedulable_plugins = {"P"}
    assert not q.add_unschedulable_if_not_present(info, q.scheduling_cycle)
    assert q.in_flight_pods() == []


def test_pop_discards_pod_already_in_flight() -> None:
    q, _ = make_queue()
    pod = make_pod("p")
    q.add(pod)
    assert pop_name(q) == "p"
    q.add(pod)  # simulated bug: the in-flight pod is queued again
    q.add(make_pod("q"))
    assert pop_name(q) == "q"
    assert len(q.active) == 0


pod1, pod2, pod3 = make_pod("targetpod"), make_pod("targetpod2"), make_pod("targetpod3")
HINTS_QUEUE = {"fooPlugin1": [ClusterEventWithHint(e, queue_hint) for e in (PV_ADD, NODE_ADD)]}


@dataclass
class Step:
    pop: Pod | None = None
    event: ClusterEvent | None = None
    enqueue: Pod | None = None  # the popped pod fails...
    plugins: tuple[str, ...] = ()  # ...rejected by these plugins
    pending: tuple[str, ...] = ()


@pytest.mark.parametrize(
    ("initial", "steps", "hints", "want_log", "want"),
    [
        pytest.param(
            [pod1],
            [Step(event=NODE_ADD), Step(pop=pod1), Step(event=PV_ADD), Step(event=NODE_UPDATE)],
            HINTS_QUEUE,
            [pod1, PV_ADD],
            {},
            id="interesting events are logged only while a pod is in flight",
        ),
        pytest.param(
            [pod1, pod2],
            [Step(pop=pod1), Step(event=PV_ADD), Step(pop=pod2), Step(event=NODE_ADD), Step(enqueue=pod1)],
            HINTS_QUEUE,
            [pod2, NODE_ADD],
            {"targetpod": "backoff"},
            id="a pod enqueued back leaves the log",
        ),
        pytest.param(
            [pod1, pod2, pod3],
            [
                Step(pop=pod1),
                Step(event=PV_ADD),
                Step(pop=pod2),
                Step(event=NODE_ADD),
                Step(pop=pod3),
                Step(event=EVENT_ASSIGNED_POD_ADD),
                Step(enqueue=pod2),
            ],
            {
                "fooPlugin1": [
                    ClusterEventWithHint(e, queue_hint) for e in (PV_ADD, NODE_ADD, EVENT_ASSIGNED_POD_ADD)
                ]
            },
            [pod1, PV_ADD, NODE_ADD, pod3, EVENT_ASSIGNED_POD_ADD],
            {"targetpod2": "backoff"},
            id="an intermediate pod leaves, older events stay for the first pod",
        ),
        pytest.param(
            [pod1],
            [
                Step(event=EVENT_UNSCHEDULABLE_TIMEOUT),
                Step(pop=pod1),
                Step(event=EVENT_ASSIGNED_POD_ADD),
                Step(enqueue=pod1, plugins=("fooPlugin1",)),
            ],
            {"fooPlugin1": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, skip_hint)]},
            [],
            {"targetpod": "unschedulable"},
            id="events before the pop are ignored",
        ),
        pytest.param(
            [pod1],
            [Step(pop=pod1), Step(event=NODE_ADD), Step(enqueue=pod1, plugins=("fooPlugin1",))],
            {"fooPlugin1": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, queue_hint)]},
            [],
            {"targetpod": "unschedulable"},
            id="no event that can make the pod schedulable",
        ),
        pytest.param(
            [pod1],
            [
                Step(pop=pod1),
                Step(event=EVENT_ASSIGNED_POD_ADD),
                Step(enqueue=pod1, plugins=("fooPlugin2", "fooPlugin3"), pending=("fooPlugin1",)),
            ],
            {
                "fooPlugin3": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, skip_hint)],
                "fooPlugin2": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, queue_hint)],
                "fooPlugin1": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, queue_hint)],
            },
            [],
            {"targetpod": "active"},
            id="pending plugin says Queue: activeQ",
        ),
        pytest.param(
            [pod1],
            [
                Step(pop=pod1),
                Step(event=EVENT_ASSIGNED_POD_ADD),
                Step(enqueue=pod1, plugins=("fooPlugin1", "fooPlugin2")),
            ],
            {
                "fooPlugin2": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, skip_hint)],
                "fooPlugin1": [ClusterEventWithHint(EVENT_ASSIGNED_POD_ADD, queue_hint)],
            },
            [],
            {"targetpod": "backoff"},
            id="unschedulable plugin says Queue: backoffQ",
        ),
    ],
)
def test_in_flight_pods(
    initial: list[Pod],
    steps: list[Step],
    hints: dict[str, list[ClusterEventWithHint]],
    want_log: list[Any],
    want: dict[str, str],
) -> None:
    """Port of upstream Test_InFlightPods."""
    q, clock = make_queue(hints)
    for pod in initial:
        q.add(pod)
        clock.advance(1)
    popped: dict[str, QueuedPodInfo] = {}
    for step in steps:
        if step.pop is not None:
            info = q.try_pop()
            assert info is not None
            assert info.pod.uid == step.pop.uid
            popped[info.pod.uid] = info
        elif step.event is not None:
            q.move_all_to_active_or_backoff(step.event, None, None)
        elif step.enqueue is not None:
            fail(q, popped[step.enqueue.uid], *step.plugins, pending=step.pending)
    got_log = [e.event if isinstance(e, InFlightEvent) else e for e in q.in_flight_log()]
    assert got_log == want_log
    for name, where in want.items():
        assert q.where(make_pod(name)) == where


# ---- is_pod_worth_requeuing (upstream Test_isPodWorthRequeuing) --------------------------------


def counting(hint: QueueingHint | None, counter: list[int]) -> Callable[[Pod, Any, Any], QueueingHint]:
    def fn(pod: Pod, old: Any, new: Any) -> QueueingHint:
        counter.append(1)
        if hint is None:
            raise RuntimeError("unexpected error")
        return hint

    return fn


Q, S, E = QueueingHint.QUEUE, QueueingHint.SKIP, None  # E: the hint raises


@pytest.mark.parametrize(
    ("unsched", "pending", "event", "new", "registered", "want", "calls"),
    [
        ({"foo1"}, set(), NODE_ADD, Node("n"), {"foo1": [(EVENT_ASSIGNED_POD_ADD, Q)]}, Strategy.SKIP, 0),
        ({"foo1"}, set(), NODE_ADD, Node("n"), {"foo1": [(NODE_ADD, E)]}, Strategy.AFTER_BACKOFF, 1),
        ({"foo1"}, set(), EVENT_UNSCHEDULABLE_TIMEOUT, None, {}, Strategy.AFTER_BACKOFF, 0),
        ({"foo1"}, set(), EVENT_FORCE_ACTIVATE, make_pod("pod1"), {}, Strategy.AFTER_BACKOFF, 0),
        ({"foo1"}, set(), EVENT_FORCE_ACTIVATE, make_pod("different"), {}, Strategy.SKIP, 0),
        (
            {"foo1", "foo3"},
            {"foo2"},
            NODE_ADD,
            Node("n"),
            {
                "foo1": [(NODE_ADD, Q)],
                "foo2": [(NODE_ADD, Q)],
                "foo3": [(NODE_ADD, Q)],
                "foo4": [(NODE_ADD, E)],
            },
            Strategy.IMMEDIATELY,
            2,
        ),
        (
            {"foo1", "foo2"},
            set(),
            NODE_ADD,
            Node("n"),
            {"foo1": [(NODE_ADD, S)], "foo2": [(NODE_ADD, Q)]},
            Strategy.AFTER_BACKOFF,
            2,
        ),
        (
            {"foo1", "foo2"},
            set(),
            NODE_ADD,
            Node("n"),
            {"foo1": [(NODE_ADD, S)], "foo2": [(NODE_ADD, S)], "foo3": [(NODE_ADD, Q)]},
            Strategy.SKIP,
            2,
        ),
        (
            {"foo1", "foo2"},
            set(),
            NODE_LABEL,
            Node("n"),
            {"foo1": [(NODE_LABEL, Q), (NODE_UPDATE, Q), (NODE_ADD, Q)], "foo2": [(NODE_LABEL, Q)]},
            Strategy.AFTER_BACKOFF,
            1,
        ),
        (
            {"foo1"},
            set(),
            NODE_ADD,
            Node("n"),
            {"foo1": [(ClusterEvent(Resource.WILDCARD, Action.ADD), Q)]},
            Strategy.AFTER_BACKOFF,
            1,
        ),
        (
            {"foo1"},
            set(),
            ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT),
            Node("n"),
            {"foo1": [(ClusterEvent(Resource.WILDCARD, Action.ALL), Q)]},
            Strategy.AFTER_BACKOFF,
            1,
        ),
        (set(), set(), NODE_ADD, Node("n"), {}, Strategy.AFTER_BACKOFF, 0),  # no rejector: any event
    ],
)
def test_is_pod_worth_requeuing(
    unsched: set[str],
    pending: set[str],
    event: ClusterEvent,
    new: Any,
    registered: dict[str, list[tuple[ClusterEvent, QueueingHint | None]]],
    want: Strategy,
    calls: int,
) -> None:
    counter: list[int] = []
    entries = build_hint_map(
        {
            plugin: [ClusterEventWithHint(ev, counting(hint, counter)) for ev, hint in items]
            for plugin, items in registered.items()
        }
    )
    info = QueuedPodInfo(
        make_pod("pod1"), timestamp=START, unschedulable_plugins=unsched, pending_plugins=pending
    )
    assert is_pod_worth_requeuing(info, event, None, new, entries) == want
    assert len(counter) == calls
    # The entries filtered for the event once (as one event offered to many pods is) decide alike.
    counter.clear()
    assert is_pod_worth_requeuing(info, event, None, new, entries_for_event(entries, event)) == want
    assert len(counter) == calls


# ---- event helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "incoming", "want"),
    [
        (NODE_UPDATE, NODE_LABEL, True),
        (NODE_LABEL, NODE_UPDATE, False),
        (ClusterEvent(Resource.POD, Action.ALL), EVENT_ASSIGNED_POD_ADD, True),
        (ClusterEvent(Resource.ASSIGNED_POD, Action.ADD), ClusterEvent(Resource.POD, Action.ADD), False),
        (ClusterEvent(Resource.WILDCARD, Action.ADD), NODE_ADD, True),
        (NODE_ADD, EVENT_UNSCHEDULABLE_TIMEOUT, False),
        (EVENT_UNSCHEDULABLE_TIMEOUT, NODE_ADD, True),
    ],
)
def test_match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent, want: bool) -> None:
    assert match_cluster_events(registered, incoming) is want


def test_pod_scheduling_properties_change() -> None:
    old = make_pod("p", labels={"a": "1"}, scheduling_gates=("g",))
    new = make_pod("p", labels={"a": "2"}, tolerations=(Toleration(key="k"),))
    got = pod_scheduling_properties_change(new, old)
    assert [e.action for e in got] == [
        Action.UPDATE_POD_LABEL,
        Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
        Action.UPDATE_POD_TOLERATION,
    ]
    assert all(e.resource == Resource.UNSCHEDULED_POD for e in got)
    bound = make_pod("p", node_name="n")
    assert pod_scheduling_properties_change(bound, make_pod("p", node_name="n")) == [
        ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE)
    ]


def test_node_scheduling_properties_change() -> None:
    old = Node("n", unschedulable=True, allocatable={"cpu": 1000})
    new = Node("n", unschedulable=False, allocatable={"cpu": 2000}, labels={"a": "b"})
    assert [e.action for e in node_scheduling_properties_change(new, old)] == [
        Action.UPDATE_NODE_TAINT,
        Action.UPDATE_NODE_ALLOCATABLE,
        Action.UPDATE_NODE_LABEL,
    ]
    assert node_scheduling_properties_change(old, new)[0].action == Action.UPDATE_NODE_ALLOCATABLE


# ---- delete, update, live frameworks -------------------------------------------------------------


def test_delete_removes_pod_from_every_sub_queue() -> None:
    q, _ = make_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    unsched = unschedulable_pod(q, "unsched", "P")
    q.add(make_pod("backoff"))
    backoff = q.try_pop()
    assert backoff is not None
    fail(q, backoff)
    active = make_pod("active", nominated_node_name="n1")
    q.add(active)
    gated = make_pod("gated", scheduling_gates=("g",))
    q.add(gated)
    assert q.nominated_pods_for_node("n1") == [active]
    assert q.pending_counts() == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}
    for pod in (unsched.pod, backoff.pod, active, gated):
        q.delete(pod)
        assert q.where(pod) is None
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert q.nominated_pods_for_node("n1") == []
    assert q.try_pop() is None


def test_update_of_unknown_pod_adds_it() -> None:
    q, _ = make_queue()
    pod = make_pod("p", resource_version="2")
    q.update(make_pod("p"), pod)
    assert q.where(pod) == "active"


def test_update_refreshes_backoff_pod() -> None:
    q, _ = make_queue()
    q.add(make_pod("p"))
    info = q.try_pop()
    assert info is not None
    fail(q, info)
    newer = make_pod("p", resource_version="9")
    q.update(info.pod, newer)
    assert q.where(newer) == "backoff"
    assert info.pod is newer


def test_update_with_matching_hint_moves_unschedulable_pod() -> None:
    q, clock = make_queue({"P": [ClusterEventWithHint(POD_LABEL, same_pod_hint)]})
    info = unschedulable_pod(q, "p", "P")
    clock.advance(5)
    q.update(info.pod, make_pod("p", resource_version="2"))  # no label change
    assert q.where(info.pod) == "unschedulable"
    q.update(info.pod, make_pod("p", labels={"x": "y"}, resource_version="3"))
    assert q.where(info.pod) == "active"


def test_replacing_frameworks_keeps_pods_and_resorts() -> None:
    clock = FakeClock()
    frameworks: dict[str, StubFramework] = {"default-scheduler": StubFramework(), "other": StubFramework()}
    q = PriorityQueue(frameworks, clock)
    for name, priority in [("a", 1), ("b", 3), ("c", 2)]:
        q.add(make_pod(name, priority=priority))
        clock.advance(1)
    q.add(make_pod("orphan", scheduler_name="other"))
    frameworks["default-scheduler"] = StubFramework(ascending=True)
    del frameworks["other"]
    dropped = q.resort()
    assert [p.name for p in dropped] == ["orphan"]
    assert [pop_name(q) for _ in range(4)] == ["a", "c", "b", None]


def test_resort_retries_unschedulable_and_gated_pods() -> None:
    clock = FakeClock()
    frameworks = {
        "default-scheduler": StubFramework(events={"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    }
    q = PriorityQueue(frameworks, clock)
    info = unschedulable_pod(q, "p", "P")
    gated = make_pod("gated", scheduling_gates=("g",))
    q.add(gated)
    clock.advance(5)
    q.resort(requeue_unschedulable=False)
    assert (q.where(info.pod), q.where(gated)) == ("unschedulable", "gated")
    frameworks["default-scheduler"] = StubFramework(gating_plugin="Other")
    q.resort()  # still gated (by the new gating plugin), the rejected pod is retried
    assert (q.where(info.pod), q.where(gated)) == ("active", "gated")
    gating = q.get(gated)
    assert gating is not None
    assert gating.gating_plugin == "Other"


def test_replaced_framework_hints_are_used() -> None:
    frameworks = {
        "default-scheduler": StubFramework(events={"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    }
    clock = FakeClock()
    q = PriorityQueue(frameworks, clock)
    info = unschedulable_pod(q, "p", "P")
    clock.advance(5)
    q.node_added(Node("n"))
    assert q.where(info.pod) == "unschedulable"
    frameworks["default-scheduler"] = StubFramework(
        events={"P": [ClusterEventWithHint(NODE_ADD, queue_hint)]}
    )
    q.node_added(Node("n"))  # no resort() needed for hints: the framework object changed
    assert q.where(info.pod) == "active"


def test_callable_framework_source() -> None:
    frameworks = {"default-scheduler": StubFramework()}
    q = PriorityQueue(lambda: frameworks, FakeClock())
    q.add(make_pod("p"))
    assert pop_name(q) == "p"


def test_nominated_node_from_status_is_registered_on_add() -> None:
    q, _ = make_queue()
    pod = make_pod("p", nominated_node_name="n1")
    q.add(pod)
    assert q.nominated_pods_for_node("n1") == [pod]
    moved = make_pod("p", nominated_node_name="n2", resource_version="2")
    q.update(pod, moved)
    assert q.nominated_pods_for_node("n1") == []
    assert q.nominated_pods_for_node("n2") == [moved]


# ---- asyncio -------------------------------------------------------------------------------------


def async_queue(
    events: dict[str, list[ClusterEventWithHint]] | None = None,
) -> tuple[SchedulingQueue, FakeClock]:
    clock = FakeClock()
    return SchedulingQueue({"default-scheduler": StubFramework(events=events or {})}, clock), clock


async def test_pop_waits_until_a_pod_is_added() -> None:
    q, _ = async_queue()
    task = asyncio.create_task(q.pop())
    await settle()
    assert not task.done()
    q.add(make_pod("p"))
    info = await asyncio.wait_for(task, 1)
    assert info.pod.name == "p"


async def test_pop_wakes_when_an_event_moves_a_pod() -> None:
    q, clock = async_queue({"P": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    info = await q.pop()
    fail(q, info, "P")
    task = asyncio.create_task(q.pop())
    await settle()
    assert not task.done()
    clock.advance(5)
    q.node_added(Node("n"))
    assert (await asyncio.wait_for(task, 1)).pod.name == "p"


async def test_close_wakes_waiters() -> None:
    q, _ = async_queue()
    task = asyncio.create_task(q.pop())
    await settle()
    q.close()
    with pytest.raises(QueueClosed):
        await asyncio.wait_for(task, 1)
    with pytest.raises(QueueClosed):
        await q.pop()


async def test_flushers_move_backoff_and_leftover_pods() -> None:
    q, clock = async_queue({"P": [ClusterEventWithHint(NODE_ADD, skip_hint)]})
    q.add(make_pod("backoff"))
    q.add(make_pod("stuck"))
    backoff, stuck = await q.pop(), await q.pop()
    fail(q, backoff)
    fail(q, stuck, "P")
    runner = asyncio.create_task(q.run_flushers(backoff_interval=0.01, unschedulable_interval=0.02))
    clock.advance(400)
    await eventually(lambda: q.pending_counts()["active"] == 2)
    assert q.pending_counts() == {"active": 2, "backoff": 0, "unschedulable": 0, "gated": 0}
    q.close()
    await asyncio.wait_for(runner, 1)
