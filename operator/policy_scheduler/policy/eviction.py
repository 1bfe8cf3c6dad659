"""EvictionPolicy: how victims chosen by preemption are evicted, referenced by SchedulingProfiles."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from policy_scheduler.policy.base import (
    LastAcceptedGeneration,
    LastAcceptedSpec,
    ObservedGeneration,
    SpecModel,
    StatusModel,
    cel_rule,
    validations,
)
from policy_scheduler.policy.conditions import CONDITIONS_LIST, Conditions
from policy_scheduler.policy.constants import MAX_RECENT_EVICTIONS
from policy_scheduler.policy.errors import field_error
from policy_scheduler.policy.kube_types import LabelSelector

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_ONE_SELECTOR = cel_rule(
    "has(self.namespaceSelector) || has(self.podSelector)", "set namespaceSelector, podSelector or both"
)


class ProtectedTerm(SpecModel):
    """Pods that are never evicted: those matching both selectors (an unset selector matches all)."""

    model_config = ConfigDict(json_schema_extra=validations(_ONE_SELECTOR))

    namespace_selector: LabelSelector | None = Field(
        None, description="Selects namespaces by their labels. Unset: pods in any namespace."
    )
    pod_selector: LabelSelector | None = Field(
        None, description="Selects pods by their labels. Unset: every pod in the selected namespaces."
    )

    @model_validator(mode="after")
    def _one_selector(self) -> ProtectedTerm:
        if self.namespace_selector is None and self.pod_selector is None:
            raise field_error("", "set namespaceSelector, podSelector or both")
        return self


def _limit_rule(field: str) -> JsonDict:
    return cel_rule(
        f"!has(self.{field}) || self.{field} <= self.evictionsPerMinute",
        f"{field} above evictionsPerMinute would never take effect",
        f".{field}",
    )


class RateLimit(SpecModel):
    """Token-bucket limits on evictions; an eviction over a limit is postponed, not dropped."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _limit_rule("perNamespacePerMinute"),
                _limit_rule("perNodePerMinute"),
            ]
        }
    )

    evictions_per_minute: int = Field(
        60, ge=1, le=100000, description="Evictions allowed per minute in total."
    )
    burst: int = Field(10, ge=1, le=100000, description="Evictions allowed at once before the rate applies.")
    max_in_flight: int = Field(
        10, ge=1, le=10000, description="Evicted pods that may be terminating at the same time."
    )
    per_namespace_per_minute: int | None = Field(
        None, ge=1, le=100000, description="Evictions allowed per minute in one namespace. Unset: no limit."
    )
    per_node_per_minute: int | None = Field(
        None, ge=1, le=100000, description="Evictions allowed per minute from one node. Unset: no limit."
    )

    @model_validator(mode="after")
    def _scoped_limits(self) -> RateLimit:
        for field, value in (
            ("perNamespacePerMinute", self.per_namespace_per_minute),
            ("perNodePerMinute", self.per_node_per_minute),
        ):
            if value is not None and value > self.evictions_per_minute:
                raise field_error(field, f"{field} above evictionsPerMinute would never take effect")
        return self


BudgetMode = Literal["Enforce", "BestEffort"]
GangDisruption = Literal["Whole", "Member"]


class EvictionPolicySpec(SpecModel):
    """Rules for evicting the victims of preemption."""

    protected: list[ProtectedTerm] = Field(
        default_factory=list,
        max_length=64,
        description="Pods matching any of these terms are never evicted, so preemption looks for other "
        "victims.",
    )
    min_protected_priority: int | None = Field(
        None,
        ge=INT32_MIN,
        le=INT32_MAX,
        description="Pods with at least this priority are never evicted. Unset: priority alone protects "
        "no pod.",
    )
    budget_mode: BudgetMode = Field(
        "Enforce",
        description="How PodDisruptionBudgets are honoured. Enforce: evict through the Eviction API and "
        "never violate a budget; a blocked eviction counts as blockedByBudget and the preemptor waits. "
        "BestEffort: prefer victims whose eviction keeps budgets, but delete a victim anyway when no "
        "such victims exist, as kube-scheduler does.",
    )
    rate_limit: RateLimit = Field(
        default_factory=RateLimit,
        description="Limits on how fast pods are evicted.",
        json_schema_extra={"default": {}},
    )
    max_grace_period_seconds: int | None = Field(
        None,
        ge=0,
        description="Upper bound on the termination grace period given to an evicted pod. Unset: the "
        "pod's own terminationGracePeriodSeconds.",
    )
    dry_run: bool = Field(
        False,
        description="Only record what would be evicted (counters.wouldEvict, recentEvictions) without "
        "evicting; preemptors stay pending.",
    )
    gang_disruption: GangDisruption = Field(
        "Whole",
        description="How members of a PodGroup (gang) are disrupted. Whole: a member is chosen as a victim "
        "only if its whole group may be, and then every member holding a node is evicted with it (a "
        "partial gang would hold its nodes idle). Member: members are victims one by one, as any pod.",
    )


class EvictionCounters(StatusModel):
    """Totals since the policy was created."""

    evicted: int = Field(0, ge=0, description="Pods evicted.")
    blocked_by_budget: int = Field(0, ge=0, description="Evictions refused because of a PodDisruptionBudget.")
    rate_limited: int = Field(0, ge=0, description="Evictions postponed by a rate limit.")
    would_evict: int = Field(0, ge=0, description="Evictions skipped because of dryRun.")


EvictionResult = Literal["Evicted", "WouldEvict", "BlockedByBudget", "RateLimited", "Failed"]


class RecentEviction(StatusModel):
    """One eviction attempt."""

    time: datetime = Field(description="When the eviction was attempted.")
    namespace: str = Field(description="Namespace of the victim pod.")
    name: str = Field(description="Name of the victim pod.")
    uid: str | None = Field(None, description="UID of the victim pod.")
    preemptor_uid: str | None = Field(None, description="UID of the pod whose preemption chose the victim.")
    node: str | None = Field(None, description="Node the victim ran on.")
    result: EvictionResult = Field(
        description="Evicted, WouldEvict (dry run), BlockedByBudget, RateLimited or Failed."
    )


class EvictionPolicyStatus(StatusModel):
    """What the policy has done."""

    observed_generation: ObservedGeneration = None
    conditions: Conditions = Field(
        default_factory=list,
        description="Accepted: the spec is valid and in use.",
        json_schema_extra=CONDITIONS_LIST,
    )
    last_accepted_generation: LastAcceptedGeneration = None
    last_accepted_spec: LastAcceptedSpec = None
    counters: EvictionCounters = Field(
        default_factory=EvictionCounters, description="Eviction totals by outcome."
    )
    recent_evictions: list[RecentEviction] = Field(
        default_factory=list,
        max_length=MAX_RECENT_EVICTIONS,
        description=f"The latest eviction attempts, newest first, at most {MAX_RECENT_EVICTIONS}.",
    )
