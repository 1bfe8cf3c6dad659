"""DefaultPreemption: kube-scheduler's preemption (v1.35.4), governed by an eviction policy."""

from policy_scheduler.scheduler.plugins.defaultpreemption.plugin import DefaultPreemption
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import (
    DEFAULT_POLICY,
    EvictionPolicyConfig,
    ProtectedTerm,
)

__all__ = [
    "DEFAULT_POLICY",
    "DefaultPreemption",
    "EvictionPolicyConfig",
    "ProtectedTerm",
]
