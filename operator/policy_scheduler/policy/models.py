"""The custom resources' models in one place: specs, statuses and plugin args."""

from __future__ import annotations

from policy_scheduler.policy.conditions import Condition
from policy_scheduler.policy.eviction import (
    EvictionCounters,
    EvictionPolicySpec,
    EvictionPolicyStatus,
    ProtectedTerm,
    RateLimit,
    RecentEviction,
)
from policy_scheduler.policy.kube_types import LabelSelector, LabelSelectorRequirement, NodeAffinity
from policy_scheduler.policy.plugin_args import (
    ARGS_MODELS,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
)
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec, PriorityClassMirrorStatus
from policy_scheduler.policy.scheduling_profile import (
    PendingReason,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
    SchedulingProfileSpec,
    SchedulingProfileStatus,
)

__all__ = [
    "ARGS_MODELS",
    "Condition",
    "DefaultPreemptionArgs",
    "EvictionCounters",
    "EvictionPolicySpec",
    "EvictionPolicyStatus",
    "InterPodAffinityArgs",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NodeAffinity",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PendingReason",
    "Plugin",
    "PluginConfig",
    "PluginSet",
    "Plugins",
    "PodTopologySpreadArgs",
    "PriorityClassMirrorSpec",
    "PriorityClassMirrorStatus",
    "ProtectedTerm",
    "RateLimit",
    "RecentEviction",
    "SchedulingProfileSpec",
    "SchedulingProfileStatus",
]
