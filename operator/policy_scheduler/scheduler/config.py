"""Profile configuration as the core consumes it (kube-scheduler's KubeSchedulerProfile shape).

The policy layer validates SchedulingProfile CRs with pydantic and compiles them into these
plain objects; `simulate` and unit tests build them directly. Plugin args stay JSON-shaped
(camelCase keys, as in KubeSchedulerConfiguration); the framework decodes them into each plugin's
args type, defaults applied, when it builds the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.scheduler.versioning.features import Features, default_features

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Extension points with a plugin set, in KubeSchedulerConfiguration's field names.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
MULTI_POINT = "multiPoint"


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0  # only meaningful for score; 0 means "default weight"


@dataclass(frozen=True, slots=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()  # name "*" disables every default of the point


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    """One scheduling profile: what a user wrote, before merging with the defaults."""

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # None: kube-scheduler's adaptive default. 100: score every feasible node.
    percentage_of_nodes_to_score: int | None = None
    # Keyed by an EXTENSION_POINTS name or MULTI_POINT; absent points keep the defaults.
    plugins: dict[str, PluginSet] = field(default_factory=dict)
    # Args by plugin name, JSON-shaped as in KubeSchedulerConfiguration's pluginConfig.
    plugin_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    eviction_policy_name: str | None = None
    # Write a compact "why pending" annotation on the profile's pending pods.
    pending_summary_annotation: bool = False
    # Feature gates this profile sets on top of the release's (and the operator's), in order:
    # kube-scheduler's --feature-gates, per profile.
    feature_gates: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True)
class ResolvedProfile:
    """A profile after merging with the defaults: ordered plugins per extension point."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    points: dict[str, tuple[PluginRef, ...]]  # every EXTENSION_POINTS key present
    plugin_config: dict[str, dict[str, Any]]
    pod_initial_backoff_seconds: float
    pod_max_backoff_seconds: float
    eviction_policy_name: str | None
    pending_summary_annotation: bool = False
    # The release semantics and feature gates the profile's plugins follow (through the Handle).
    features: Features = field(default_factory=default_features)
