"""What the evictor would do with each victim of a preemption, under the profile's EvictionPolicy.

The operator evicts the victims in order through the Eviction API: an eviction a
PodDisruptionBudget refuses stops the job under budgetMode Enforce (the victims after it are
not tried), and is replaced by a DELETE under BestEffort; a dry-run policy evicts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from policy_scheduler.apiobjects.cluster_objects import PDBInfo
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import EvictionPolicyConfig
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import budget_verdicts, pdb_selects

ALLOWED = "allowed"  # the Eviction API would accept it
BLOCKED_BY_BUDGET = "blockedByBudget"  # refused by a PodDisruptionBudget: the preemptor waits
DELETED_DESPITE_BUDGET = "deletedDespiteBudget"  # BestEffort: refused, then deleted anyway
DRY_RUN = "dryRun"  # the policy only reports
NOT_ATTEMPTED = "notAttempted"  # after a blocked victim, or the policy is unusable
EVICTED_VERDICTS = frozenset({ALLOWED, DELETED_DESPITE_BUDGET})


def victim_verdicts(
    policy: EvictionPolicyConfig, victims: Sequence[Pod], pdbs: Sequence[PDBInfo]
) -> list[tuple[Pod, str]]:
    """Each non-terminating victim, in eviction order, with what would happen to it."""
    if policy.dry_run:
        return [(v, DRY_RUN) for v in victims if not v.terminating]
    if policy.unavailable_reason is not None:
        return [(v, NOT_ATTEMPTED) for v in victims if not v.terminating]
    verdicts: list[tuple[Pod, str]] = []
    stopped = False
    for victim, violated in budget_verdicts(victims, pdbs):
        if stopped:
            verdicts.append((victim, NOT_ATTEMPTED))
        elif not violated:
            verdicts.append((victim, ALLOWED))
        elif policy.enforce_budgets:
            verdicts.append((victim, BLOCKED_BY_BUDGET))
            stopped = True
        else:
            verdicts.append((victim, DELETED_DESPITE_BUDGET))
    return verdicts


def after_evictions(pdbs: Sequence[PDBInfo], evicted: Sequence[Pod]) -> list[PDBInfo]:
    """The budgets once `evicted` are gone, as the Eviction API records them (disruptedPods)."""
    updated: list[PDBInfo] = []
    for pdb in pdbs:
        taken = [p for p in evicted if pdb_selects(pdb, p) and p.name not in pdb.disrupted_pods]
        if taken:
            pdb = dataclasses.replace(
                pdb,
                disruptions_allowed=max(0, pdb.disruptions_allowed - len(taken)),
                disrupted_pods=pdb.disrupted_pods | {p.name for p in taken},
            )
        updated.append(pdb)
    return updated
