"""The Workload API's gangs on the engine (in memory, fake clock): the default profile of v1.37
with GenericWorkload on, so GangScheduling is in it, fed scheduling.k8s.io PodGroups."""

from __future__ import annotations

import dataclasses

from policy_scheduler.apiobjects.workloads import pod_group_from_dict, workload_from_dict
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.gang import POD_GROUP_LABEL, PodGroup
from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_37, KubernetesVersion
from tests.fakeclock import FakeClock
from tests.scheduler.plugins.test_gang import Binder, Hooks, World


def workload_world(*nodes: int, version: KubernetesVersion = V1_37) -> World:
    hooks, binder, clock = Hooks(), Binder(), FakeClock()
    engine = Engine(hooks=hooks, binder=binder, seed=3, clock=clock, services=ClusterServices())
    binder.engine = engine
    gates = (
        (("GenericWorkload", True),)
        if version == V1_37
        else (("GenericWorkload", True), ("GangScheduling", True))
    )
    features = Features(version, gates)
    engine.set_profiles([resolve_profile(ProfileConfig(), features=features)])
    w = World(engine, hooks, binder, clock)
    for i, cpu in enumerate(nodes):
        w.node(f"n{i}", cpu)
    return w


def pod_group(name: str, min_count: int | None) -> PodGroup:
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return pod_group_from_dict(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy}}
    )


def member(w: World, name: str, group: str, cpu: int = 100) -> None:
    w.engine.pod_added(
        Pod(name, uid=name, scheduling_group=group, containers=(Container("c", requests={"cpu": cpu}),))
    )


def test_the_default_profile_has_gang_scheduling_with_the_gate() -> None:
    w = workload_world(1000)
    points = w.engine.frameworks["default-scheduler"].profile.points
    assert "GangScheduling" in {ref.name for ref in points["preEnqueue"]}
    assert "GangScheduling" in {ref.name for ref in points["permit"]}


def test_a_gang_waits_for_its_pod_group_and_min_count_then_binds_whole() -> None:
    w = workload_world(1000, 1000)
    member(w, "g-0", "g")
    member(w, "g-1", "g")
    w.run()
    assert w.binder.bound == {}
    assert w.engine.queue.where(w.engine.unassigned["default/g-0"]) == "gated"
    w.engine.workload_group_set(pod_group("g", 3))
    w.run()
    assert w.binder.bound == {}, "two of minCount 3"
    member(w, "g-2", "g")
    w.run()
    assert sorted(w.binder.bound) == ["g-0", "g-1", "g-2"]
    state = w.engine.workload_groups.state("default/g")
    assert (state.message, state.scheduled) == ("", 3), "the PodGroup's status: scheduled"


def test_a_gang_that_cannot_complete_releases_its_waiting_members_at_once() -> None:
    """v1.37: when a member fits nowhere and the gang cannot reach minCount, the members waiting at
    Permit are released at once (upstream's pod-group cycle assumes none), not at the timeout."""
    w = workload_world(1000, 1000)
    w.engine.workload_group_set(pod_group("g", 3))
    for i in range(3):
        member(w, f"g-{i}", "g", cpu=600)  # two fit, the third nowhere
    w.run(rounds=1, step=0.0)
    assert w.binder.bound == {}
    released = {m for m in w.hooks.failures.values() if "minCount (3) cannot be satisfied" in m}
    assert released == {
        "0/1 nodes are available: 1 minCount (3) cannot be satisfied: 2 scheduled, 0 remaining."
    }
    assert not any("timeout" in m for m in w.hooks.failures.values())
    assert w.engine.workload_groups.state("default/g").message == (
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    ), "the PodGroup's status: why it is unschedulable"


def test_a_gang_that_cannot_complete_binds_nothing_and_its_waiting_members_time_out_v1_35() -> None:
    """v1.35 schedules pod by pod: the members that fit wait at Permit until the timeout."""
    w = workload_world(1000, 1000, version=V1_35)
    workload = {
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 3}}}]},
    }
    for group in workload_from_dict(workload).groups:
        w.engine.workload_group_set(group)
    for i in range(3):
        w.engine.pod_added(
            Pod(
                f"g-{i}",
                uid=f"g-{i}",
                workload_ref=("w", "g", ""),
                containers=(Container("c", requests={"cpu": 600}),),
            )
        )
    w.run(rounds=20, step=20.0)  # past the five-minute Permit timeout
    assert w.binder.bound == {}
    assert not any("minCount" in m for m in w.hooks.failures.values()), "no early release in v1.35"
    timed_out = [m for m in w.hooks.failures.values() if "rejected due to timeout" in m]
    assert timed_out == [
        "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin GangScheduling."
    ]


def test_a_basic_policy_group_schedules_one_by_one() -> None:
    w = workload_world(1000)
    w.engine.workload_group_set(pod_group("b", None))
    member(w, "b-0", "b")
    w.run()
    assert w.binder.bound == {"b-0": "n0"}


def test_a_lowered_min_count_releases_a_waiting_gang() -> None:
    w = workload_world(1000, 1000)
    w.engine.workload_group_set(pod_group("g", 3))
    member(w, "g-0", "g")
    member(w, "g-1", "g")
    w.run()
    assert w.binder.bound == {}
    w.engine.workload_group_set(pod_group("g", 2))
    w.run()
    assert sorted(w.binder.bound) == ["g-0", "g-1"]


def test_the_two_front_doors_do_not_share_groups() -> None:
    """A scheduler-plugins PodGroup of the same name is not the Workload API's group."""
    w = workload_world(1000, 1000)
    w.engine.pod_group_set(PodGroup("default", "g", 1))
    member(w, "g-0", "g")
    w.run()
    assert w.binder.bound == {}, "its scheduling.k8s.io PodGroup is missing"
    labelled = Pod("x", uid="x", labels={POD_GROUP_LABEL: "g"})
    assert w.engine.workload_groups.key_of(labelled) == ""
    assert w.engine.pod_groups.key_of(dataclasses.replace(labelled, labels={})) == ""


def test_members_wait_while_their_gang_preempts_and_go_on_with_the_preemptor() -> None:
    """Workload-aware DefaultPreemption (v1.37) holds a gang's members while one of them preempts
    for the group; the preemptor's requeue after its evictions activates them too."""
    preempting = {"g-0"}
    hooks, binder, clock = Hooks(), Binder(), FakeClock()
    services = ClusterServices(preemption_in_progress=lambda pod: pod.name in preempting)
    engine = Engine(hooks=hooks, binder=binder, seed=3, clock=clock, services=services)
    binder.engine = engine
    engine.set_profiles(
        [resolve_profile(ProfileConfig(), features=Features(V1_37, (("GenericWorkload", True),)))]
    )
    w = World(engine, hooks, binder, clock)
    w.node("n0", 1000)
    engine.workload_group_set(pod_group("g", 2))
    member(w, "g-0", "g")
    member(w, "g-1", "g")
    assert engine.queue.where(engine.unassigned["default/g-1"]) == "gated"
    preempting.clear()
    engine.activate_with_group(engine.unassigned["default/g-0"])
    assert engine.queue.where(engine.unassigned["default/g-1"]) != "gated", "activated with the preemptor"
    w.run()
    assert sorted(w.binder.bound) == ["g-0", "g-1"]
