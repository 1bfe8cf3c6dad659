"""EvictionPolicy: how victims chosen by preemption are evicted, referenced by SchedulingProfiles."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

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
from policy_scheduler.scheduler.pressure.relief import DEFAULT_MAX_USAGE_AGE, DEFAULT_TRANSITION_PERIOD
from policy_scheduler.scheduler.pressure.signals import PRIMARY_SIGNALS, VALID_SIGNALS
from policy_scheduler.scheduler.pressure.thresholds import (
    KubeletEvictionSettings,
    ThresholdError,
    eviction_config,
    parse_minimum_reclaims,
    parse_threshold_statement,
)

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


# The signals a threshold may be set for: the kubelet's, less the ones it derives itself
# (containerfs.*, allocatableMemory.available).
RELIEF_SIGNALS: tuple[str, ...] = PRIMARY_SIGNALS
_SIGNAL_LIST = ", ".join(f"'{s}'" for s in RELIEF_SIGNALS)
# A quantity (500Mi, 1.5Gi, 2e9) or a percentage (10%, 7.5%), never both.
_AMOUNT = r"^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|%)?$"
_KNOWN_SIGNALS = cel_rule(
    f"self.all(k, k in [{_SIGNAL_LIST}])",
    f"unsupported eviction signal: supported signals are {_SIGNAL_LIST}",
)
_AMOUNTS = cel_rule(
    f"self.all(k, self[k].matches('{_AMOUNT}'))",
    "each value is a quantity (e.g. 500Mi) or a percentage of the signal's capacity (e.g. 10%), not both",
)
_SOMETHING_TO_ACT_ON = cel_rule(
    "(has(self.thresholds) && size(self.thresholds) > 0) || !has(self.onNodeCondition) "
    "|| self.onNodeCondition",
    "set thresholds, or leave onNodeCondition on: otherwise relief never acts",
)
_RECLAIM_OF_A_THRESHOLD = cel_rule(
    "!has(self.minimumReclaim) || self.minimumReclaim.all(k, has(self.thresholds) && k in self.thresholds)",
    "a minimum reclaim needs a threshold of the same signal in thresholds",
    ".minimumReclaim",
)


Amount = Annotated[str, Field(max_length=32)]


class PressureRelief(SpecModel):
    """Relieve node pressure before the kubelet does: evict, through the Eviction API and within
    this policy's limits, the pods the kubelet would evict first."""

    model_config = ConfigDict(json_schema_extra=validations(_SOMETHING_TO_ACT_ON, _RECLAIM_OF_A_THRESHOLD))

    thresholds: dict[str, Amount] = Field(
        default_factory=dict,
        max_length=len(RELIEF_SIGNALS),
        description="Per eviction signal (memory.available, nodefs.available, nodefs.inodesFree, "
        "imagefs.available, imagefs.inodesFree, pid.available), the level below which relief acts: a "
        "quantity (1Gi) or a percentage of the signal's capacity (10%). Set them above the kubelet's "
        "evictionHard and evictionSoft, so relief acts first.",
        json_schema_extra=validations(_KNOWN_SIGNALS, _AMOUNTS),
    )
    minimum_reclaim: dict[str, Amount] = Field(
        default_factory=dict,
        max_length=len(RELIEF_SIGNALS),
        description="Per signal with a threshold, how much more than the threshold relief frees once "
        "it acts (as the kubelet's evictionMinimumReclaim): a quantity or a percentage.",
        json_schema_extra=validations(_KNOWN_SIGNALS, _AMOUNTS),
    )
    on_node_condition: bool = Field(
        True,
        description="Also act when the node reports MemoryPressure, DiskPressure or PIDPressure, on the "
        "kubelet's own thresholds of those signals.",
    )
    node_selector: LabelSelector | None = Field(
        None,
        description="The nodes relieved under this policy. Unset: every node. A node two policies "
        "select is relieved under the first by name.",
    )
    kubelet_eviction_hard: dict[str, Amount] | None = Field(
        None,
        max_length=len(VALID_SIGNALS),
        description="The evictionHard the selected nodes' kubelets run with, for nodes whose /configz "
        "the operator does not read (it does only with --kubelet-proxy, where RBAC allows nodes/proxy). "
        "Unset: the kubelet's defaults.",
    )
    max_usage_age_seconds: int = Field(
        int(DEFAULT_MAX_USAGE_AGE),
        ge=15,
        le=3600,
        description="Usage older than this counts as missing: nothing is evicted from a node without "
        "fresh usage (metrics-server's resolution is 15s at best).",
    )
    pressure_transition_period_seconds: int = Field(
        int(DEFAULT_TRANSITION_PERIOD),
        ge=0,
        le=3600,
        description="How long a node stays under pressure for placement (new pods of profiles naming "
        "this policy go elsewhere) after its signals are back above threshold plus minimum reclaim, as "
        "the kubelet's evictionPressureTransitionPeriod.",
    )

    @model_validator(mode="after")
    def _amounts(self) -> PressureRelief:
        for base, values in (("thresholds", self.thresholds), ("minimumReclaim", self.minimum_reclaim)):
            for signal in values:
                if signal not in RELIEF_SIGNALS:
                    raise field_error(
                        f"{base}[{signal}]",
                        f"unsupported eviction signal {signal}: supported signals are {_SIGNAL_LIST}",
                    )
        for signal, text in self.thresholds.items():
            path = f"thresholds[{signal}]"
            if text.strip() in ("0%", "100%"):
                raise field_error(path, f'"{text}" disables the threshold: leave {signal} out instead')
            try:
                parse_threshold_statement(signal, text, path)
            except ThresholdError as exc:
                raise field_error(exc.path, exc.message) from None
        try:
            parse_minimum_reclaims(self.minimum_reclaim, "minimumReclaim")
        except ThresholdError as exc:
            raise field_error(exc.path, exc.message) from None
        for signal in self.minimum_reclaim:
            if signal not in self.thresholds:
                raise field_error(
                    f"minimumReclaim[{signal}]",
                    f"no threshold for {signal} in thresholds: set one, or drop this",
                )
        if self.kubelet_eviction_hard is not None:
            try:
                eviction_config(KubeletEvictionSettings(eviction_hard=self.kubelet_eviction_hard))
            except ThresholdError as exc:
                raise field_error(
                    exc.path.replace("evictionHard", "kubeletEvictionHard", 1), exc.message
                ) from None
        if not self.thresholds and not self.on_node_condition:
            raise field_error(
                "thresholds", "set thresholds, or leave onNodeCondition on: otherwise relief never acts"
            )
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
    pressure_relief: PressureRelief | None = Field(
        None,
        description="Relieve node pressure gracefully: evict the pods the kubelet would evict first, "
        "through the Eviction API (PodDisruptionBudgets respected), within rateLimit and dryRun. Unset: "
        "no relief.",
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
EvictionReason = Literal["Preemption", "NodePressure"]


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
    reason: EvictionReason | None = Field(
        None,
        description="Why the pod was chosen: Preemption (unset in entries written before relief existed), "
        "or NodePressure (pressureRelief).",
    )
    signal: str | None = Field(None, description="NodePressure: the eviction signal relieved.")
    message: str | None = Field(None, description="What the signal was, or why the eviction did not happen.")


class RelievedNode(StatusModel):
    """A node pressure relief holds under pressure."""

    name: str = Field(description="The node.")
    conditions: list[str] = Field(
        default_factory=list, description="MemoryPressure, DiskPressure, PIDPressure: as relief sees them."
    )
    signals: list[str] = Field(default_factory=list, description="The signals below relief's thresholds.")
    reclaim_needed: int | None = Field(
        None, description="What is still to free of the relieved signal, in its unit (bytes, inodes, PIDs)."
    )
    skipped: list[str] = Field(
        default_factory=list,
        max_length=5,
        description="The first pods ahead in the kubelet's order that relief leaves alone, and why.",
    )


class PressureReliefStatus(StatusModel):
    """What pressure relief sees."""

    nodes: list[RelievedNode] = Field(
        default_factory=list, max_length=50, description="Nodes under pressure, at most 50."
    )
    nodes_watched: int = Field(0, ge=0, description="Nodes relieved under this policy.")
    nodes_without_usage: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Nodes without fresh usage (missing or older than maxUsageAgeSeconds), at most 20: "
        "nothing is evicted from them.",
    )
    last_pass_time: datetime | None = Field(None, description="When relief last looked at the nodes.")


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
    pressure_relief: PressureReliefStatus | None = Field(
        None, description="Pressure relief, when the spec sets it."
    )
