"""Builders for the DefaultPreemption tests: a NodeTable, the real default profile and a Framework.

Quantities follow upstream default_preemption_test.go: smallRes is 100m cpu / 100 bytes, etc.
Nodes get 32 pods of capacity, as st.MakeNode().Capacity() does.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policy_scheduler.scheduler.config import PluginRef, ProfileConfig
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    Plugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
)
from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status, error, unschedulable
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Requirement,
    TopologySpreadConstraint,
)
from policy_scheduler.scheduler.nodetable import NodeTable, Rows
from policy_scheduler.scheduler.plugins.defaultpreemption import DefaultPreemption, EvictionPolicyConfig
from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import Candidate, dry_run_preemption
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, in_tree_registry
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": 100, "memory": 100}
MEDIUM = {"cpu": 200, "memory": 200}
LARGE = {"cpu": 300, "memory": 300}
VERY_LARGE = {"cpu": 500, "memory": 500}
ONE_POD = {"pods": 1}
NOW = 1_000_000.0
BEST_EFFORT = EvictionPolicyConfig(budget_mode="BestEffort")


def pod(
    name: str,
    node: str = "",
    priority: int = 0,
    req: Mapping[str, int] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    start: float | None = None,
    terminating: bool = False,
    nominated: str = "",
    preemption_policy: str = "PreemptLowerPriority",
    affinity: Affinity | None = None,
    spread: Sequence[TopologySpreadConstraint] = (),
) -> Pod:
    containers = (Container("con0", requests=dict(req)),) if req else ()
    return Pod(
        name=name,
        namespace=namespace,
        uid=name,
        labels=dict(labels or {}),
        priority=priority,
        node_name=node,
        nominated_node_name=nominated,
        containers=containers,
        start_time=start,
        deletion_timestamp=1.0 if terminating else None,
        preemption_policy=preemption_policy,
        affinity=affinity,
        topology_spread_constraints=tuple(spread),
    )


def node(
    name: str, capacity: Mapping[str, int] | None = None, labels: Mapping[str, str] | None = None
) -> Node:
    allocatable = {"pods": 32, **(capacity if capacity is not None else VERY_LARGE)}
    return Node(name=name, labels=dict(labels or {}), allocatable=allocatable)


def anti_affinity_exists(key: str, topology_key: str) -> Affinity:
    term = PodAffinityTerm(
        topology_key=topology_key,
        label_selector=LabelSelector(match_expressions=(Requirement(key, "Exists"),)),
    )
    return Affinity(pod_anti_affinity=PodAffinity(required=(term,)))


@dataclass(frozen=True, slots=True)
class PDBFake:
    """The fields preemption reads (apiobjects' PDBInfo in production)."""

    selector: LabelSelector | None
    disruptions_allowed: int = 0
    namespace: str = "default"
    disrupted_pods: frozenset[str] = frozenset()


def match_labels(**labels: str) -> LabelSelector:
    return LabelSelector(match_labels=tuple(sorted(labels.items())))


class FixedRng(random.Random):
    """randrange returns a fixed offset, like upstream's tests seeding getOffsetRand."""

    def __init__(self, offset: int) -> None:
        super().__init__(0)
        self.offset = offset

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self.offset


class Nominations:
    def __init__(self, by_node: Mapping[str, Sequence[Pod]] | None = None) -> None:
        self.by_node = {k: list(v) for k, v in (by_node or {}).items()}

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.by_node.get(node_name, []))

    def nominated_priorities(self) -> dict[str, int]:
        return {node: max(p.priority for p in pods) for node, pods in self.by_node.items() if pods}


class FalseFilter(FilterPlugin):
    """tf.NewFalseFilterPlugin: every node is unschedulable."""

    name = "FalseFilter"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        return FilterResult.reject_all(len(rows), unschedulable("injecting failure for pod test-pod"))


class ErrorOnLabelPlugin(PreFilterPlugin):
    """The upstream TestPlugin: AddPod/RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"
    has_extensions = True

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS

    def _check(self, verb: str, pod: Pod, row: int) -> Status:
        if self.table.nodes[row].labels.get("error") == "true":
            return error(f"failed to {verb} pod: {pod.name}")
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        return self._check("add", pod, row)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        return self._check("remove", pod, row)


EXTRA_PLUGINS: dict[str, type[Plugin]] = {
    FalseFilter.name: FalseFilter,
    ErrorOnLabelPlugin.name: ErrorOnLabelPlugin,
}


@dataclass(slots=True)
class Env:
    table: NodeTable
    framework: Framework
    handle: Handle
    services: ClusterServices = field(default_factory=ClusterServices)

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.framework.plugins["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def snapshot(self) -> dict[str, Any]:
        """Everything a dry run could disturb on the table."""
        n = len(self.table)
        return {
            "requested": self.table.requested[:, :n].copy(),
            "non_zero": self.table.non_zero_requested[:, :n].copy(),
            "pod_count": self.table.pod_count[:n].copy(),
            "pods": [list(self.table.pods[r].items()) for r in range(n)],
            "host_ports": {k: {r: dict(c) for r, c in v.items()} for k, v in self.table.host_ports.items()},
        }


def build(
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    *,
    args: Mapping[str, Any] | None = None,
    policy: EvictionPolicyConfig | None = None,
    pdbs: Sequence[Any] | None = None,
    nominated: Mapping[str, Sequence[Pod]] | None = None,
    rng: random.Random | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    extra_filters: Sequence[str] = (),
    extra_pre_filters: Sequence[str] = (),
    services: Mapping[str, Any] | None = None,
    features: Features | None = None,
) -> Env:
    """The default profile with the real in-tree plugins (plus optional test plugins), of
    `features`' release (None: the default one)."""
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    for p in pods:
        if p.node_name:
            table.add_pod(p, table.row(p.node_name))
    config = ProfileConfig(plugin_config={"DefaultPreemption": dict(args)} if args is not None else {})
    profile = resolve_profile(config, implemented_plugin_names(), features=features)
    if extra_filters or extra_pre_filters:
        points = dict(profile.points)
        points["filter"] = (*points["filter"], *(PluginRef(n) for n in extra_filters))
        points["preFilter"] = (*points["preFilter"], *(PluginRef(n) for n in extra_pre_filters))
        profile = dataclasses.replace(profile, points=points)
    fields: dict[str, Any] = dict(services or {})
    if pdbs is not None:
        budgets = list(pdbs)
        fields["list_pdbs"] = lambda: budgets
    if policy is not None:
        fields["eviction_policy"] = lambda scheduler_name: policy
    all_services = ClusterServices(**fields)
    handle = Handle(
        table=table,
        nominator=Nominations(nominated),
        rng=rng or random.Random(1),
        clock=lambda: NOW,
        namespace_labels=dict(namespace_labels or {}),
        services=all_services,
    )
    framework = Framework(profile, {**in_tree_registry(), **EXTRA_PLUGINS}, handle)
    return Env(table, framework, framework.handle, all_services)


def diagnosis_of(env: Env, state: CycleState, preemptor: Pod) -> Diagnosis:
    """What the scheduler would hand PostFilter: every node's filter status (all must fail)."""
    outcome = env.framework.run_filters_with_nominated_pods(state, preemptor, env.table.order())
    diagnosis = Diagnosis()
    for i, row in enumerate(outcome.rows):
        status = outcome.status_at(i)
        assert not status.is_success, f"{env.table.nodes[int(row)].name} fits without preemption"
        diagnosis.node_to_status[env.table.nodes[int(row)].name] = status
    return diagnosis


def statuses(explicit: Mapping[str, Code], absent: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE) -> Diagnosis:
    return Diagnosis(
        node_to_status=NodeToStatus({name: Status(code) for name, code in explicit.items()}),
        absent_nodes_status=Status(absent),
    )


def post_filter(
    env: Env, preemptor: Pod, diagnosis: Diagnosis | None = None
) -> tuple[PostFilterResult | None, Status]:
    state = CycleState()
    _, status, _ = env.framework.run_pre_filter(state, preemptor)
    assert status.is_success, status
    if diagnosis is None:
        diagnosis = diagnosis_of(env, state, preemptor)
    return env.plugin.post_filter(state, preemptor, diagnosis)


def victim_names(result: PostFilterResult | None) -> list[str]:
    assert result is not None
    return [p.name for p in result.victims]


def dry_run(
    env: Env,
    preemptor: Pod,
    pdbs: Sequence[Any] = (),
    *,
    offset: int = 0,
    num_candidates: int | None = None,
    enforce: bool = False,
    policy: EvictionPolicyConfig | None = None,
) -> list[tuple[str, list[str], int]]:
    """DryRunPreemption over every node (in table order), as upstream's TestDryRunPreemption:
    candidates sorted by node name, victims sorted by name."""
    state = CycleState()
    _, status, _ = env.framework.run_pre_filter(state, preemptor)
    assert status.is_success, status
    rows = np.arange(len(env.table), dtype=np.intp)
    chosen = policy or BEST_EFFORT
    found = dry_run_preemption(
        env.framework,
        state,
        preemptor,
        rows,
        list(pdbs),
        offset,
        num_candidates if num_candidates is not None else env.plugin.num_candidates(len(rows)),
        lambda victim: env.plugin.is_eligible_victim(chosen, victim, preemptor),
        NOW,
        enforce,
    )
    return sorted((c.name, sorted(p.name for p in c.victims), c.num_pdb_violations) for c in found.candidates)


def candidate(name: str, victims: Collection[Pod], violations: int = 0) -> Candidate:
    return Candidate(name, list(victims), violations)
