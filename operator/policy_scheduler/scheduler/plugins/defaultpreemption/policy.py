"""The eviction policy preemption obeys: which pods may be victims and how budgets count.

This is the core's plain view of an EvictionPolicy CR (the policy layer converts the CR into
EvictionPolicyConfig). The plugin reads it through ClusterServices.eviction_policy:
`(scheduler_name) -> EvictionPolicyConfig | None`; None means DEFAULT_POLICY.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policy_scheduler.scheduler.model import LabelSelector, Pod
from policy_scheduler.scheduler.selectors import SelectorError, label_selector_matches

# scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or
# above it. Such pods are never victims, whatever the policy says.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000

BUDGET_ENFORCE = "Enforce"
BUDGET_BEST_EFFORT = "BestEffort"
BUDGET_MODES = (BUDGET_ENFORCE, BUDGET_BEST_EFFORT)
# gangDisruption: a PodGroup member is evicted only with its whole group, or on its own.
GANG_WHOLE = "Whole"
GANG_MEMBER = "Member"
GANG_DISRUPTION_MODES = (GANG_WHOLE, GANG_MEMBER)


@dataclass(frozen=True, slots=True)
class ProtectedTerm:
    """Pods matching both selectors are protected; an unset (None) selector matches everything.

    Unlike a PDB's selector, None here means "not constrained", as in the CR."""

    namespace_selector: LabelSelector | None = None
    pod_selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class EvictionPolicyConfig:
    protected: tuple[ProtectedTerm, ...] = ()
    min_protected_priority: int | None = None
    budget_mode: str = BUDGET_ENFORCE  # Enforce | BestEffort
    # Used by whoever evicts (the operator), not by victim selection.
    dry_run: bool = False
    max_grace_period_seconds: int | None = None
    # Set when the profile's EvictionPolicy cannot be used: preempt nothing, and say why.
    unavailable_reason: str | None = None
    gang_disruption: str = GANG_WHOLE

    def __post_init__(self) -> None:
        if self.budget_mode not in BUDGET_MODES:
            raise ValueError(
                f"budgetMode: Unsupported value: {self.budget_mode!r}: supported values: {BUDGET_MODES}"
            )
        if self.gang_disruption not in GANG_DISRUPTION_MODES:
            raise ValueError(
                f"gangDisruption: Unsupported value: {self.gang_disruption!r}: "
                f"supported values: {GANG_DISRUPTION_MODES}"
            )

    @property
    def enforce_budgets(self) -> bool:
        return self.budget_mode == BUDGET_ENFORCE


DEFAULT_POLICY = EvictionPolicyConfig()


def _matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return True  # unset: no constraint
    try:
        return label_selector_matches(selector, labels)
    except SelectorError:
        return True  # an unparsable term protects rather than exposes (the CR is validated anyway)


def is_protected(
    policy: EvictionPolicyConfig, pod: Pod, namespace_labels: Mapping[str, Mapping[str, str]]
) -> bool:
    """Whether a term of the policy protects `pod` (any term; within a term, both selectors)."""
    if not policy.protected:
        return False
    ns_labels = namespace_labels.get(pod.namespace, {})
    return any(
        _matches(term.namespace_selector, ns_labels) and _matches(term.pod_selector, pod.labels)
        for term in policy.protected
    )


def may_be_victim(
    policy: EvictionPolicyConfig,
    victim: Pod,
    preemptor: Pod,
    namespace_labels: Mapping[str, Mapping[str, str]],
) -> bool:
    """isPreemptionAllowed: strictly lower priority than the preemptor, plus our policy."""
    if victim.priority >= preemptor.priority or victim.priority >= SYSTEM_CRITICAL_PRIORITY:
        return False
    if policy.min_protected_priority is not None and victim.priority >= policy.min_protected_priority:
        return False
    return not is_protected(policy, victim, namespace_labels)
