"""Schedule a Scenario in memory with the very same engine the operator runs."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.apiobjects.cluster_objects import PDBInfo
from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.waiting_pod import WaitingPod
from policy_scheduler.scheduler.gang import group_key
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption import DEFAULT_POLICY, EvictionPolicyConfig
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.simulate import dra
from policy_scheduler.simulate.pressure_notes import pressure_notes
from policy_scheduler.simulate.profiles import eviction_policy_lookup
from policy_scheduler.simulate.scenario import Scenario
from policy_scheduler.simulate.verdicts import EVICTED_VERDICTS, after_evictions, victim_verdicts
from policy_scheduler.simulate.volumes import MemoryVolumeAPI

PolicyFor = Callable[[str], EvictionPolicyConfig | None]


class FakeClock:
    """Simulated time: backoffs pass instantly, so a run never sleeps."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(slots=True)
class PodOutcome:
    namespace: str
    name: str
    node: str | None = None
    nominated_node: str | None = None
    message: str | None = None
    preempted: list[str] = field(default_factory=list)
    dry_run: str | None = None  # what a dry-run EvictionPolicy would have evicted
    # victim key -> what the evictor would do with it (see simulate/verdicts.py), last attempt
    victims: dict[str, str] = field(default_factory=dict)
    # DRA: the devices allocated to the pod's claims (claim, request, driver, pool, device)
    devices: list[dict[str, str]] = field(default_factory=list)
    # DRAExtendedResource: the claim created for the pod's extended resources (name, requests,
    # the pod's requestMappings), None when it got none.
    extended_resource_claim: dict[str, Any] | None = None
    # Node pressure: the eviction thresholds this placement leaves its node below (usage data only)
    pressure: list[str] = field(default_factory=list)


class _MemoryBinder:
    """Binding succeeds at once and is "observed" like a watch event would be."""

    def __init__(self) -> None:
        self.engine: Engine | None = None

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        pending = self.engine.unassigned.get(pod.key, dataclasses.replace(pod, node_name=""))
        bound = dataclasses.replace(pending, node_name=node_name, nominated_node_name="")
        self.engine.pod_updated(pending, bound)


Progress = Callable[[int, int], None]  # (pods attempted at least once, pods to schedule)


class _RecordingHooks:
    def __init__(self, outcomes: dict[str, PodOutcome], pdbs: list[PDBInfo]) -> None:
        self.outcomes = outcomes
        self.attempted: set[str] = set()
        self.engine: Engine | None = None
        self.policy_for: PolicyFor | None = None
        self.pdbs = pdbs  # as the disruption controller keeps them: evictions use up budgets
        self.placements: list[tuple[Pod, str]] = []  # in the order they were made

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self.placements.append((pod, node_name))
        outcome = self.outcomes[pod.key]
        outcome.node, outcome.message = node_name, None
        self.attempted.add(pod.key)

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        outcome = self.outcomes[pod.key]
        outcome.message = message
        self.attempted.add(pod.key)
        if nominated_node == "" and outcome.nominated_node:
            outcome.nominated_node = None
            assert self.engine is not None
            current = self.engine.unassigned.get(pod.key)
            if current is not None:
                self.engine.pod_updated(current, dataclasses.replace(current, nominated_node_name=""))
        if nominated_node:
            self._nominate(pod, nominated_node)

    def _nominate(self, pod: Pod, node_name: str) -> None:
        self.outcomes[pod.key].nominated_node = node_name
        # The API server would record status.nominatedNodeName; the next attempt sees it.
        assert self.engine is not None
        current = self.engine.unassigned.get(pod.key)
        if current is not None:
            self.engine.pod_updated(current, dataclasses.replace(current, nominated_node_name=node_name))

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        assert self.engine is not None
        policy = (self.policy_for(framework.scheduler_name) if self.policy_for else None) or DEFAULT_POLICY
        verdicts = victim_verdicts(policy, result.victims, self.pdbs)
        outcome = self.outcomes[pod.key]
        outcome.victims = {victim.key: verdict for victim, verdict in verdicts}
        for member, node_name in result.nominations:  # a preempting gang's other members
            self._nominate(member, node_name)
        if policy.dry_run:
            # Dry run: report what would be evicted, evict nothing (as the operator does).
            would = ", ".join(v.key for v in result.victims)
            outcome.dry_run = f"dry run: would preempt {would} on {result.nominated_node_name}"
            return
        # Evicted victims are gone at once; a budget-blocked one stays (the preemptor waits).
        evicted = [victim for victim, verdict in verdicts if verdict in EVICTED_VERDICTS]
        self.pdbs[:] = after_evictions(self.pdbs, evicted)
        for victim in evicted:
            outcome.preempted.append(victim.key)
            stored = self.engine.cache.get_pod(victim.key) or victim
            self.engine.pod_deleted(stored)
            if victim.key in self.outcomes:
                self.outcomes[victim.key].node = None
                self.outcomes[victim.key].message = f"preempted by {pod.key}"

    def nomination_cleared(self, pod: Pod) -> None:
        self.outcomes[pod.key].nominated_node = None
        assert self.engine is not None
        current = self.engine.unassigned.get(pod.key)
        if current is not None:
            self.engine.pod_updated(current, dataclasses.replace(current, nominated_node_name=""))

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        pass


async def _simulate(
    scenario: Scenario,
    profiles: list[ResolvedProfile],
    seed: int,
    progress: Progress | None,
    policy_for: PolicyFor | None,
    node_usage: NodeUsageStore,
) -> list[PodOutcome]:
    outcomes = {p.key: PodOutcome(p.namespace, p.name, node=p.node_name or None) for p in scenario.pods}
    claims, pods = dra.prepare(scenario.dra, scenario.pods)
    clock = FakeClock()
    hooks = _RecordingHooks(outcomes, list(scenario.pdbs))
    binder = _MemoryBinder()
    if policy_for is None:
        policy_for = eviction_policy_lookup(scenario, profiles)
    hooks.policy_for = policy_for
    services = ClusterServices(
        list_pdbs=lambda: hooks.pdbs,  # evictions use them up, as the Eviction API records
        eviction_policy=policy_for,
        owner_selectors=DefaultSelectorIndex(scenario.owners).owner_selectors,
        dra=claims,
        node_usage=node_usage,
    )
    storage = StorageObjects(scenario.storage)
    volumes = MemoryVolumeAPI(storage, lambda old, new: engine.storage_changed(old, new))
    engine = Engine(
        hooks=hooks,
        binder=binder,
        seed=seed,
        clock=clock,
        services=services,
        storage=storage,
        volume_api=volumes,
    )
    hooks.engine = binder.engine = engine
    engine.set_profiles(profiles)
    for group in scenario.pod_groups:
        engine.pod_group_set(group)
    for group in scenario.workload_groups:
        engine.workload_group_set(group)
    engine.set_namespace_labels({name: ns.labels for name, ns in scenario.namespaces.items()})
    for node in scenario.nodes:
        engine.node_added(node)
    for pod in pods:
        if not engine.responsible_for(pod) and not pod.node_name:
            outcomes[pod.key].message = f"no SchedulingProfile for schedulerName {pod.scheduler_name!r}"
        clock.advance(0.001)  # queue order follows input order among equal priorities
        engine.pod_added(dataclasses.replace(pod, creation_timestamp=clock()))
    budget = 20 * len(scenario.pods) + 100
    to_schedule = sum(1 for pod in scenario.pods if not pod.node_name)
    while budget > 0:
        budget -= 1
        if engine.schedule_next():
            await _settle(engine)
            if progress is not None:
                progress(len(hooks.attempted), to_schedule)
            continue
        deadline = _earliest_permit_deadline(engine)
        if deadline is not None:
            # Gang members wait at Permit: simulated time runs to their timeout.
            clock.advance(max(deadline - clock(), 0.0))
            engine.reject_expired_waiting_pods()
            await _settle(engine)
            continue
        counts = engine.queue.pending_counts()
        if counts["backoff"] == 0:
            break
        clock.advance(
            engine.queue.backoff_remaining() if hasattr(engine.queue, "backoff_remaining") else 11.0
        )
        engine.queue.flush_backoff_completed()
    while (deadline := _earliest_permit_deadline(engine)) is not None:  # out of budget: end the waits
        clock.advance(max(deadline - clock(), 0.0))
        engine.reject_expired_waiting_pods()
        await _settle(engine)
    await engine.scheduler.drain_binding()
    _explain_groups(engine, scenario, outcomes)
    bound = [p for p in scenario.pods if p.node_name]
    for key, notes in pressure_notes(node_usage, bound, hooks.placements).items():
        if outcomes[key].node:
            outcomes[key].pressure = notes
    for pod in pods:
        outcomes[pod.key].devices = dra.allocated_devices(claims.store, pod)
        outcomes[pod.key].extended_resource_claim = dra.extended_resource_claim(claims, pod)
        _gate_message(engine, pod, outcomes[pod.key])
    return [outcomes[p.key] for p in scenario.pods]


def _waiting(engine: Engine) -> list[WaitingPod]:
    return [w for fw in engine.frameworks.values() for w in fw.waiting_pods.values() if w.outcome is None]


def _earliest_permit_deadline(engine: Engine) -> float | None:
    deadlines = [d for w in _waiting(engine) for d in w.deadlines.values()]
    return min(deadlines) if deadlines else None


async def _settle(engine: Engine) -> None:
    """Let binding cycles run until every one left waits at Permit (those would block a drain)."""
    for _ in range(1000):
        if len(engine.scheduler.binding_tasks) <= len(_waiting(engine)):
            return
        await asyncio.sleep(0)


def _explain_groups(engine: Engine, scenario: Scenario, outcomes: dict[str, PodOutcome]) -> None:
    """A pending gang member says why its group waits (PreEnqueue holds pods without a failure)."""
    store = engine.pod_groups
    for pod in scenario.pods:
        key = group_key(pod)
        outcome = outcomes[pod.key]
        if not key or outcome.node:
            continue
        reason = store.state(key).message
        if reason and (outcome.message is None or reason not in outcome.message):
            outcome.message = f"{outcome.message} (group: {reason})" if outcome.message else reason


def _gate_message(engine: Engine, pod: Pod, outcome: PodOutcome) -> None:
    """A pod PreEnqueue kept out of the queue (scheduling gates, a claim not created) was
    never attempted: its reason is the gating plugin's message."""
    if outcome.node or outcome.message:
        return
    framework = engine.frameworks.get(pod.scheduler_name)
    status = framework.run_pre_enqueue(pod) if framework is not None else None
    if status is not None and not status.is_success:
        outcome.message = status.message


def simulate(
    scenario: Scenario,
    profiles: list[ResolvedProfile],
    seed: int = 0,
    progress: Progress | None = None,
    policy_for: PolicyFor | None = None,
    node_usage: NodeUsageStore | None = None,
) -> list[PodOutcome]:
    """Outcomes in input order; `progress` is called after every scheduling attempt.
    `policy_for`: scheduler name -> its EvictionPolicy (default: as the scenario's profiles name).
    `node_usage`: the nodes' usage (EvictionHeadroom scores with it; placements that leave a
    node below an eviction threshold get a `pressure` note)."""
    store = node_usage if node_usage is not None else NodeUsageStore()
    return asyncio.run(_simulate(scenario, profiles, seed, progress, policy_for, store))
