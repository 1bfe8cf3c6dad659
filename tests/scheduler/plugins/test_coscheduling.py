"""Coscheduling: cases after scheduler-plugins' coscheduling_test.go and core_test.go (Less,
PreFilter, Permit, PostFilter) plus its args."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.interfaces import Handle, QueuedPodInfo
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.framework.unserved import PODGROUPS as PODGROUPS_API
from policy_scheduler.scheduler.gang import POD_GROUP_LABEL, PodGroup, PodGroupStore
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.coscheduling import Coscheduling, CoschedulingArgs


def member(name: str, group: str = "", cpu: int = 100, priority: int = 0, node: str = "") -> Pod:
    labels = {POD_GROUP_LABEL: group} if group else {}
    return Pod(
        name,
        uid=name,
        labels=labels,
        priority=priority,
        node_name=node,
        containers=(Container("c", requests={"cpu": cpu}),),
    )


def setup(
    *groups: PodGroup, nodes: int = 2, cpu: int = 1000, **args: Any
) -> tuple[Coscheduling, PodGroupStore, NodeTable]:
    table = NodeTable()
    for i in range(nodes):
        table.set_node(Node(f"n{i}", allocatable={"cpu": cpu, "pods": 10}))
    store = PodGroupStore()
    for group in groups:
        store.set_group(group)
    plugin = Coscheduling.from_profile(
        Handle(table=table, services=ClusterServices(pod_groups=store), clock=lambda: 100.0), args
    )
    return plugin, store, table


def info(pod: Pod, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(pod, timestamp, initial_attempt_timestamp=timestamp)


# ---- Less -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "p1", "p2", "first"),
    [
        (
            "p1.priority less than p2.priority",
            info(member("a", "pg1", priority=1), 1),
            info(member("b", "pg2", priority=2), 1),
            "b",
        ),
        (
            "p1.priority greater than p2.priority",
            info(member("a", "pg1", priority=3), 1),
            info(member("b", "pg2", priority=2), 1),
            "a",
        ),
        (
            "equal priority, p1 group created earlier",
            info(member("a", "pg1"), 1),
            info(member("b", "pg2"), 1),
            "a",
        ),
        (
            "equal priority, p2 group created earlier",
            info(member("a", "pg2"), 1),
            info(member("b", "pg1"), 1),
            "b",
        ),
        (
            "equal priority and creation time: by namespace/name of the group",
            info(member("b", "pg3"), 1),
            info(member("a", "pg4"), 1),
            "b",
        ),
        (
            "a lone pod by its own first attempt time",
            info(member("lone"), 5),
            info(member("b", "pg2"), 1),
            "lone",
        ),
    ],
)
def test_less(name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, first: str) -> None:
    plugin, *_ = setup(
        PodGroup("default", "pg1", 2, creation_timestamp=2.0),
        PodGroup("default", "pg2", 2, creation_timestamp=10.0),
        PodGroup("default", "pg3", 2, creation_timestamp=3.0),
        PodGroup("default", "pg4", 2, creation_timestamp=3.0),
    )
    winner = min((p1, p2), key=plugin.sort_key)
    assert winner.pod.name == first, name


# ---- PreEnqueue / PreFilter -------------------------------------------------------------------------


def test_pre_filter_cases() -> None:
    plugin, store, _ = setup(
        PodGroup("default", "pg", 2), PodGroup("default", "rich", 2, min_resources={"cpu": 5000})
    )
    state = CycleState()
    assert plugin.pre_filter(state, member("lone"))[1].is_success, "pods in no group pass"
    _, status = plugin.pre_filter(state, member("x", "missing"))
    assert status.code == Code.UNSCHEDULABLE
    assert "PodGroup not found" in status.message
    store.pod_seen(member("p1", "pg"))
    _, status = plugin.pre_filter(state, member("p1", "pg"))
    assert status.message == (
        "pre-filter pod p1 cannot find enough sibling pods, current pods number: 1, minMember of group: 2"
    )
    assert not plugin.pre_enqueue(member("p1", "pg")).is_success
    store.pod_seen(member("p2", "pg"))
    assert plugin.pre_filter(state, member("p1", "pg"))[1].is_success
    assert plugin.pre_enqueue(member("p1", "pg")).is_success
    store.pod_seen(member("r1", "rich"))
    store.pod_seen(member("r2", "rich"))
    _, status = plugin.pre_filter(state, member("r1", "rich"))
    assert status.message == "resource gap: map[cpu:3000]"
    assert store.state("default/rich").message == "resource gap: map[cpu:3000]"


def test_pre_filter_backoff_after_post_filter() -> None:
    plugin, store, _ = setup(PodGroup("default", "pg", 4), podGroupBackoffSeconds=30)
    for i in range(4):
        store.pod_seen(member(f"p{i}", "pg"))
    plugin.post_filter(CycleState(), member("p0", "pg"), Diagnosis())
    _, status = plugin.pre_filter(CycleState(), member("p1", "pg"))
    assert status.message == "podGroup default/pg failed recently"


def test_min_resources_count_the_groups_own_assigned_members() -> None:
    plugin, store, table = setup(PodGroup("default", "pg", 2, min_resources={"cpu": 2000}), cpu=1000)
    store.attach(table)
    table.add_pod(member("p0", "pg", cpu=1000, node="n0"), 0)
    store.pod_seen(member("p0", "pg"))
    store.pod_seen(member("p1", "pg"))
    assert plugin.pre_filter(CycleState(), member("p1", "pg"))[1].is_success


# ---- Permit / PostFilter ------------------------------------------------------------------------------


def test_permit_waits_until_min_member_hold_a_node() -> None:
    group = PodGroup("default", "pg", 3, schedule_timeout_seconds=7)
    plugin, store, table = setup(group, permitWaitingTimeSeconds=60)
    store.attach(table)
    for i in range(3):
        store.pod_seen(member(f"p{i}", "pg"))
    assert plugin.permit(CycleState(), member("lone"), "n0")[0].is_success
    table.add_pod(member("p0", "pg", node="n0"), 0)
    status, wait = plugin.permit(CycleState(), member("p0", "pg", node="n0"), "n0")
    assert status.code == Code.WAIT
    assert wait == 7.0, "the group's scheduleTimeoutSeconds wins"
    table.add_pod(member("p1", "pg", node="n1"), 1)
    assert plugin.permit(CycleState(), member("p1", "pg", node="n1"), "n1")[0].code == Code.WAIT
    table.add_pod(member("p2", "pg", node="n1"), 1)
    assert plugin.permit(CycleState(), member("p2", "pg", node="n1"), "n1")[0].is_success
    status, _ = plugin.permit(CycleState(), member("x", "missing"), "n0")
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == "PodGroup not found"


@pytest.mark.parametrize(
    ("min_member", "assigned", "rejects"),
    [
        (4, 0, True),  # nothing assigned: the whole group is rejected
        (4, 2, True),
        (4, 4, False),  # complete: only this pod retries
        (10, 9, False),  # a gap of at most 10% may still close
        (10, 8, True),
    ],
)
def test_post_filter(min_member: int, assigned: int, rejects: bool) -> None:
    plugin, store, table = setup(PodGroup("default", "pg", min_member), nodes=1, cpu=100000)
    store.attach(table)
    for i in range(assigned):
        table.add_pod(member(f"a{i}", "pg", node="n0"), 0)
    result, status = plugin.post_filter(CycleState(), member("p", "pg"), Diagnosis())
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    expected = "PodGroup default/pg gets rejected due to Pod p is unschedulable even after PostFilter"
    assert (status.message == expected) is rejects


# ---- args -------------------------------------------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    assert CoschedulingArgs.from_json({}) == CoschedulingArgs(60, 0)
    assert CoschedulingArgs.from_json({"permitWaitingTimeSeconds": 5}).to_json() == {
        "permitWaitingTimeSeconds": 5,
        "podGroupBackoffSeconds": 0,
    }
    with pytest.raises(ArgsError, match="permitWaitingTimeSeconds"):
        CoschedulingArgs.from_json({"permitWaitingTimeSeconds": -1})


def test_without_the_podgroup_api_a_member_waits_saying_the_crd_is_missing() -> None:
    plugin, _, _ = setup()
    why = "scheduling.x-k8s.io/v1alpha1 podgroups is not served by the API server: install the PodGroup CRD"
    plugin.handle.services.unserved.set({PODGROUPS_API: why})
    # Not held in PreEnqueue (where it would get no condition): PreFilter turns it down saying why.
    assert plugin.pre_enqueue(member("a", "pg1")).is_success
    _, status = plugin.pre_filter(CycleState(), member("a", "pg1"))
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == f"PodGroup not found: default/pg1: {why}"
