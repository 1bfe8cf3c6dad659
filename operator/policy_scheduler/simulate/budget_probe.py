"""Name the victims a PodDisruptionBudget keeps a pending pod from preempting.

Under budgetMode Enforce the preemption plugin drops every node whose victims a budget would
refuse, so the pod just stays pending ("Preemption victims would violate a
PodDisruptionBudget"). To say which victims, the run is probed once more with the same policy
in BestEffort and dry run (victims are chosen as kube-scheduler would, nothing is evicted), and
the victims found for those pods get their verdict under the real policy. Outcomes are not
changed: the probe only explains them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.plugins.defaultpreemption import DEFAULT_POLICY, EvictionPolicyConfig
from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import BUDGET_VIOLATION
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import BUDGET_BEST_EFFORT
from policy_scheduler.simulate.run import PodOutcome, PolicyFor, simulate
from policy_scheduler.simulate.scenario import Scenario
from policy_scheduler.simulate.verdicts import victim_verdicts


def explain_budget_blocks(
    scenario: Scenario,
    profiles: list[ResolvedProfile],
    policy_for: PolicyFor,
    outcomes: Sequence[PodOutcome],
    seed: int = 0,
) -> int:
    """Fill `victims` of pending pods a budget blocked; returns how many were explained."""
    blocked = [o for o in outcomes if o.node is None and BUDGET_VIOLATION in (o.message or "")]
    if not blocked:
        return 0

    def probe_policy(scheduler_name: str) -> EvictionPolicyConfig:
        real = policy_for(scheduler_name) or DEFAULT_POLICY
        return dataclasses.replace(real, budget_mode=BUDGET_BEST_EFFORT, dry_run=True)

    probe = {
        f"{o.namespace}/{o.name}": o for o in simulate(scenario, profiles, seed, policy_for=probe_policy)
    }
    pods = {p.key: p for p in scenario.pods}
    schedulers = {p.key: p.scheduler_name for p in scenario.pods}
    explained = 0
    for outcome in blocked:
        key = f"{outcome.namespace}/{outcome.name}"
        found = probe.get(key)
        if found is None or not found.victims:
            continue
        real = policy_for(schedulers[key]) or DEFAULT_POLICY
        victims = [pods[k] for k in found.victims if k in pods]
        outcome.victims = {v.key: verdict for v, verdict in victim_verdicts(real, victims, scenario.pdbs)}
        explained += 1
    return explained
