"""Explain a pod from a live snapshot: one scheduling cycle of the real core, nothing bound.

The snapshot is simulate's (simulate/live_snapshot.py) and the profiles are the ones the
operator would serve (simulate/policy_in_force.py). Every bound pod is placed, then only the
asked-for pod is tried, so the answer is "what the scheduler would say now", not a replay of
its queue.
"""

from __future__ import annotations

import dataclasses

from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder, Explanation
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore
from policy_scheduler.scheduler.pressure.placement import placement_pressure
from policy_scheduler.scheduler.versioning.semantics import Semantics, command_semantics
from policy_scheduler.simulate.policy_in_force import policy_in_force
from policy_scheduler.simulate.scenario import Scenario


class NotExplainable(LookupError):
    """The pod is not in the snapshot, or no profile serves it."""


def recompute(
    scenario: Scenario,
    namespace: str,
    name: str,
    semantics: Semantics | None = None,
    node_usage: NodeUsageStore | None = None,
) -> Explanation:
    """`semantics`: the release to decide like (None: the cluster's, as the operator follows it);
    `node_usage`: the nodes' usage (EvictionHeadroom scores with it, and the answer says whether
    the pod's requests push its node below an eviction threshold)."""
    key = f"{namespace}/{name}"
    target = next((p for p in scenario.pods if p.key == key), None)
    if target is None:
        raise NotExplainable(f"pod {key} not found (or it has finished)")
    if semantics is None:
        semantics = command_semantics(None, scenario.server_version, from_cluster=True)
    policy = policy_in_force(scenario.profiles, scenario.eviction_policies, semantics=semantics)
    recorder = DiagnosisRecorder()
    services = ClusterServices(
        list_pdbs=lambda: list(scenario.pdbs),
        eviction_policy=policy.policy_for,
        owner_selectors=DefaultSelectorIndex(scenario.owners).owner_selectors,
        node_usage=node_usage if node_usage is not None else NodeUsageStore(),
    )
    engine = Engine(seed=0, observer=recorder, services=services)
    engine.set_profiles(policy.profiles)
    if not engine.responsible_for(target):
        raise NotExplainable(f"no SchedulingProfile serves schedulerName {target.scheduler_name!r}")
    engine.set_namespace_labels({ns: info.labels for ns, info in scenario.namespaces.items()})
    for node in scenario.nodes:
        engine.node_added(node)
    for pod in scenario.pods:
        if pod.node_name and pod.key != key:
            engine.pod_added(pod)
    # A bound pod is explained as if it were pending now: where would it go?
    engine.pod_added(dataclasses.replace(target, node_name="", nominated_node_name=""))
    info = engine.queue.try_pop()
    if info is not None:
        engine.scheduler.schedule_one(info)  # the scheduling cycle only: nothing is bound
    found = recorder.get(namespace, name)
    if found is None:
        raise NotExplainable(f"pod {key} was not tried (gated or not schedulable by this scheduler)")
    tried = engine.unassigned.get(key) or engine.cache.get_pod(key)
    placement = placement_pressure(engine, found, tried) if tried is not None else None
    return dataclasses.replace(found, source="recomputed", placement=placement)
