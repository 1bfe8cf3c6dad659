"""API group, version and names of policy-scheduler's custom resources (all cluster-scoped)."""

from __future__ import annotations

GROUP = "scheduling.policy-scheduler.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
CATEGORY = "policy-scheduler"

SCHEDULING_PROFILE_KIND = "SchedulingProfile"
SCHEDULING_PROFILE_PLURAL = "schedulingprofiles"
SCHEDULING_PROFILE_SINGULAR = "schedulingprofile"
SCHEDULING_PROFILE_SHORT_NAMES = ("sp", "schedprof")

EVICTION_POLICY_KIND = "EvictionPolicy"
EVICTION_POLICY_PLURAL = "evictionpolicies"
EVICTION_POLICY_SINGULAR = "evictionpolicy"
EVICTION_POLICY_SHORT_NAMES = ("evp",)

PRIORITY_CLASS_MIRROR_KIND = "PriorityClassMirror"
PRIORITY_CLASS_MIRROR_PLURAL = "priorityclassmirrors"
PRIORITY_CLASS_MIRROR_SINGULAR = "priorityclassmirror"
PRIORITY_CLASS_MIRROR_SHORT_NAMES = ("pcm",)

# Condition types.
CONDITION_ACCEPTED = "Accepted"
CONDITION_READY = "Ready"
CONDITION_DEGRADED = "Degraded"
CONDITION_SYNCED = "Synced"
# kstatus reads Stalled=True as Failed: the latest generation cannot be put in force.
CONDITION_STALLED = "Stalled"
# SchedulingProfile: whether the EvictionPolicy it names is usable (if not, it preempts nothing).
CONDITION_EVICTION_POLICY = "EvictionPolicyResolved"
# SchedulingProfile: whether it decides like the cluster's own kube-scheduler release (False when
# the API server's version is unsupported or unknown and the nearest supported release is used).
CONDITION_KUBERNETES_VERSION = "KubernetesVersion"

# kube-scheduler's apiVersion, for import-config and typed plugin args.
KUBE_SCHEDULER_CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"
KUBE_SCHEDULER_CONFIG_KIND = "KubeSchedulerConfiguration"

# Bounds on status lists so a status never grows without limit.
MAX_RECENT_EVICTIONS = 20
MAX_PENDING_REASONS = 20
