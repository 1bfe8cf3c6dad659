"""What an EvictionPolicy asks of the evictor, and what the evictor reports back.

Plain values shared by the policy store (controllers/), the evictor (kube/eviction/) and the
simulator; nothing here talks to the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from policy_scheduler.scheduler.model import LabelSelector
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import DEFAULT_POLICY, EvictionPolicyConfig
from policy_scheduler.scheduler.pressure.relief import ReliefConfig
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig

# Results as EvictionPolicy status.recentEvictions spells them.
EVICTED = "Evicted"
WOULD_EVICT = "WouldEvict"
BLOCKED_BY_BUDGET = "BlockedByBudget"
RATE_LIMITED = "RateLimited"
FAILED = "Failed"
# The same results as the eviction metrics label them.
RESULT_METRIC_LABEL: Mapping[str, str] = MappingProxyType(
    {
        EVICTED: "evicted",
        WOULD_EVICT: "dry_run",
        BLOCKED_BY_BUDGET: "blocked_by_budget",
        RATE_LIMITED: "rate_limited",
        FAILED: "error",
    }
)
# Why a pod was chosen, as status.recentEvictions spells it.
REASON_PREEMPTION = "Preemption"
REASON_NODE_PRESSURE = "NodePressure"


@dataclass(frozen=True, slots=True)
class RateLimits:
    """EvictionPolicy spec.rateLimit; the defaults are the CRD's."""

    evictions_per_minute: int = 60
    burst: int = 10
    max_in_flight: int = 10
    per_namespace_per_minute: int | None = None
    per_node_per_minute: int | None = None


@dataclass(frozen=True, slots=True)
class ReliefSettings:
    """EvictionPolicy spec.pressureRelief: the core's config and the nodes it applies to."""

    config: ReliefConfig
    node_selector: LabelSelector | None = None  # None: every node
    kubelet: EvictionConfig | None = None  # kubeletEvictionHard: the selected kubelets' thresholds


@dataclass(frozen=True, slots=True)
class EvictionSettings:
    policy_name: str | None  # None: no EvictionPolicy, the built-in default
    config: EvictionPolicyConfig = DEFAULT_POLICY
    limits: RateLimits | None = None  # None: unlimited, as kube-scheduler
    # Set when the profile names a policy that cannot be used (missing, not accepted): the
    # evictor then evicts nothing rather than fall back to unlimited, unguarded evictions.
    unavailable_reason: str | None = None
    relief: ReliefSettings | None = None  # None: no pressure relief


DEFAULT_SETTINGS = EvictionSettings(None)


@dataclass(frozen=True, slots=True)
class EvictionRecord:
    """One attempt, for the policy's status (recentEvictions and counters)."""

    time: float  # unix seconds
    namespace: str
    name: str
    uid: str
    preemptor_uid: str
    node: str
    result: str
    message: str = ""
    reason: str = REASON_PREEMPTION
    signal: str = ""  # NodePressure: the signal relieved
