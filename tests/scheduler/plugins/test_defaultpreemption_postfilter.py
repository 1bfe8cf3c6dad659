"""DefaultPreemption.post_filter: ported from upstream TestPostFilter (default_preemption_test.go)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import EvictionPolicyConfig
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

from ._build_defaultpreemption import (
    BEST_EFFORT,
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    ONE_POD,
    VERY_HIGH,
    PDBFake,
    build,
    match_labels,
    node,
    pod,
    post_filter,
    statuses,
    victim_names,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODE_RES = {"cpu": 200, "memory": 400}
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}


@dataclass
class Case:
    name: str
    preemptor: Pod
    pods: list[Pod]
    nodes: list[Node]
    diagnosis: Diagnosis
    want_node: str | None  # None: no PostFilterResult at all
    want_code: Code
    want_message: str = ""
    pdbs: list[Any] = field(default_factory=list)
    policy: EvictionPolicyConfig = BEST_EFFORT
    extra_pre_filters: tuple[str, ...] = ()


CASES = [
    Case(
        "pod with higher priority can be made schedulable",
        pod("p", priority=HIGH),
        [pod("p1", "node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": U}),
        "node1",
        Code.SUCCESS,
    ),
    Case(
        "pod with tied priority is still unschedulable",
        pod("p"),
        [pod("p1", "node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": U}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    Case(
        "preemption should respect filteredNodesStatuses",
        pod("p", priority=HIGH),
        [pod("p1", "node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": UU}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    Case(
        "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
        pod("p", priority=HIGH),
        [pod("p1", "node1")],
        [node("node1", ONE_POD)],
        statuses({}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    Case(
        "pod can be made schedulable on one node",
        pod("p", priority=MID),
        [pod("p1", "node1", HIGH), pod("p2", "node2", LOW)],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
    ),
    Case(
        "pod can be made schedulable on minHighestPriority node",
        pod("p", priority=VERY_HIGH),
        [
            pod("p1", "node1", HIGH, labels=NON_VIOLATING),
            pod("p2", "node1", LOW, labels=VIOLATING),
            pod("p3", "node2", MID, labels=VIOLATING),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
        pdbs=[
            PDBFake(match_labels(**VIOLATING), 0),
            PDBFake(match_labels(**NON_VIOLATING), 2**31 - 1),
        ],
    ),
    Case(
        "no candidate nodes found, no enough resource after removing low priority pods",
        pod("p", priority=HIGH, req=LARGE),
        [pod("p1", "node1"), pod("p2", "node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        statuses({"node1": U, "node2": U}),
        "",
        U,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    Case(
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
        pod("p", priority=HIGH, req=LARGE),
        [pod("p1", "node1", HIGH), pod("p2", "node2"), pod("p3", "node3", HIGH)],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        statuses({"node1": U, "node2": U, "node3": U}),
        "",
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    Case(
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't "
        "have enough CPU resource",
        pod("p", priority=HIGH, req=LARGE),
        [pod("p1", "node1"), pod("p2", "node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)],
        statuses({"node1": U, "node2": U, "node4": UU}),
        "",
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    Case(
        "only one node but failed with TestPlugin",
        pod("p", priority=HIGH, req=LARGE),
        [pod("p1", "node1")],
        [node("node1", LARGE, labels={"error": "true"})],
        statuses({"node1": U}),
        None,
        Code.ERROR,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
        extra_pre_filters=("test-plugin",),
    ),
    Case(
        "one failed with TestPlugin and the other pass",
        pod("p", priority=HIGH, req=LARGE),
        [pod("p1", "node1"), pod("p2", "node2", req=MEDIUM)],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
        extra_pre_filters=("test-plugin",),
    ),
]


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_post_filter(case: Case, version: KubernetesVersion) -> None:
    """TestPostFilter of v1.35.4 and, with success messages, of v1.37.2: from v1.37 a successful
    preemption says where it found room and how many victims it evicts."""
    env = build(
        case.nodes,
        case.pods,
        pdbs=case.pdbs,
        policy=case.policy,
        extra_pre_filters=case.extra_pre_filters,
        features=Features(version),
    )
    result, status = post_filter(env, case.preemptor, case.diagnosis)
    assert status.code == case.want_code
    want = case.want_message
    if case.want_code == Code.SUCCESS and version == V1_37:
        assert result is not None
        want = (
            f"preemption: found a potential placement for pod on node {result.nominated_node_name}, "
            f"preempting {len(result.victims)} victims"
        )
    assert status.message == want
    if case.want_node is None:
        assert result is None
    else:
        assert result is not None
        assert result.nominated_node_name == case.want_node


def test_success_returns_the_victims_of_the_chosen_node() -> None:
    env = build(
        [node("node1", ONE_POD), node("node2", ONE_POD)], [pod("p1", "node1", MID), pod("p2", "node2", LOW)]
    )
    result, status = post_filter(env, pod("p", priority=HIGH), statuses({"node1": U, "node2": U}))
    assert status.code == Code.SUCCESS
    assert result is not None
    assert result.nominated_node_name == "node2"
    assert victim_names(result) == ["p2"]
    assert [p.node_name for p in result.victims] == ["node2"]


def test_enforce_variant_of_min_highest_priority_case_finds_no_candidate() -> None:
    """Both nodes need a PDB-violating victim: kube-scheduler (BestEffort) still preempts on
    node2, budgetMode Enforce drops both candidates."""
    case = next(c for c in CASES if c.name == "pod can be made schedulable on minHighestPriority node")
    env = build(case.nodes, case.pods, pdbs=case.pdbs, policy=EvictionPolicyConfig())
    result, status = post_filter(env, case.preemptor, case.diagnosis)
    assert status.code == U
    assert status.message == (
        "preemption: 0/2 nodes are available: 2 Preemption victims would violate a PodDisruptionBudget."
    )
    assert result is not None
    assert result.nominated_node_name == ""


def test_no_nodes_at_all_is_an_error() -> None:
    env = build([])
    result, status = post_filter(env, pod("p", priority=HIGH), statuses({}))
    assert result is None
    assert status.code == Code.ERROR
    assert status.message == "preemption: no nodes available"


def test_errors_are_aggregated_when_every_node_fails() -> None:
    env = build(
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE, labels={"error": "true"})],
        [pod("p1", "node1"), pod("p2", "node2")],
        extra_pre_filters=("test-plugin",),
    )
    result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE), statuses({"node1": U, "node2": U}))
    assert result is None
    assert status.code == Code.ERROR
    # Both nodes fail with the same message: utilerrors' aggregate de-duplicates it.
    assert (
        status.message
        == 'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'
    )


@pytest.mark.parametrize(
    ("version", "dynamic_resources"),
    [(V1_35, "no new claims to deallocate, "), (V1_36, "no new claims to deallocate, "), (V1_37, "")],
)
def test_framework_run_post_filter_appends_message_and_plugin_name(
    version: KubernetesVersion, dynamic_resources: str
) -> None:
    env = build([node("node1", ONE_POD)], [pod("p1", "node1", HIGH)], features=Features(version))
    preemptor = pod("p", priority=HIGH)
    from policy_scheduler.scheduler.framework.cycle_state import CycleState

    state = CycleState()
    env.framework.run_pre_filter(state, preemptor)
    result, status = env.framework.run_post_filter(state, preemptor, statuses({"node1": U}))
    assert result is None
    assert status.code == U
    # Upstream's RunPostFilterPlugins: reasons of every rejecting plugin, the first one named
    # (v1.37's DynamicResources rejects without a reason).
    assert status.plugin == "DynamicResources"
    assert status.message == (
        f"{dynamic_resources}preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
