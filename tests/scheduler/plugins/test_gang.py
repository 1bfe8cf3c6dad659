"""Gang scheduling on the engine (in memory, fake clock): Coscheduling with PodGroups."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult, QueuedPodInfo
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.gang import POD_GROUP_LABEL, PodGroup
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import GANG_MEMBER, EvictionPolicyConfig
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.queue.hints import Strategy, is_pod_worth_requeuing
from tests.aio import settle
from tests.fakeclock import FakeClock


def gang_profile(**args: Any) -> ResolvedProfile:
    config = ProfileConfig(
        plugins={
            "multiPoint": PluginSet(enabled=(PluginRef("Coscheduling"),)),
            "queueSort": PluginSet(disabled=(PluginRef("PrioritySort"),)),
        },
        plugin_config={"Coscheduling": args} if args else {},
    )
    return resolve_profile(config, implemented_plugin_names())


class Hooks:
    def __init__(self) -> None:
        self.failures: dict[str, str] = {}
        self.scheduled_on: dict[str, str] = {}
        self.preemptions: list[tuple[str, str, list[str]]] = []

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self.scheduled_on[pod.name] = node_name

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        self.failures[pod.name] = message

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        self.preemptions.append(
            (pod.name, result.nominated_node_name, sorted(v.name for v in result.victims))
        )

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        pass


class Binder:
    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.bound: dict[str, str] = {}

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        self.bound[pod.name] = node_name
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


@dataclasses.dataclass
class World:
    engine: Engine
    hooks: Hooks
    binder: Binder
    clock: FakeClock

    def group(self, name: str, min_member: int, created: float = 0.0, **kw: Any) -> None:
        self.engine.pod_group_set(PodGroup("default", name, min_member, creation_timestamp=created, **kw))

    def member(self, name: str, group: str, cpu: int = 100, priority: int = 0) -> None:
        self.engine.pod_added(
            Pod(
                name,
                uid=name,
                labels={POD_GROUP_LABEL: group},
                priority=priority,
                containers=(Container("c", requests={"cpu": cpu}),),
            )
        )

    def node(self, name: str, cpu: int) -> None:
        self.engine.node_added(Node(name, allocatable={"cpu": cpu, "memory": 1 << 34, "pods": 110}))

    def bound_in(self, group: str) -> list[str]:
        return [p for p in self.binder.bound if p.startswith(group + "-")]

    def run(self, rounds: int = 6, step: float = 20.0) -> None:
        """Schedule until idle; then move the fake clock past backoffs and Permit timeouts, repeat."""

        async def loop() -> None:
            for _ in range(rounds):
                for _ in range(200):
                    progressed = self.engine.schedule_next()
                    await settle(4)  # binding tasks: permit allow, bind, watch event
                    if not progressed:
                        break
                self.clock.advance(step)
                self.engine.reject_expired_waiting_pods()
                await settle(4)
                self.engine.queue.flush_backoff_completed()
                self.engine.queue.flush_unschedulable_leftover()
            for task in list(self.engine.scheduler.binding_tasks):
                task.cancel()
            await asyncio.gather(*self.engine.scheduler.binding_tasks, return_exceptions=True)

        asyncio.run(loop())


def world(*nodes: int, policy: EvictionPolicyConfig | None = None, **args: Any) -> World:
    hooks, binder, clock = Hooks(), Binder(), FakeClock()
    services = ClusterServices(eviction_policy=lambda _name: policy)
    engine = Engine(hooks=hooks, binder=binder, seed=3, clock=clock, services=services)
    binder.engine = engine
    engine.set_profiles([gang_profile(**args)])
    w = World(engine, hooks, binder, clock)
    for i, cpu in enumerate(nodes):
        w.node(f"n{i}", cpu)
    return w


def test_a_group_below_min_member_never_binds_and_says_why() -> None:
    w = world(1000, 1000)
    w.group("g", 3)
    w.member("g-0", "g")
    w.member("g-1", "g")
    w.run()
    assert w.binder.bound == {}
    assert w.engine.queue.where(w.engine.unassigned["default/g-0"]) == "gated"
    state = w.engine.pod_groups.state("default/g")
    assert "cannot find enough sibling pods, current pods number: 2, minMember of group: 3" in state.message
    w.member("g-2", "g")
    w.run()
    assert sorted(w.binder.bound) == ["g-0", "g-1", "g-2"]
    assert w.engine.pod_groups.state("default/g").message == ""


def test_eight_pods_where_six_fit_stay_fully_pending_then_bind_when_nodes_arrive() -> None:
    w = world(300, 300)  # 6 x 100m fit
    w.group("g", 8, min_resources={"cpu": 800})
    for i in range(8):
        w.member(f"g-{i}", "g")
    w.run()
    assert w.binder.bound == {}
    assert w.engine.table.requested.sum() == 0, "minResources: no member holds a node"
    assert w.engine.pod_groups.state("default/g").message == "resource gap: map[cpu:200]"
    w.node("n2", 100)
    w.node("n3", 100)
    w.run()
    assert len(w.binder.bound) == 8


def test_without_min_resources_a_failing_member_releases_its_waiting_siblings() -> None:
    w = world(300, 300)
    w.group("g", 8)
    for i in range(8):
        w.member(f"g-{i}", "g")
    assigned: list[int] = []

    async def seven_cycles() -> None:
        for _ in range(7):
            assert w.engine.schedule_next()
            await settle(4)
            assigned.append(len(w.engine.pod_groups.assigned("default/g")))

    asyncio.run(seven_cycles())
    # Six members wait at Permit holding the room; the seventh fits nowhere and releases all six.
    assert assigned == [1, 2, 3, 4, 5, 6, 0]
    assert w.binder.bound == {}
    message = w.engine.pod_groups.state("default/g").message
    assert message.startswith("PodGroup default/g gets rejected due to Pod g-")
    assert message.endswith(" is unschedulable even after PostFilter")


def test_a_timed_out_group_releases_everything_and_a_normal_pod_then_fits() -> None:
    # minResources passes, but one member can never fit (too big for any node): the others wait
    # at Permit, and the group's timeout releases all of them at once.
    w = world(500, 500, permitWaitingTimeSeconds=10)
    w.group("g", 4)
    for i in range(3):
        w.member(f"g-{i}", "g", cpu=300)
    w.member("g-3", "g", cpu=900)
    w.run()
    assert w.binder.bound == {}
    assert w.engine.table.requested.sum() == 0
    w.engine.pod_added(Pod("plain", uid="plain", containers=(Container("c", requests={"cpu": 500}),)))
    w.run()
    assert "plain" in w.binder.bound


def test_two_gangs_that_cannot_both_fit_end_one_complete_one_pending() -> None:
    w = world(400, 400)
    w.group("a", 4, created=10.0)
    w.group("b", 4, created=5.0)  # older: goes first
    for i in range(4):
        w.member(f"a-{i}", "a", cpu=200)
        w.member(f"b-{i}", "b", cpu=200)
    w.run()
    assert len(w.bound_in("b")) == 4
    assert w.bound_in("a") == []


def test_higher_priority_group_goes_first() -> None:
    w = world(400, 400)
    w.group("a", 4, created=5.0)
    w.group("b", 4, created=10.0)
    for i in range(4):
        w.member(f"a-{i}", "a", cpu=200)
        w.member(f"b-{i}", "b", cpu=200, priority=10)
    w.run()
    assert len(w.bound_in("b")) == 4
    assert w.bound_in("a") == []


def test_a_new_member_is_offered_only_to_its_siblings_once_the_group_is_complete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world(1000)
    for i in range(3):  # unrelated pods that fit nowhere sit in the unschedulable pool
        w.engine.pod_added(
            Pod(f"big-{i}", uid=f"big-{i}", containers=(Container("c", requests={"cpu": 9000}),))
        )
    w.run(rounds=1)
    offered: list[str] = []

    def spy(info: QueuedPodInfo, *args: Any) -> Strategy:
        offered.append(info.pod.name)
        return is_pod_worth_requeuing(info, *args)

    monkeypatch.setattr("policy_scheduler.scheduler.queue.core.is_pod_worth_requeuing", spy)
    w.group("g", 4)
    offered.clear()  # the PodGroup's own event is offered to everyone, as upstream
    for i in range(4):
        w.member(f"g-{i}", "g")
    # Members 1-3 wake nobody (PreEnqueue would hold every sibling again); the 4th its 3 siblings.
    assert sorted(offered) == ["g-0", "g-1", "g-2"]
    w.run()
    assert sorted(w.bound_in("g")) == ["g-0", "g-1", "g-2", "g-3"]


def test_pods_of_a_missing_group_wait_with_a_reason() -> None:
    w = world(1000)
    w.member("x-0", "missing")
    w.run()
    assert w.binder.bound == {}
    assert "PodGroup not found" in w.engine.pod_groups.state("default/missing").message
    w.group("missing", 1)
    w.run()
    assert "x-0" in w.binder.bound


def evict(w: World, names: list[str]) -> None:
    for name in names:
        stored = w.engine.cache.get_pod(f"default/{name}")
        assert stored is not None
        w.engine.pod_deleted(stored)
        w.binder.bound.pop(name, None)


def test_a_high_priority_gang_preempts_a_low_priority_gang_as_a_whole() -> None:
    w = world(400, 400)
    w.group("low", 3, created=1.0)
    for i in range(4):
        w.member(f"low-{i}", "low", cpu=200)
    w.run()
    assert len(w.bound_in("low")) == 4
    w.group("high", 4, created=2.0)
    for i in range(4):
        w.member(f"high-{i}", "high", cpu=200, priority=100)
    w.run(rounds=1)
    assert w.hooks.preemptions, "the gang preempted"
    preemptor, _node, victims = w.hooks.preemptions[0]
    assert preemptor.startswith("high-")
    # Room for all four members at once, and the low group goes whole (gangDisruption Whole).
    assert victims == ["low-0", "low-1", "low-2", "low-3"]
    evict(w, victims)
    w.run()
    assert len(w.bound_in("high")) == 4
    assert w.bound_in("low") == []


def test_a_preempting_gang_nominates_every_member_that_uses_freed_room() -> None:
    w = world(400, 400)
    w.group("low", 4, created=1.0)
    for i in range(4):
        w.member(f"low-{i}", "low", cpu=200)
    w.run()
    w.group("high", 4, created=2.0)
    for i in range(4):
        w.member(f"high-{i}", "high", cpu=200, priority=100)

    async def one_cycle() -> None:
        assert w.engine.schedule_next()
        await settle(4)

    asyncio.run(one_cycle())  # the first member preempts; its siblings have not been tried yet
    [(preemptor, node, victims)] = w.hooks.preemptions
    nominator = w.engine.queue.nominator
    nominated = {
        name: nominator.nominated_node_name(w.engine.unassigned[f"default/{name}"])
        for name in (f"high-{i}" for i in range(4))
    }
    assert nominated[preemptor] == node
    # Each member holds one 200m half of a freed node: two per node, none left out.
    assert Counter(nominated.values()) == {"n0": 2, "n1": 2}
    evict(w, victims)
    # A lower-priority pod arriving while the members back off must not take their room.
    w.engine.pod_added(
        Pod("intruder", uid="intruder", priority=50, containers=(Container("c", requests={"cpu": 200}),))
    )
    w.run()
    assert len(w.bound_in("high")) == 4
    assert "intruder" not in w.binder.bound


def test_a_gang_preempts_for_every_member_or_for_none() -> None:
    w = world(400, 400)
    # Half the room is held by pods nobody may preempt (priority 1000).
    w.engine.pod_added(
        Pod(
            "big",
            uid="big",
            priority=1000,
            node_name="n0",
            containers=(Container("c", requests={"cpu": 400}),),
        )
    )
    for i in range(2):
        w.engine.pod_added(
            Pod(
                f"small-{i}",
                uid=f"small-{i}",
                node_name="n1",
                containers=(Container("c", requests={"cpu": 200}),),
            )
        )
    w.group("high", 4)
    for i in range(4):
        w.member(f"high-{i}", "high", cpu=200, priority=100)
    w.run(rounds=2)
    assert w.hooks.preemptions == [], "two members could get room, four cannot: no victims at all"
    assert w.binder.bound == {}


def test_a_lone_pod_takes_a_gang_member_only_with_its_group_unless_member_mode() -> None:
    for policy, expected in ((None, ["g-0", "g-1"]), (EvictionPolicyConfig(gang_disruption=GANG_MEMBER), 1)):
        w = world(200, 200, policy=policy)
        w.group("g", 2)
        for i in range(2):
            w.member(f"g-{i}", "g", cpu=200)
        w.run()
        assert len(w.bound_in("g")) == 2
        w.engine.pod_added(
            Pod("vip", uid="vip", priority=100, containers=(Container("c", requests={"cpu": 200}),))
        )
        w.run(rounds=1)
        victims = w.hooks.preemptions[0][2]
        if isinstance(expected, int):
            assert len(victims) == expected
            assert victims[0].startswith("g-")
        else:
            assert victims == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    groups=st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 3), st.integers(1, 4), st.integers(0, 2)),
        min_size=1,
        max_size=4,
    ),
)
def test_property_groups_bind_whole_or_not_at_all(
    nodes: list[int], groups: list[tuple[int, int, int, int]]
) -> None:
    """Random gang mixes: every group ends with zero bound members or at least minMember, and no
    node holds more than its capacity."""
    w = world(*[n * 100 for n in nodes], permitWaitingTimeSeconds=15)
    minimum: dict[str, int] = {}
    for g, (min_member, extra, cpu, prio) in enumerate(groups):
        name = f"g{g}"
        minimum[name] = min_member
        w.group(name, min_member, created=float(g))
        for i in range(min_member + extra):
            w.member(f"{name}-{i}", name, cpu=cpu * 100, priority=prio)
    w.run(rounds=8)
    per_group = Counter(pod.split("-")[0] for pod in w.binder.bound)
    for name, count in per_group.items():
        assert count >= minimum[name], (name, count, minimum[name])
    table = w.engine.table
    cpu = table.resource_index["cpu"]
    for row in range(len(table)):
        assert table.requested[cpu, row] <= table.allocatable[cpu, row]
        bound = [p for p in table.pods_on(row) if p.name in w.binder.bound]
        assert sum(p.requests["cpu"] for p in bound) <= table.allocatable[cpu, row]
