"""Engine: live profiles, cluster events into the cache and queue, and the scheduling loop."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.cycle_failure import REASON_UNSCHEDULABLE
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.interfaces import NotLeading, PostFilterResult
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from tests.builders import make_pod
from tests.fakeclock import FakeClock


def profile(name: str = "default-scheduler", **kw: Any) -> ResolvedProfile:
    return resolve_profile(ProfileConfig(scheduler_name=name, **kw), implemented_plugin_names())


class Hooks:
    def __init__(self) -> None:
        self.failures: list[tuple[str, str, str]] = []
        self.scheduled_on: dict[str, str] = {}

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self.scheduled_on[pod.name] = node_name

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        self.failures.append((pod.name, reason, message))

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        pass

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        pass


class WatchingBinder:
    """Binds in memory and feeds the bound pod back, as the API watch would."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        self.bound.append((pod.name, node_name))
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


class FencedBinder(WatchingBinder):
    """Refuses (NotLeading) while closed, as the API binder does once the lease lapsed."""

    def __init__(self) -> None:
        super().__init__()
        self.open = True
        self.refused: list[str] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        if not self.open:
            self.refused.append(pod.name)
            raise NotLeading("the test closed the fence")
        await super().bind(pod, node_name)


def make_engine(
    *profiles: ResolvedProfile, nodes: int = 2, cpu: int = 1000
) -> tuple[Engine, Hooks, FencedBinder, FakeClock]:
    hooks, binder, clock = Hooks(), FencedBinder(), FakeClock(now=5000.0)
    engine = Engine(hooks=hooks, binder=binder, seed=7, clock=clock)
    binder.engine = engine
    engine.set_profiles(profiles or (profile(),))
    for i in range(nodes):
        engine.node_added(Node(f"n{i}", allocatable={"cpu": cpu, "memory": 1 << 32, "pods": 110}))
    return engine, hooks, binder, clock


def run_all(engine: Engine) -> int:
    async def loop() -> int:
        cycles = 0
        while engine.schedule_next():
            cycles += 1
            await engine.scheduler.drain_binding()
        return cycles

    return asyncio.run(loop())


def cpu_on(engine: Engine, node: str) -> int:
    table = engine.table
    return int(table.requested[table.resource_index["cpu"], table.row(node)])


# ---- profiles ---------------------------------------------------------------------------------------


def test_unchanged_profile_keeps_its_framework_object() -> None:
    engine, *_ = make_engine(profile("a"), profile("b"))
    a, b = engine.frameworks["a"], engine.frameworks["b"]
    engine.set_profiles([profile("a"), profile("b", percentage_of_nodes_to_score=50)])
    assert engine.frameworks["a"] is a
    assert engine.frameworks["b"] is not b
    assert engine.frameworks["b"].profile.percentage_of_nodes_to_score == 50
    # Each framework has its own handle pointing back at it, sharing the engine's table.
    assert engine.frameworks["b"].handle.framework is engine.frameworks["b"]
    assert engine.frameworks["b"].handle.table is engine.table


def test_replacing_a_profile_keeps_queued_pods() -> None:
    engine, hooks, *_ = make_engine(profile("a"))
    engine.pod_added(make_pod("p1", cpu=100, scheduler_name="a"))
    engine.pod_added(make_pod("p2", cpu=100, scheduler_name="a"))
    engine.set_profiles([profile("a", percentage_of_nodes_to_score=100)])
    assert {p.name for p in engine.queue.pending_pods()} == {"p1", "p2"}
    assert hooks.failures == []
    assert run_all(engine) == 2
    assert set(hooks.scheduled_on) == {"p1", "p2"}


def test_retry_pending_activates_one_profiles_unschedulable_pods() -> None:
    engine, *_ = make_engine(profile("a"), profile("b"), nodes=1, cpu=1000)
    engine.pod_added(make_pod("big", cpu=800, scheduler_name="a"))
    engine.pod_added(make_pod("second", cpu=800, scheduler_name="a"))
    engine.pod_added(make_pod("other", cpu=800, scheduler_name="b"))
    run_all(engine)
    waiting = {p.name for p in engine.queue.pending_pods() if engine.queue.where(p) == "unschedulable"}
    assert waiting == {"second", "other"}
    engine.retry_pending("a")
    assert (
        engine.queue.where(make_pod("second", cpu=100, scheduler_name="a")) == "active"
    )  # no backoff, no flush wait
    assert engine.queue.where(make_pod("other", cpu=100, scheduler_name="b")) == "unschedulable"


def test_removed_profile_drops_its_pods_and_reports_them() -> None:
    engine, hooks, *_ = make_engine(profile("a"), profile("b"))
    engine.pod_added(make_pod("pa", cpu=100, scheduler_name="a"))
    engine.pod_added(make_pod("pb", cpu=100, scheduler_name="b"))
    engine.set_profiles([profile("a")])
    assert [p.name for p in engine.queue.pending_pods()] == ["pa"]
    assert hooks.failures == [
        ("pb", REASON_UNSCHEDULABLE, "no SchedulingProfile serves schedulerName 'b' any more")
    ]
    assert not engine.responsible_for(make_pod("pb", cpu=100, scheduler_name="b"))
    run_all(engine)
    assert set(hooks.scheduled_on) == {"pa"}


def test_pods_of_a_profile_created_later_are_queued() -> None:
    engine, hooks, *_ = make_engine(profile("a"))
    engine.pod_added(make_pod("early", cpu=100, scheduler_name="late"))
    engine.pod_added(make_pod("dying", cpu=100, scheduler_name="late", deletion_timestamp=1.0))
    assert engine.queue.pending_pods() == []
    assert run_all(engine) == 0
    engine.set_profiles([profile("a"), profile("late")])
    assert [p.name for p in engine.queue.pending_pods()] == ["early"]
    run_all(engine)
    assert "early" in hooks.scheduled_on
    assert "dying" not in hooks.scheduled_on


def test_profile_removed_then_restored_requeues_its_pods() -> None:
    engine, hooks, *_ = make_engine(profile("a"), profile("b"))
    engine.pod_added(make_pod("pb", cpu=100, scheduler_name="b"))
    engine.set_profiles([profile("a")])
    engine.set_profiles([profile("a"), profile("b")])
    assert [p.name for p in engine.queue.pending_pods()] == ["pb"]
    run_all(engine)
    assert "pb" in hooks.scheduled_on


# ---- events into the cache -----------------------------------------------------------------------------


def test_bound_pods_update_the_cache() -> None:
    engine, *_ = make_engine()
    bound = make_pod("running", cpu=300, node_name="n1")
    engine.pod_added(bound)
    assert cpu_on(engine, "n1") == 300
    assert engine.queue.pending_pods() == []
    assert "default/running" not in engine.unassigned
    engine.pod_updated(bound, dataclasses.replace(bound, containers=(Container("c", requests={"cpu": 500}),)))
    assert cpu_on(engine, "n1") == 500
    engine.pod_deleted(bound)
    assert cpu_on(engine, "n1") == 0


def test_bound_pod_of_unknown_node_is_placed_when_the_node_arrives() -> None:
    engine, *_ = make_engine()
    engine.pod_added(make_pod("early", cpu=250, node_name="n9"))
    engine.node_added(Node("n9", allocatable={"cpu": 1000}))
    assert cpu_on(engine, "n9") == 250


def test_schedule_and_bind_through_the_binder() -> None:
    engine, hooks, binder, _ = make_engine(nodes=1)
    engine.pod_added(make_pod("p", cpu=600))
    assert run_all(engine) == 1
    assert binder.bound == [("p", "n0")]
    assert hooks.scheduled_on == {"p": "n0"}
    stored = engine.cache.get_pod("default/p")
    assert stored is not None
    assert stored.node_name == "n0"
    assert not engine.cache.is_assumed(stored), "the watch event confirmed the assumed pod"
    assert cpu_on(engine, "n0") == 600
    assert "default/p" not in engine.unassigned


def test_pods_that_do_not_fit_wait_and_are_retried_when_room_appears() -> None:
    engine, hooks, _, clock = make_engine(nodes=1, cpu=1000)
    engine.pod_added(make_pod("big", cpu=800))
    engine.pod_added(make_pod("second", cpu=800))
    run_all(engine)
    assert hooks.scheduled_on == {"big": "n0"}
    name, reason, message = hooks.failures[-1]
    assert (name, reason) == ("second", REASON_UNSCHEDULABLE)
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert engine.queue.where(make_pod("second", cpu=100)) == "unschedulable"
    engine.pod_deleted(engine.cache.get_pod("default/big") or make_pod("big", cpu=100))
    clock.advance(20)  # past any backoff
    engine.queue.flush_backoff_completed()
    run_all(engine)
    assert hooks.scheduled_on.get("second") == "n0"


def test_malformed_pod_is_reported_with_its_message() -> None:
    engine, hooks, *_ = make_engine()
    bad = make_pod(
        "bad", cpu=100, malformed='spec.containers[0].resources.requests.cpu: invalid quantity "lots"'
    )
    engine.pod_added(bad)
    assert run_all(engine) == 1
    assert hooks.failures == [
        ("bad", REASON_UNSCHEDULABLE, 'spec.containers[0].resources.requests.cpu: invalid quantity "lots"')
    ]
    assert hooks.scheduled_on == {}
    assert engine.cache.get_pod(bad.key) is None


def test_pod_of_another_scheduler_is_tracked_but_not_queued() -> None:
    engine, hooks, *_ = make_engine()
    engine.pod_added(make_pod("foreign", cpu=100, scheduler_name="someone-else"))
    assert run_all(engine) == 0
    assert "default/foreign" in engine.unassigned
    assert hooks.failures == []


def test_deleting_a_pending_pod_removes_it_from_the_queue() -> None:
    engine, *_ = make_engine()
    p = make_pod("p", cpu=100)
    engine.pod_added(p)
    engine.pod_deleted(p)
    assert engine.queue.pending_pods() == []
    assert run_all(engine) == 0


def test_node_events_reach_the_table() -> None:
    engine, *_ = make_engine(nodes=0)
    node = Node("x", allocatable={"cpu": 100})
    engine.node_added(node)
    assert "x" in engine.table
    engine.node_updated(node, Node("x", labels={"k": "v"}, allocatable={"cpu": 200}))
    assert int(engine.table.allocatable[engine.table.resource_index["cpu"], 0]) == 200
    engine.node_deleted(node)
    assert "x" not in engine.table


@pytest.mark.parametrize("seed", [1, 2])
def test_engine_seed_makes_runs_repeatable(seed: int) -> None:
    def run() -> dict[str, str]:
        hooks, binder = Hooks(), WatchingBinder()
        engine = Engine(hooks=hooks, binder=binder, seed=seed, clock=FakeClock(now=5000.0))
        binder.engine = engine
        engine.set_profiles([profile(plugins={"score": PluginSet(disabled=(PluginRef("*"),))})])
        for i in range(6):
            engine.node_added(Node(f"n{i}", allocatable={"cpu": 10_000, "memory": 1 << 34, "pods": 110}))
        for i in range(12):
            engine.pod_added(make_pod(f"p{i}", cpu=10))
        run_all(engine)
        return hooks.scheduled_on

    assert run() == run()


# ---- leadership ---------------------------------------------------------------------------------


async def test_standby_schedules_as_soon_as_it_leads() -> None:
    """A paused loop waits for leadership itself (no polling): the first cycle follows it."""
    engine, _, binder, _ = make_engine()
    leading = asyncio.Event()
    engine.pod_added(make_pod("p", cpu=100))
    runner = asyncio.create_task(engine.run(leading.is_set, leading.wait))
    for _ in range(20):  # the loop pops the pod, finds it is no leader and parks
        await asyncio.sleep(0)
    assert binder.bound == []
    leading.set()
    for _ in range(20):
        await asyncio.sleep(0)
        if binder.bound:
            break
    assert [name for name, _ in binder.bound] == ["p"]
    engine.close()
    await runner


def test_a_binding_the_fence_refuses_is_dropped_and_the_pod_requeued_untouched() -> None:
    """The decision was taken while leading; its write came after the lease lapsed. The assumed
    pod is forgotten (its node's room is free again), nothing is reported, and the pod waits in
    activeQ for whoever leads."""
    engine, hooks, binder, _ = make_engine(nodes=1, cpu=1000)
    binder.open = False
    pod = make_pod("p", cpu=800)
    engine.pod_added(pod)

    async def one_cycle() -> None:
        assert engine.schedule_next()
        await engine.scheduler.drain_binding()

    asyncio.run(one_cycle())
    assert binder.refused == ["p"]
    assert binder.bound == []
    assert hooks.failures == []
    assert hooks.scheduled_on == {}
    assert engine.cache.get_pod("default/p") is None, "the assumed pod is forgotten"
    assert cpu_on(engine, "n0") == 0
    assert engine.queue.where(pod) == "active"
    [queued] = engine.queue.pending_pods()
    assert queued.key == "default/p"
    binder.open = True  # leading again
    assert run_all(engine) == 1
    assert binder.bound == [("p", "n0")]
    assert cpu_on(engine, "n0") == 800
