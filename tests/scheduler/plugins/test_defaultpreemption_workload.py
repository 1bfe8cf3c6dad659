"""Workload-aware preemption for the Workload API's PodGroups (v1.37.2's default_preemption_test.go
"Workload Aware" and "Cross-node PodGroup" rows; v1.36's WorkloadAwarePreemption gate;
disruptionMode All/Single), and a gang preemptor preempting for its whole group."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from policy_scheduler.apiobjects.workloads import pod_group_from_dict
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.gang import PodGroup, workload_pod_groups
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37

from ._build_defaultpreemption import HIGH, LARGE, LOW, build, node, pod, post_filter, victim_names

GENERIC = ("GenericWorkload", True)
V1_37_ON = Features(V1_37, (GENERIC,))


def pod_group(name: str, mode: Any = None, min_count: int | None = None) -> PodGroup:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    }
    if mode is not None:
        spec["disruptionMode"] = mode
    return pod_group_from_dict({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def member(p: Pod, group: str) -> Pod:
    return dataclasses.replace(p, scheduling_group=group)


def cross_node(features: Features, group: PodGroup) -> list[str]:
    """pod-a on node-a and pod-b on node-b, one PodGroup; the preemptor needs one whole node."""
    pods = [
        member(pod("pod-a", "node-a", LOW, LARGE), "pg1"),
        member(pod("pod-b", "node-b", LOW, LARGE), "pg1"),
    ]
    store = workload_pod_groups()
    store.set_group(group)
    for p in pods:
        store.pod_seen(p)
    env = build(
        [node("node-a", LARGE), node("node-b", LARGE)],
        pods,
        services={"workload_groups": store},
        features=features,
    )
    result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE))
    assert status.code == Code.SUCCESS, status
    return sorted(victim_names(result))


def test_cross_node_pod_group_is_preempted_whole_with_disruption_mode_all() -> None:
    assert cross_node(V1_37_ON, pod_group("pg1", {"all": {}})) == ["pod-a", "pod-b"]


@pytest.mark.parametrize(
    ("name", "features", "group"),
    [
        ("disruptionMode Single: pod by pod", V1_37_ON, pod_group("pg1", {"single": {}})),
        ("no disruptionMode: pod by pod", V1_37_ON, pod_group("pg1")),
        ("GenericWorkload off: pod by pod", Features(V1_37), pod_group("pg1", {"all": {}})),
        (
            "v1.36 without WorkloadAwarePreemption: pod by pod",
            Features(V1_36, (GENERIC, ("GangScheduling", True))),
            pod_group("pg1", "PodGroup"),
        ),
        (
            "v1.35: pod by pod",
            Features(V1_35, (GENERIC, ("GangScheduling", True))),
            pod_group("pg1", {"all": {}}),
        ),
    ],
)
def test_one_victim_where_the_group_may_be_disrupted_pod_by_pod(
    name: str, features: Features, group: PodGroup
) -> None:
    victims = cross_node(features, group)
    assert len(victims) == 1, name


def test_v1_36_workload_aware_preemption_reads_the_string_mode() -> None:
    features = Features(V1_36, (GENERIC, ("GangScheduling", True), ("WorkloadAwarePreemption", True)))
    assert cross_node(features, pod_group("pg1", "PodGroup")) == ["pod-a", "pod-b"]
    assert len(cross_node(features, pod_group("pg1", "Pod"))) == 1


def test_a_group_member_that_may_not_be_a_victim_protects_its_whole_group() -> None:
    """All: pod-b is of higher priority than the preemptor, so pod-a may not go either."""
    pods = [
        member(pod("pod-a", "node-a", LOW, LARGE), "pg1"),
        member(pod("pod-b", "node-b", HIGH, LARGE), "pg1"),
    ]
    store = workload_pod_groups()
    store.set_group(pod_group("pg1", {"all": {}}))
    for p in pods:
        store.pod_seen(p)
    env = build(
        [node("node-a", LARGE), node("node-b", LARGE)],
        pods,
        services={"workload_groups": store},
        features=V1_37_ON,
    )
    result, status = post_filter(env, pod("p", priority=HIGH - 1, req=LARGE))
    assert status.code == Code.UNSCHEDULABLE
    assert result is not None
    assert result.nominated_node_name == ""


def test_a_gang_preemptor_preempts_for_every_member_it_lacks() -> None:
    """Two pending members of a minCount-2 gang, two full nodes of low-priority pods: victims on
    both nodes, the preemptor nominated to one and its sibling to the other."""
    busy = [pod("low-a", "node-a", LOW, LARGE), pod("low-b", "node-b", LOW, LARGE)]
    preemptor = member(pod("g-0", priority=HIGH, req=LARGE), "gang")
    sibling = member(pod("g-1", priority=HIGH, req=LARGE), "gang")
    store = workload_pod_groups()
    store.set_group(pod_group("gang", min_count=2))
    for p in (preemptor, sibling):
        store.pod_seen(p)
    env = build(
        [node("node-a", LARGE), node("node-b", LARGE)],
        busy,
        services={"workload_groups": store},
        features=V1_37_ON,
    )
    result, status = post_filter(env, preemptor)
    assert status.code == Code.SUCCESS, status
    assert result is not None
    assert sorted(victim_names(result)) == ["low-a", "low-b"]
    assert [(p.name, n) for p, n in result.nominations] == [
        ("g-1", "node-b" if result.nominated_node_name == "node-a" else "node-a")
    ]


# ---- PreEnqueue (v1.37.2's TestPreEnqueue rows with pod groups) ------------------------------------


@pytest.mark.parametrize(
    ("name", "features", "preempting", "check", "want"),
    [
        (
            "GenericWorkload enabled, pod in same PodGroup, returns UnschedulableAndUnresolvable",
            V1_37_ON,
            "p-g1",
            "other-g1",
            "waiting for the preemption for this pod group to be finished",
        ),
        (
            "GenericWorkload disabled, pod in same PodGroup, returns nil",
            Features(V1_37),
            "p-g1",
            "other-g1",
            "",
        ),
        ("GenericWorkload enabled, pod in different PodGroup, returns nil", V1_37_ON, "p-g1", "other-g2", ""),
        ("GenericWorkload enabled, pod group not found, returns nil", V1_37_ON, "p-g1", "other-missing", ""),
        (
            "GenericWorkload disabled, the preempting pod itself",
            Features(V1_37),
            "p-g1",
            "p-g1",
            "waiting for the preemption for this pod to be finished",
        ),
    ],
)
def test_pre_enqueue_waits_for_its_groups_preemption(
    name: str, features: Features, preempting: str, check: str, want: str
) -> None:
    pods = {
        "p-g1": member(pod("p-g1"), "pg1"),
        "other-g1": member(pod("other-g1"), "pg1"),
        "other-g2": member(pod("other-g2"), "pg2"),
        "other-missing": member(pod("other-missing"), "missing"),
    }
    store = workload_pod_groups()
    store.set_group(pod_group("pg1", min_count=2))
    store.set_group(pod_group("pg2", min_count=2))
    for p in pods.values():
        store.pod_seen(p)
    env = build(
        [node("node-a")],
        services={"workload_groups": store, "preemption_in_progress": lambda p: p.name == preempting},
        features=features,
    )
    status = env.plugin.pre_enqueue(pods[check])
    assert status.message == want, name
    assert status.code == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if want else Code.SUCCESS), name
