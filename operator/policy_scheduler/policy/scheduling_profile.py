"""SchedulingProfile: one kube-scheduler profile per object.

The spec has exactly KubeSchedulerProfile's JSON fields (kube-scheduler/config/v1), so a profile
copied out of a KubeSchedulerConfiguration is a valid spec unchanged, plus the scheduler-wide
backoff settings and the name of the EvictionPolicy used for preemption.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

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
from policy_scheduler.policy.constants import MAX_PENDING_REASONS
from policy_scheduler.policy.errors import field_error
from policy_scheduler.policy.kube_types import DNS1123_SUBDOMAIN_PATTERN
from policy_scheduler.scheduler.config import DEFAULT_SCHEDULER_NAME
from policy_scheduler.scheduler.profile_resolution import MAX_SCORE_WEIGHT

_LIST_MAP_BY_NAME: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}


class Plugin(SpecModel):
    """A plugin name and, for Score plugins, its weight."""

    name: str = Field(
        min_length=1,
        max_length=253,
        description="Name of the plugin, e.g. NodeResourcesFit. In a disabled list, "
        '"*" means every default plugin.',
    )
    weight: int | None = Field(
        None,
        ge=0,
        le=MAX_SCORE_WEIGHT,
        description="Weight of the plugin's node scores, only used for Score plugins. Unset or 0 means the "
        "default weight: the default plugin's own weight when it is not re-configured, 1 otherwise. "
        f"At most {MAX_SCORE_WEIGHT}.",
    )


class PluginSet(SpecModel):
    """Enabled and disabled plugins of one extension point."""

    enabled: list[Plugin] = Field(
        default_factory=list,
        max_length=64,
        description="Plugins to enable in addition to the defaults, called after the default plugins in this "
        "order. A default plugin listed here is re-configured in place (keeping its position) with this "
        "entry's weight.",
    )
    disabled: list[Plugin] = Field(
        default_factory=list,
        max_length=64,
        description='Default plugins to disable. A single "*" disables every default plugin of this point.',
    )


_ONE_QUEUE_SORT = cel_rule(
    "!has(self.queueSort) || !has(self.queueSort.enabled) || size(self.queueSort.enabled) <= 1",
    "only one queue sort plugin can be enabled",
    ".queueSort.enabled",
)


def _point(description: str) -> Any:
    return Field(None, description=description)


class Plugins(SpecModel):
    """Plugins to enable or disable per extension point, merged with the default plugins.

    Precedence: a specific extension point, then explicitly configured multiPoint plugins, then
    the default plugins (which are multiPoint plugins).
    """

    model_config = ConfigDict(json_schema_extra=validations(_ONE_QUEUE_SORT))

    multi_point: PluginSet | None = _point(
        "Plugins to enable for every extension point they implement. Disabling a plugin here stops it being "
        'registered anywhere through multiPoint; disabling "*" drops every default plugin. Specific '
        "extension points can still disable or re-order a multiPoint plugin."
    )
    pre_enqueue: PluginSet | None = _point("Plugins called before a pod is added to the active queue.")
    queue_sort: PluginSet | None = _point(
        "The plugin that orders the scheduling queue. Exactly one must be enabled, and it must be the "
        "same for every profile."
    )
    pre_filter: PluginSet | None = _point("Plugins called once per pod before filtering nodes.")
    filter: PluginSet | None = _point("Plugins that filter out nodes that cannot run the pod.")
    post_filter: PluginSet | None = _point(
        "Plugins called when no node fits the pod, such as DefaultPreemption."
    )
    pre_score: PluginSet | None = _point("Plugins called once per pod before scoring nodes.")
    score: PluginSet | None = _point(
        "Plugins that score the feasible nodes; each plugin's scores are multiplied by its weight."
    )
    reserve: PluginSet | None = _point("Plugins called when resources are reserved for a pod on its node.")
    permit: PluginSet | None = _point("Plugins that can approve, deny or delay binding a pod.")
    pre_bind: PluginSet | None = _point("Plugins called before a pod is bound.")
    bind: PluginSet | None = _point(
        "Plugins that bind a pod to its node, tried in order until one handles the pod. At least one "
        "must be enabled."
    )
    post_bind: PluginSet | None = _point("Plugins called after a pod was bound.")


class PluginConfig(SpecModel):
    """Arguments passed to one plugin when it is initialised."""

    name: str = Field(min_length=1, max_length=253, description="Name of the plugin being configured.")
    args: dict[str, Any] | None = Field(
        None,
        description="The plugin's arguments, exactly as in a KubeSchedulerConfiguration (for example "
        "NodeResourcesFitArgs fields such as scoringStrategy). Checked against the plugin's argument "
        "type when the profile is accepted; apiVersion and kind may be omitted.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


_BACKOFF_ORDER = cel_rule(
    "!has(self.podInitialBackoffSeconds) || !has(self.podMaxBackoffSeconds) "
    "|| self.podMaxBackoffSeconds >= self.podInitialBackoffSeconds",
    "podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds",
    ".podMaxBackoffSeconds",
)


class SchedulingProfileSpec(SpecModel):
    """A kube-scheduler profile (KubeSchedulerProfile fields) plus backoff and eviction settings."""

    model_config = ConfigDict(json_schema_extra=validations(_BACKOFF_ORDER))

    scheduler_name: str = Field(
        DEFAULT_SCHEDULER_NAME,
        min_length=1,
        max_length=253,
        pattern=DNS1123_SUBDOMAIN_PATTERN,
        description="Pods whose spec.schedulerName equals this value are scheduled with this profile. "
        "Must be unique across SchedulingProfiles.",
    )
    percentage_of_nodes_to_score: int | None = Field(
        None,
        ge=0,
        le=100,
        description="Once this percentage of all nodes has been found feasible for a pod, the scheduler "
        "stops looking for more and scores those. It always looks for at least 100 feasible nodes. "
        "0 or unset means an adaptive percentage (50% minus 1% per 125 nodes, at least 5%); 100 "
        "scores every feasible node.",
    )
    plugins: Plugins | None = Field(
        None,
        description="Plugins to enable or disable, merged with kube-scheduler's default plugins. Extension "
        "points that are not mentioned keep the defaults.",
    )
    plugin_config: list[PluginConfig] = Field(
        default_factory=list,
        max_length=64,
        description="Arguments of individual plugins. Omitting a plugin means its default arguments.",
        json_schema_extra=_LIST_MAP_BY_NAME,
    )
    pod_initial_backoff_seconds: int = Field(
        1,
        ge=1,
        description="Initial backoff for an unschedulable pod before it is retried, doubled on each "
        "failed attempt.",
    )
    pod_max_backoff_seconds: int = Field(
        10,
        ge=1,
        description="Maximum backoff for an unschedulable pod. Must be at least podInitialBackoffSeconds.",
    )
    eviction_policy_name: str | None = Field(
        None,
        max_length=253,
        pattern=DNS1123_SUBDOMAIN_PATTERN,
        description="Name of the EvictionPolicy that governs how victims chosen by preemption are evicted "
        "(protection, disruption budgets, rate limits, dry run). Unset: victims are deleted as "
        "kube-scheduler does.",
    )
    feature_gates: dict[str, bool] | None = Field(
        None,
        max_length=64,
        description="Feature gates this profile sets, as kube-scheduler's --feature-gates "
        "(e.g. {NodeDeclaredFeatures: false}), on top of the defaults of the Kubernetes release the "
        "operator follows (the API server's, or --emulated-version) and the operator's own "
        "--feature-gates. A gate the release does not have, a locked gate, a gate whose dependencies "
        "are off, or a value policy-scheduler does not implement rejects the profile. They can change "
        "the default plugins (e.g. NodeDeclaredFeatures).",
    )
    pending_summary_annotation: bool = Field(
        False,
        description="Write a compact summary of why each pending pod of this profile does not fit "
        "(nodes per reason, e.g. '3/10 nodes: Insufficient cpu; 7/10: node(s) didn't match Pod's "
        "node affinity/selector') to its policy-scheduler.io/pending-summary annotation, capped at "
        "512 bytes. Off by default: it costs one pod write per changed summary. "
        "`policy-scheduler explain` gives the full answer either way.",
    )

    @model_validator(mode="after")
    def _checks(self) -> SchedulingProfileSpec:
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            raise field_error(
                "podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds"
            )
        seen: dict[str, int] = {}
        for i, config in enumerate(self.plugin_config):
            if config.name in seen:
                raise field_error(f"pluginConfig[{i}].name", f'Duplicate value: "{config.name}"')
            seen[config.name] = i
        queue_sort = self.plugins.queue_sort if self.plugins else None
        if queue_sort is not None and len(queue_sort.enabled) > 1:
            raise field_error("plugins.queueSort.enabled", "only one queue sort plugin can be enabled")
        return self


class PendingReason(StatusModel):
    """How many pending pods are waiting for one reason."""

    reason: str = Field(description="Why the pods are not scheduled, e.g. a filter plugin's message.")
    count: int = Field(ge=0, description="Number of pending pods with this reason.")


class SchedulingProfileStatus(StatusModel):
    """What the scheduler made of the profile and how scheduling with it is going."""

    observed_generation: ObservedGeneration = None
    conditions: Conditions = Field(
        default_factory=list,
        description="Accepted: the spec is valid and was loaded. Ready: pods are being scheduled with this "
        "profile. Degraded: the profile is in use but something needs attention. KubernetesVersion: "
        "whether it decides like the cluster's own kube-scheduler release (False when the API server's "
        "version is not supported: the nearest supported release is used).",
        json_schema_extra=CONDITIONS_LIST,
    )
    last_accepted_generation: LastAcceptedGeneration = None
    last_accepted_spec: LastAcceptedSpec = None
    kubernetes_version: str | None = Field(
        None,
        description="The Kubernetes release whose kube-scheduler this profile decides like, with the "
        "feature gates it sets (e.g. v1.37 or v1.36 with NodeDeclaredFeatures=false); the "
        "KubernetesVersion condition says why.",
    )
    effective_plugins: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Plugins in effect per extension point, in call order, after merging with the defaults "
        "and expanding multiPoint.",
    )
    scheduled: int = Field(0, ge=0, description="Pods bound by this profile since the scheduler started.")
    pending: int = Field(0, ge=0, description="Pods of this profile currently waiting to be scheduled.")
    pending_reasons: list[PendingReason] = Field(
        default_factory=list,
        max_length=MAX_PENDING_REASONS,
        description=f"The most common reasons pods are pending, at most {MAX_PENDING_REASONS}.",
    )
    preemptions: int = Field(
        0, ge=0, description="Preemptions performed by this profile since the scheduler started."
    )
    latency_p50_seconds: float | None = Field(
        None, ge=0, description="Median scheduling attempt latency, in seconds."
    )
    latency_p99_seconds: float | None = Field(
        None, ge=0, description="99th percentile scheduling attempt latency, in seconds."
    )
    last_scheduled_time: datetime | None = Field(
        None, description="When a pod was last bound by this profile."
    )
