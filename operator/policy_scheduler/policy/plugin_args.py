"""Typed args of the in-tree plugins as CR fields: kube-scheduler v1 names, schema and types.

The fields give the CRD schema and the type and range checks. Defaults (SetDefaults_*Args) and
the plugins' validation rules (Validate*Args) are the core's: the plugin class's `args_type`
(`core_args`), the same code the framework decodes the plugin's args with, so the two cannot
disagree.
Plugin args are checked for the release (and feature gates) a profile follows: the Features
reach the models' validators through pydantic's validation context.
Deliberate differences from kube-scheduler v1.35 (in the core; v1.36 made upstream agree):
- the shape path is `scoringStrategy.requestedToCapacityRatio.shape[i]` (upstream reports
  `scoringStrategy.shape[i]`, which is not where the field is);
- RequestedToCapacityRatio requires `requestedToCapacityRatio.shape` (upstream dereferences a
  nil pointer when it is missing).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from policy_scheduler.policy.base import SpecModel
from policy_scheduler.policy.constants import KUBE_SCHEDULER_CONFIG_API_VERSION
from policy_scheduler.policy.errors import FieldError, PolicyError, field_error, parse_model
from policy_scheduler.policy.kube_types import (
    LabelKey,
    NodeAffinity,
    TopologySpreadConstraint,
)
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.plugin_args import ArgsType, PluginArgs
from policy_scheduler.scheduler.plugins.registry import out_of_tree_registry, shipped_registry
from policy_scheduler.scheduler.versioning.features import Features, default_features

# The key of the Features a plugin's args are checked for, in pydantic's validation context.
FEATURES_CONTEXT = "features"


def context_features(info: ValidationInfo) -> Features:
    """The release and gates the args are checked for (default: the newest release's)."""
    context = info.context
    found = context.get(FEATURES_CONTEXT) if isinstance(context, dict) else None
    return found if isinstance(found, Features) else default_features()


def core_defaulted(core_args: type[ArgsType], raw: dict[str, Any], features: Features) -> ArgsType:
    """The core's defaulting of `raw`, as `features`' release does it."""
    if issubclass(core_args, PluginArgs):
        return core_args.defaulted_for(raw, features)
    return core_args.defaulted(raw)


MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
MAX_RESOURCE_WEIGHT = 100


class ArgsModel(SpecModel):
    """Args of one plugin; `apiVersion`/`kind` may be present as in a KubeSchedulerConfiguration.

    The fields give the CRD schema and the type and range checks; defaults and the plugin's
    validation rules are the core's (`core_args`), the ones the plugin itself applies."""

    plugin: ClassVar[str]

    @classmethod
    def core_args(cls) -> type[ArgsType] | None:
        """The plugin class's args type: what the framework decodes the plugin's args into."""
        return shipped_registry()[cls.plugin].args_type

    def json_args(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"api_version", "kind"}, exclude_none=True)

    @model_validator(mode="after")
    def _core_rules(self, info: ValidationInfo) -> Self:
        core_args = self.core_args()
        if core_args is not None:
            features = context_features(info)
            typed = core_defaulted(core_args, self.json_args(), features)
            problems = typed.problems_for(features) if isinstance(typed, PluginArgs) else typed.problems()
            for problem in problems:
                raise field_error(problem.path, problem.message)
        return self

    api_version: Literal["kubescheduler.config.k8s.io/v1"] | None = Field(
        None, description=f"Optional; must be {KUBE_SCHEDULER_CONFIG_API_VERSION} when set."
    )
    kind: str | None = Field(None, description="Optional; must be <plugin name>Args when set.")

    @field_validator("kind")
    @classmethod
    def _kind_matches_plugin(cls, kind: str | None) -> str | None:
        if kind is not None and kind != f"{cls.plugin}Args":
            raise ValueError(f'args for plugin {cls.plugin} must be of kind {cls.plugin}Args, got "{kind}"')
        return kind


class ResourceSpec(SpecModel):
    """A resource and its weight in scoring."""

    name: str = Field(min_length=1, description="Name of the resource, such as cpu or memory.")
    weight: int = Field(
        1, ge=0, le=MAX_RESOURCE_WEIGHT, description="Weight of the resource, 1-100; 0 or unset means 1."
    )


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


class UtilizationShapePoint(SpecModel):
    """One point of a scoring function shape."""

    utilization: int = Field(0, ge=0, le=100, description="Utilization (x axis), 0-100.")
    score: int = Field(0, ge=0, le=MAX_CUSTOM_PRIORITY_SCORE, description="Score (y axis), 0-10.")


class RequestedToCapacityRatioParam(SpecModel):
    """Parameters of the RequestedToCapacityRatio strategy."""

    shape: list[UtilizationShapePoint] = Field(
        min_length=1, description="Points of the scoring function, sorted by strictly increasing utilization."
    )


class ScoringStrategy(SpecModel):
    """How NodeResourcesFit scores nodes."""

    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = Field(
        description="The scoring strategy."
    )
    resources: list[ResourceSpec] = Field(
        default_factory=_default_resources,
        description="Resources to score; cpu and memory with weight 1 if empty.",
    )
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        None, description="Arguments of the RequestedToCapacityRatio strategy."
    )


def _default_scoring_strategy() -> ScoringStrategy:
    return ScoringStrategy(type="LeastAllocated")


class NodeResourcesFitArgs(ArgsModel):
    plugin = "NodeResourcesFit"

    ignored_resources: list[LabelKey] = Field(
        default_factory=list, description="Resources the fit filter ignores (not scoring)."
    )
    ignored_resource_groups: list[str] = Field(
        default_factory=list,
        description="Resource groups (the part before '/') the fit filter ignores, e.g. example.com.",
    )
    scoring_strategy: ScoringStrategy = Field(
        default_factory=_default_scoring_strategy, description="Defaults to LeastAllocated on cpu and memory."
    )


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    plugin = "NodeResourcesBalancedAllocation"

    resources: list[ResourceSpec] = Field(
        default_factory=_default_resources, description="Resources to balance; cpu and memory if empty."
    )


class DefaultConstraint(TopologySpreadConstraint):
    """A default topology spread constraint; its pod selector is deduced per pod, so it has none."""


class PodTopologySpreadArgs(ArgsModel):
    plugin = "PodTopologySpread"

    default_constraints: list[DefaultConstraint] = Field(
        default_factory=list,
        description="Constraints for pods that define none; requires defaultingType List.",
    )
    defaulting_type: Literal["System", "List"] = Field(
        "System", description="System: Kubernetes' built-in defaults; List: defaultConstraints."
    )


class InterPodAffinityArgs(ArgsModel):
    plugin = "InterPodAffinity"

    hard_pod_affinity_weight: int = Field(
        1, ge=0, le=100, description="Score weight of existing pods' required affinity to the incoming pod."
    )
    ignore_preferred_terms_of_existing_pods: bool = Field(
        False, description="Ignore existing pods' preferred terms unless the incoming pod has affinity terms."
    )


class NodeAffinityArgs(ArgsModel):
    plugin = "NodeAffinity"

    added_affinity: NodeAffinity | None = Field(
        None, description="Node affinity applied to every pod in addition to its own."
    )


class DefaultPreemptionArgs(ArgsModel):
    plugin = "DefaultPreemption"

    min_candidate_nodes_percentage: int = Field(
        10, ge=0, le=100, description="Minimum candidates to dry-run, as a percentage of nodes."
    )
    min_candidate_nodes_absolute: int = Field(100, ge=0, description="Minimum candidates to dry-run.")


class CoschedulingArgs(ArgsModel):
    """scheduler-plugins' CoschedulingArgs (gang scheduling with PodGroups)."""

    plugin = "Coscheduling"

    permit_waiting_time_seconds: int = Field(
        60, ge=0, description="How long assumed members wait at Permit for the rest of their group."
    )
    pod_group_backoff_seconds: int = Field(
        0, ge=0, description="How long a group rejected at PostFilter is not retried (0: no backoff)."
    )


class VolumeBindingArgs(ArgsModel):
    plugin = "VolumeBinding"

    bind_timeout_seconds: int = Field(
        600, description="How long PreBind waits for the PV controller to bind the pod's volumes."
    )
    shape: list[dict[str, Any]] | None = Field(
        None,
        description="Storage capacity scoring shape (utilization 0-100, score 0-10); needs the "
        "StorageCapacityScoring feature gate (on by default from Kubernetes v1.37, where it defaults to "
        "[{utilization: 0, score: 10}, {utilization: 100, score: 0}]).",
    )


class DynamicResourcesArgs(ArgsModel):
    plugin = "DynamicResources"

    filter_timeout: str | None = Field(
        None,
        description="Longest search of one node's devices in Filter (Go duration, default 10s; 0: none).",
    )
    binding_timeout: str | None = Field(
        None,
        description="How long PreBind waits for a device's binding conditions (Go duration, default 10m, at "
        "least 1s); needs the DRADeviceBindingConditions and DRAResourceClaimDeviceStatus feature gates "
        "(on by default from Kubernetes v1.36).",
    )


class HeadroomSignal(SpecModel):
    """An eviction signal and its weight in EvictionHeadroom's score."""

    name: str = Field(min_length=1, description="An eviction signal, such as memory.available.")
    weight: int = Field(1, ge=1, le=100, description="Weight of the signal, 1-100.")


class EvictionHeadroomArgs(ArgsModel):
    """Ours: prefer nodes whose real usage leaves headroom above their eviction thresholds."""

    plugin = "EvictionHeadroom"

    signals: list[HeadroomSignal] | None = Field(
        None,
        description="Signals to score; memory.available, nodefs.available, imagefs.available and "
        "pid.available with weight 1 if unset.",
    )
    thresholds: dict[str, str] | None = Field(
        None,
        description="Per signal, the level to keep headroom above when a node's own eviction "
        "threshold is lower or unknown: a quantity (1Gi) or a percentage of capacity (10%). The "
        "kubelet's default evictionHard if unset.",
    )
    max_usage_age_seconds: int = Field(
        300, ge=0, description="Usage older than this counts as no usage (neutral score); 0: no limit."
    )


ARGS_MODELS: dict[str, type[ArgsModel]] = {
    model.plugin: model
    for model in (
        NodeResourcesFitArgs,
        NodeResourcesBalancedAllocationArgs,
        PodTopologySpreadArgs,
        InterPodAffinityArgs,
        NodeAffinityArgs,
        DefaultPreemptionArgs,
        CoschedulingArgs,
        VolumeBindingArgs,
        DynamicResourcesArgs,
        EvictionHeadroomArgs,
    )
}


def default_plugin_args(name: str, args: Any, path: str, features: Features | None = None) -> dict[str, Any]:
    """Validate `args` of plugin `name` and return them with upstream defaults applied, as
    `features`' release does (None: the newest release's defaults).

    Plugins without typed args (out-of-tree or not implemented) get their args back unchanged.
    Raises PolicyError with paths below `path`.
    """
    features = default_features() if features is None else features
    model = ARGS_MODELS.get(name)
    if model is None:
        if args is not None and not isinstance(args, dict):
            raise PolicyError([FieldError(path, "must be an object")])
        return _out_of_tree_args(name, dict(args or {}), path)
    parsed = parse_model(model, args, path, {FEATURES_CONTEXT: features})
    core_args = model.core_args()
    if core_args is not None:
        return core_defaulted(core_args, parsed.json_args(), features).to_json()  # the plugin's own
    return parsed.json_args()


def _out_of_tree_args(name: str, raw: dict[str, Any], path: str) -> dict[str, Any]:
    """An installed plugin's args: its `args_type` defaults and checks them."""
    plugin = out_of_tree_registry().get(name)
    args_type = plugin.args_type if plugin is not None else None
    if args_type is None:
        return raw
    body = {k: v for k, v in raw.items() if k not in ("apiVersion", "kind")}
    try:
        typed = args_type.defaulted(body)
    except (ValueError, TypeError, ArgsError) as exc:
        raise PolicyError([FieldError(path, str(exc))]) from exc
    problems = typed.problems()
    if problems:
        raise PolicyError([FieldError(f"{path}.{p.path}" if p.path else path, p.message) for p in problems])
    return typed.to_json()
