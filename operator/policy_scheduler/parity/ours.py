"""Our side: one scheduling cycle of our core for one pod, on exactly the reference's state.

The engine is rebuilt from the cluster objects before every pod, so a pod is judged on the
placements kube-scheduler made, never on our own earlier choices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.apiobjects.convert import pod_from_dict
from policy_scheduler.apiobjects.convert_cluster import node_from_dict, pdb_from_dict
from policy_scheduler.apiobjects.dra import store_from_manifests
from policy_scheduler.apiobjects.storage_convert import storage_object_from_dict
from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, FitError
from policy_scheduler.scheduler.framework.outcomes import FrameworkError
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import (
    BUDGET_BEST_EFFORT,
    EvictionPolicyConfig,
)
from policy_scheduler.scheduler.schedule_one import SchedulingError
from policy_scheduler.scheduler.storage.lister import StorageObjects

# kube-scheduler may pick victims that violate a budget (as a last resort); our default
# EvictionPolicy (budgetMode Enforce) never does. BestEffort is upstream's behaviour.
UPSTREAM_BUDGETS = EvictionPolicyConfig(budget_mode=BUDGET_BEST_EFFORT)


def _upstream_budgets(scheduler_name: str) -> EvictionPolicyConfig:
    return UPSTREAM_BUDGETS


@dataclass(slots=True)
class Decision:
    """What our core decided for one pod; `best` holds every node it might pick."""

    outcome: str  # bound | unschedulable | preempt | gated | error
    feasible: list[str] = field(default_factory=list)
    best: set[str] = field(default_factory=set)
    scores: dict[str, int] = field(default_factory=dict)
    plugin_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    message: str = ""
    # preemption: nodes tied for the nomination, and the victims on each candidate node
    nominees: set[str] = field(default_factory=set)
    victims: dict[str, list[str]] = field(default_factory=dict)


def evaluate(
    profile: ResolvedProfile,
    nodes: Sequence[Mapping[str, Any]],
    bound: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    namespace_labels: Mapping[str, Mapping[str, str]],
    pdbs: Sequence[Mapping[str, Any]] = (),
    dra: Sequence[Mapping[str, Any]] = (),
    storage: Sequence[Mapping[str, Any]] = (),
) -> Decision:
    """Schedule `pod` (an API object) once, given `nodes` and the `bound` pods (API objects);
    `storage` holds the cluster's storage objects and `dra` its DeviceClasses, ResourceSlices
    and ResourceClaims (API objects, each with its kind)."""
    budgets = [pdb_from_dict(p) for p in pdbs]
    claims = DraServices(store_from_manifests(dra), compile_selector)
    services = ClusterServices(list_pdbs=lambda: budgets, eviction_policy=_upstream_budgets, dra=claims)
    volumes = StorageObjects([storage_object_from_dict(o["kind"], o, defaults=False) for o in storage])
    engine = Engine(seed=0, services=services, storage=volumes)
    engine.set_profiles([profile])
    engine.set_namespace_labels(namespace_labels)
    for node in nodes:
        engine.node_added(node_from_dict(node))
    for other in bound:
        engine.pod_added(pod_from_dict(other))
    framework = engine.frameworks[profile.scheduler_name]
    target = pod_from_dict(pod)
    if not framework.run_pre_enqueue(target).is_success:
        return Decision("gated")
    state = CycleState()
    try:
        result = engine.scheduler.schedule_pod(framework, state, target)
    except FitError as fit:
        return _unschedulable(engine, framework, state, target, fit)
    except (SchedulingError, FrameworkError) as exc:
        return Decision("error", message=str(exc))
    table = engine.cache.table
    rows = list(result.feasible_rows) if result.feasible_rows is not None else []
    feasible = [table.nodes[int(r)].name for r in rows]
    decision = Decision("bound", feasible=feasible, best={result.node_name})
    if result.scores is not None:
        totals = result.scores.total
        decision.scores = {name: int(totals[i]) for i, name in enumerate(feasible)}
        top = max(decision.scores.values())
        decision.best = {name for name, score in decision.scores.items() if score == top}
        for plugin, values in result.scores.by_plugin.items():
            for i, name in enumerate(feasible):
                decision.plugin_scores.setdefault(name, {})[plugin] = int(values[i])
    return decision


def _unschedulable(
    engine: Engine, framework: Framework, state: CycleState, pod: Pod, fit: FitError
) -> Decision:
    diagnosis = fit.diagnosis
    candidates = _preemption_candidates(framework, state.clone(), pod, diagnosis)
    result, status = (
        framework.run_post_filter(state, pod, diagnosis) if framework.points.post_filter else (None, None)
    )
    if status is not None and status.reasons:  # as schedule_one: a successful preemption has one from v1.37
        diagnosis.post_filter_msg = status.message
    decision = Decision("unschedulable", message=str(fit))
    if result is not None and result.nominated_node_name:
        decision.outcome = "preempt"
        decision.victims = candidates
        decision.nominees = _tied_nominees(framework, state, pod, diagnosis) or {result.nominated_node_name}
        decision.victims.setdefault(result.nominated_node_name, [v.key for v in result.victims])
    return decision


def _preemption_plugin(framework: Framework) -> Any:
    return framework.plugins.get("DefaultPreemption")


def _preemption_candidates(
    framework: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis
) -> dict[str, list[str]]:
    """Victims on every node where preemption would work (all candidates, not just one)."""
    found = _dry_run(framework, state, pod, diagnosis)
    return {c.name: [v.key for v in c.victims] for c in found}


def _dry_run(framework: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> list[Any]:
    plugin = _preemption_plugin(framework)
    if plugin is None:
        return []
    from policy_scheduler.scheduler.plugins.defaultpreemption import candidates as cands

    rows = cands.nodes_where_preemption_might_help(plugin.table, diagnosis)
    if not len(rows):
        return []
    policy = plugin.policy(pod)
    found = cands.dry_run_preemption(
        framework,
        state,
        pod,
        rows,
        plugin.handle.services.list_pdbs(),
        0,
        len(rows),  # every candidate, whatever the random offset
        lambda victim: plugin.is_eligible_victim(policy, victim, pod),
        plugin.handle.clock(),
        policy.enforce_budgets,
    )
    return list(found.candidates)


def _tied_nominees(framework: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> set[str]:
    """Every candidate pickOneNodeForPreemption could return for some candidate order: the
    first of the tied candidates wins, and upstream's order depends on a random offset."""
    from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import select_candidate

    found = _dry_run(framework, state.clone(), pod, diagnosis)
    plugin = _preemption_plugin(framework)
    now = plugin.handle.clock() if plugin is not None else 0.0
    tied: set[str] = set()
    for i in range(len(found)):
        rotated = found[i:] + found[:i]
        best = select_candidate(rotated, now)
        if best is not None and best.name == rotated[0].name:
            tied.add(best.name)
    return tied
