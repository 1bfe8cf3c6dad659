"""Who may preempt and who may be a victim: PodEligibleToPreemptOthers (ported from upstream
TestPodEligibleToPreemptOthers) and our eviction policy (protected pods, priorities, budgets)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import LabelSelector, Pod, Requirement
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.defaultpreemption import (
    DEFAULT_POLICY,
    DefaultPreemption,
    EvictionPolicyConfig,
    ProtectedTerm,
)
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import is_protected, may_be_victim
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import budget_overruns
from policy_scheduler.scheduler.plugins.registry import in_tree_registry

from ._build_defaultpreemption import (
    BEST_EFFORT,
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    FixedRng,
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
FOO = match_labels(app="foo")

# ---- PodEligibleToPreemptOthers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "preemptor", "pods", "nominated_status", "eligible"),
    [
        (
            "Pod with nominated node whose status is UnschedulableAndUnresolvable",
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", "node1", LOW, terminating=True)],
            Status(UU, ("node(s) had untolerated taint(s)",)),
            True,
        ),
        ("Pod without nominated node", pod("p", priority=HIGH), [], SUCCESS, True),
        (
            "Pod with 'PreemptNever' preemption policy",
            pod("p", priority=HIGH, preemption_policy="Never"),
            [],
            SUCCESS,
            False,
        ),
        (
            "victim pod terminating on the nominated node",
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", "node1", LOW, terminating=True)],
            Status(U),
            False,
        ),
        (
            "terminating pod of equal priority is no victim of ours",
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", "node1", HIGH, terminating=True)],
            Status(U),
            True,
        ),
        (
            "running lower-priority pods do not hold the preemptor back",
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", "node1", LOW)],
            Status(U),
            True,
        ),
        (
            "nominated node that no longer exists",
            pod("p", priority=HIGH, nominated="gone"),
            [pod("p1", "node1", LOW, terminating=True)],
            Status(U),
            True,
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    name: str, preemptor: Pod, pods: list[Pod], nominated_status: Status, eligible: bool
) -> None:
    env = build([node("node1")], pods)
    got, _ = env.plugin.pod_eligible_to_preempt_others(preemptor, nominated_status, DEFAULT_POLICY)
    assert got == eligible


def test_protected_terminating_pod_does_not_hold_the_preemptor_back() -> None:
    policy = EvictionPolicyConfig(protected=(ProtectedTerm(pod_selector=FOO),))
    env = build([node("node1")], [pod("p1", "node1", LOW, labels={"app": "foo"}, terminating=True)])
    preemptor = pod("p", priority=HIGH, nominated="node1")
    assert env.plugin.pod_eligible_to_preempt_others(preemptor, Status(U), policy) == (True, "")


def test_preemption_policy_never_message() -> None:
    env = build([node("node1", ONE_POD)], [pod("p1", "node1")])
    result, status = post_filter(
        env, pod("p", priority=HIGH, preemption_policy="Never"), statuses({"node1": U})
    )
    assert result is None
    assert status.code == U
    assert status.message == "preemption: not eligible due to preemptionPolicy=Never."


def test_waits_for_terminating_victims_on_nominated_node() -> None:
    env = build(
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [pod("p1", "node1", LOW, terminating=True), pod("p2", "node2", LOW)],
    )
    result, status = post_filter(
        env, pod("p", priority=HIGH, nominated="node1"), statuses({"node1": U, "node2": U})
    )
    assert result is None  # keeps the nomination
    assert status.code == U
    assert status.message == "preemption: not eligible due to a terminating pod on the nominated node."


def test_terminating_pods_are_still_victims_as_upstream() -> None:
    """SelectVictimsOnNode does not skip terminating pods (prepareCandidate only skips the API
    call for them); the evictor must not evict them again."""
    env = build([node("node1", ONE_POD)], [pod("p1", "node1", LOW, terminating=True)])
    result, status = post_filter(env, pod("p", priority=HIGH), statuses({"node1": U}))
    assert status.is_success
    assert victim_names(result) == ["p1"]


# ---- victims the policy forbids -------------------------------------------------------------


def _two_nodes(first: Pod, second: Pod) -> tuple[list[Any], list[Pod]]:
    return [node("node1", ONE_POD), node("node2", ONE_POD)], [first, second]


@pytest.mark.parametrize(
    ("name", "policy", "first", "preemptor_priority"),
    [
        (
            "pod selector",
            EvictionPolicyConfig(protected=(ProtectedTerm(pod_selector=FOO),)),
            pod("p1", "node1", LOW, labels={"app": "foo"}),
            HIGH,
        ),
        (
            "namespace selector",
            EvictionPolicyConfig(protected=(ProtectedTerm(namespace_selector=match_labels(tier="prod")),)),
            pod("p1", "node1", LOW, namespace="prod"),
            HIGH,
        ),
        (
            "both selectors of one term",
            EvictionPolicyConfig(
                protected=(ProtectedTerm(namespace_selector=match_labels(tier="prod"), pod_selector=FOO),)
            ),
            pod("p1", "node1", LOW, namespace="prod", labels={"app": "foo"}),
            HIGH,
        ),
        (
            "any term",
            EvictionPolicyConfig(
                protected=(
                    ProtectedTerm(pod_selector=match_labels(app="bar")),
                    ProtectedTerm(pod_selector=FOO),
                )
            ),
            pod("p1", "node1", LOW, labels={"app": "foo"}),
            HIGH,
        ),
        (
            "system-critical priority even for a higher system pod",
            DEFAULT_POLICY,
            pod("p1", "node1", 2_000_000_000),
            2_000_001_000,
        ),
        ("equal priority", DEFAULT_POLICY, pod("p1", "node1", HIGH), HIGH),
    ],
)
def test_forbidden_victims_send_preemption_elsewhere(
    name: str, policy: EvictionPolicyConfig, first: Pod, preemptor_priority: int
) -> None:
    """node1's pod would be the better victim (lowest priority) but may not be evicted."""
    nodes, pods = _two_nodes(first, pod("p2", "node2", min(preemptor_priority - 1, 1_999_999_999)))
    env = build(nodes, pods, policy=policy, namespace_labels={"prod": {"tier": "prod"}}, rng=FixedRng(0))
    result, status = post_filter(
        env, pod("p", priority=preemptor_priority), statuses({"node1": U, "node2": U})
    )
    assert status.is_success, status
    assert result is not None
    assert result.nominated_node_name == "node2"
    assert victim_names(result) == ["p2"]
    # Without a policy node1 would have been chosen (except where upstream forbids it too).
    if name != "equal priority" and not name.startswith("system"):
        env = build(nodes, pods, policy=BEST_EFFORT, namespace_labels={"prod": {"tier": "prod"}})
        result, _ = post_filter(
            env, pod("p", priority=preemptor_priority), statuses({"node1": U, "node2": U})
        )
        assert result is not None
        assert result.nominated_node_name == "node1"


def test_min_protected_priority_keeps_pods_at_the_threshold() -> None:
    pods = [pod("low", "node1", LOW, SMALL), pod("mid", "node1", MID, MEDIUM)]
    preemptor = pod("p", priority=HIGH, req={"cpu": 400, "memory": 400})
    env = build([node("node1")], pods, policy=BEST_EFFORT)
    result, status = post_filter(env, preemptor)
    assert status.is_success
    assert victim_names(result) == ["mid"]
    env = build([node("node1")], pods, policy=EvictionPolicyConfig(min_protected_priority=MID))
    result, status = post_filter(env, preemptor)
    assert status.code == U
    assert status.message == "preemption: 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    env = build([node("node1")], pods, policy=EvictionPolicyConfig(min_protected_priority=MID + 1))
    result, status = post_filter(env, preemptor)
    assert status.is_success
    assert victim_names(result) == ["mid"]


def test_only_protected_pods_means_no_victims() -> None:
    policy = EvictionPolicyConfig(protected=(ProtectedTerm(pod_selector=FOO),))
    env = build([node("node1", ONE_POD)], [pod("p1", "node1", LOW, labels={"app": "foo"})], policy=policy)
    result, status = post_filter(env, pod("p", priority=HIGH), statuses({"node1": U}))
    assert status.code == U
    assert (
        status.message
        == "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert result is not None
    assert result.nominated_node_name == ""


def test_protected_pod_is_kept_and_another_victim_chosen_on_the_node() -> None:
    policy = EvictionPolicyConfig(protected=(ProtectedTerm(pod_selector=FOO),))
    pods = [pod("keep", "node1", LOW, SMALL, labels={"app": "foo"}), pod("go", "node1", MID, MEDIUM)]
    env = build([node("node1")], pods, policy=policy)
    result, status = post_filter(env, pod("p", priority=HIGH, req=LARGE))
    assert status.is_success
    # Without protection the low-priority pod would be the victim (see the dry-run tests).
    assert victim_names(result) == ["go"]


@pytest.mark.parametrize(
    ("term", "namespace", "labels", "protected"),
    [
        (ProtectedTerm(pod_selector=FOO), "default", {"app": "foo"}, True),
        (ProtectedTerm(pod_selector=FOO), "default", {"app": "bar"}, False),
        (ProtectedTerm(pod_selector=LabelSelector()), "default", {}, True),  # empty: every pod
        (ProtectedTerm(namespace_selector=match_labels(tier="prod")), "prod", {}, True),
        (ProtectedTerm(namespace_selector=match_labels(tier="prod")), "dev", {}, False),
        (ProtectedTerm(namespace_selector=match_labels(tier="prod")), "unknown", {}, False),
        (ProtectedTerm(namespace_selector=match_labels(tier="prod"), pod_selector=FOO), "prod", {}, False),
        (
            ProtectedTerm(namespace_selector=match_labels(tier="prod"), pod_selector=FOO),
            "dev",
            {"app": "foo"},
            False,
        ),
        (
            ProtectedTerm(
                pod_selector=LabelSelector(match_expressions=(Requirement("app", "NotIn", ("foo",)),)),
            ),
            "default",
            {"app": "bar"},
            True,
        ),
        # An unparsable selector protects rather than exposes.
        (
            ProtectedTerm(pod_selector=LabelSelector(match_expressions=(Requirement("app", "Bogus"),))),
            "d",
            {},
            True,
        ),
    ],
)
def test_is_protected(term: ProtectedTerm, namespace: str, labels: dict[str, str], protected: bool) -> None:
    policy = EvictionPolicyConfig(protected=(term,))
    ns_labels = {"prod": {"tier": "prod"}, "dev": {"tier": "dev"}}
    assert is_protected(policy, pod("v", labels=labels, namespace=namespace), ns_labels) == protected


@pytest.mark.parametrize(
    ("victim", "preemptor", "min_protected", "allowed"),
    [
        (LOW, MID, None, True),
        (MID, MID, None, False),
        (HIGH, MID, None, False),
        (LOW, MID, LOW, False),
        (LOW, MID, LOW + 1, True),
        (-5, MID, -4, True),
        (1_999_999_999, 2_000_001_000, None, True),
        (2_000_000_000, 2_000_001_000, None, False),
    ],
)
def test_may_be_victim_priorities(
    victim: int, preemptor: int, min_protected: int | None, allowed: bool
) -> None:
    policy = EvictionPolicyConfig(min_protected_priority=min_protected)
    assert may_be_victim(policy, pod("v", priority=victim), pod("p", priority=preemptor), {}) == allowed


# ---- budget modes --------------------------------------------------------------------------


def _all_violate() -> tuple[list[Any], list[Pod]]:
    """node1 needs two PDB-covered victims, node2 one: every candidate violates the budget."""
    foo = {"app": "foo"}
    nodes = [node("node1"), node("node2")]
    pods = [
        pod("a1", "node1", LOW, MEDIUM, labels=foo),
        pod("a2", "node1", LOW, LARGE, labels=foo),
        pod("b1", "node2", MID, {"cpu": 400, "memory": 400}, labels=foo),
    ]
    return nodes, pods


def test_best_effort_picks_the_fewest_violations() -> None:
    nodes, pods = _all_violate()
    env = build(nodes, pods, policy=BEST_EFFORT, pdbs=[PDBFake(FOO, 0)])
    result, status = post_filter(env, pod("p", priority=HIGH, req={"cpu": 450, "memory": 450}))
    assert status.is_success
    assert result is not None
    assert result.nominated_node_name == "node2"
    assert victim_names(result) == ["b1"]


def test_enforce_drops_every_violating_candidate() -> None:
    nodes, pods = _all_violate()
    env = build(nodes, pods, policy=EvictionPolicyConfig(budget_mode="Enforce"), pdbs=[PDBFake(FOO, 0)])
    result, status = post_filter(env, pod("p", priority=HIGH, req={"cpu": 450, "memory": 450}))
    assert status.code == U
    assert status.message == (
        "preemption: 0/2 nodes are available: 2 Preemption victims would violate a PodDisruptionBudget."
    )
    assert result is not None
    assert result.nominated_node_name == ""


def test_default_policy_is_enforce() -> None:
    nodes, pods = _all_violate()
    for services in ({}, {"eviction_policy": lambda name: None}):
        env = build(nodes, pods, pdbs=[PDBFake(FOO, 0)], services=services)
        _, status = post_filter(env, pod("p", priority=HIGH, req={"cpu": 450, "memory": 450}))
        assert status.code == U


def test_enforce_keeps_candidates_within_the_budget() -> None:
    """The PDB allows one disruption. node1 needs only its big low-priority pod (b) to go; upstream
    counts b as "violating" (a, more important, used the allowance first), so BestEffort ranks
    node1 behind node2. Enforce checks the real victims, which fit the budget, and prefers node1's
    lower-priority victim."""
    foo = {"app": "foo"}
    nodes = [node("node1"), node("node2")]
    pods = [
        pod("a", "node1", MID, SMALL, labels=foo),
        pod("b", "node1", LOW, LARGE, labels=foo),
        pod("c", "node2", MID, LARGE),
    ]
    preemptor = pod("p", priority=HIGH, req=LARGE)
    pdbs = [PDBFake(FOO, 1)]
    env = build(nodes, pods, policy=BEST_EFFORT, pdbs=pdbs)
    result, status = post_filter(env, preemptor)
    assert status.is_success
    assert result is not None
    assert (result.nominated_node_name, victim_names(result)) == ("node2", ["c"])
    env = build(nodes, pods, policy=EvictionPolicyConfig(), pdbs=pdbs)
    result, status = post_filter(env, preemptor)
    assert status.is_success
    assert result is not None
    assert (result.nominated_node_name, victim_names(result)) == ("node1", ["b"])


@pytest.mark.parametrize(
    ("victims", "pdbs", "refused"),
    [
        ([pod("a", labels={"app": "foo"})], [PDBFake(FOO, 1)], 0),
        ([pod("a", labels={"app": "foo"}), pod("b", labels={"app": "foo"})], [PDBFake(FOO, 1)], 1),
        (
            [pod("a", labels={"app": "foo"}, terminating=True), pod("b", labels={"app": "foo"})],
            [PDBFake(FOO, 1)],
            0,
        ),
        ([pod("a", labels={"app": "foo"})], [PDBFake(FOO, 0, disrupted_pods=frozenset({"a"}))], 0),
        ([pod("a", labels={"app": "foo"})], [PDBFake(FOO, -1)], 1),
        ([pod("a", labels={"app": "foo"})], [PDBFake(FOO, 5), PDBFake(LabelSelector(), 0)], 1),
        ([pod("a", labels={"app": "foo"})], [PDBFake(FOO, 0, namespace="other")], 0),
    ],
)
def test_budget_overruns(victims: list[Pod], pdbs: list[PDBFake], refused: int) -> None:
    assert budget_overruns(victims, pdbs) == refused


def test_policy_service_gets_the_profile_scheduler_name() -> None:
    seen: list[str] = []

    def lookup(name: str) -> EvictionPolicyConfig | None:
        seen.append(name)
        return None

    env = build([node("node1", ONE_POD)], [pod("p1", "node1")], services={"eviction_policy": lookup})
    post_filter(env, pod("p", priority=HIGH), statuses({"node1": U}))
    assert seen == ["default-scheduler"]


def test_cluster_services_defaults() -> None:
    """ClusterServices() is a cluster with no PDBs, the default policy and nothing in flight."""
    env = build([node("node1", ONE_POD)], [pod("p1", "node1", LOW)])
    assert env.plugin.policy(pod("p")) is DEFAULT_POLICY
    assert list(env.services.list_pdbs()) == []
    assert env.plugin.pre_enqueue(pod("p")).is_success


def test_invalid_budget_mode() -> None:
    with pytest.raises(ValueError, match="budgetMode"):
        EvictionPolicyConfig(budget_mode="Sometimes")


# ---- plugin wiring -------------------------------------------------------------------------


def test_registered_and_in_the_default_profile() -> None:
    assert in_tree_registry()["DefaultPreemption"] is DefaultPreemption
    env = build([node("node1")])
    # DynamicResources comes first, as in upstream's default profile.
    assert [p.name for p in env.framework.points.post_filter] == ["DynamicResources", "DefaultPreemption"]
    assert "DefaultPreemption" in [p.name for p in env.framework.points.pre_enqueue]


def test_pre_enqueue_waits_while_the_preemption_runs() -> None:
    running = {"p"}
    env = build([node("node1")], services={"preemption_in_progress": lambda p: p.name in running})
    status = env.plugin.pre_enqueue(pod("p", priority=HIGH))
    assert status.code == UU
    assert status.message == "waiting for the preemption for this pod to be finished"
    running.clear()
    assert env.plugin.pre_enqueue(pod("p", priority=HIGH)).is_success
    assert build([node("node1")]).plugin.pre_enqueue(pod("p")).is_success


def test_events_to_register() -> None:
    (event,) = build([node("node1")]).plugin.events_to_register()
    assert event.event.resource == Resource.POD
    assert event.event.action == Action.DELETE
    assert event.hint is not None
    assert event.hint(pod("p"), pod("old"), None) == QueueingHint.SKIP


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"minCandidateNodesPercentage": 101},
            "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the "
            "same time as minCandidateNodesPercentage]",
        ),
        ({"minCandidateNodesAbsolute": "5"}, "minCandidateNodesAbsolute: expected an integer, got '5'"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=rf"\A{re.escape(message)}\Z"):
        DefaultPreemption.from_profile(Handle(table=NodeTable()), args)


def test_needs_the_framework_on_the_handle() -> None:
    plugin = DefaultPreemption.from_profile(Handle(table=NodeTable()), {})
    from policy_scheduler.scheduler.framework.cycle_state import CycleState

    result, status = plugin.post_filter(CycleState(), pod("p", priority=VERY_HIGH), statuses({}))
    assert result is None
    assert status.code == Code.ERROR


def test_an_unavailable_policy_picks_no_victims_and_says_why() -> None:
    """Fail safe: the profile's EvictionPolicy cannot be used, so nothing is preempted."""
    pods = [pod("low", "node1", LOW, SMALL), pod("mid", "node1", MID, MEDIUM)]
    preemptor = pod("p", priority=HIGH, req={"cpu": 400, "memory": 400})
    reason = "preemption is off: no EvictionPolicy named 'careful'"
    env = build([node("node1")], pods, policy=EvictionPolicyConfig(unavailable_reason=reason))
    result, status = post_filter(env, preemptor)
    assert result is None
    assert status.code == U
    assert status.message == f"preemption: {reason}"
    env = build([node("node1")], pods, policy=BEST_EFFORT)  # the same scene with a usable policy
    result, status = post_filter(env, preemptor)
    assert status.is_success
    assert victim_names(result) == ["mid"]
