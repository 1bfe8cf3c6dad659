"""Typed args of the in-tree plugins: kube-scheduler v1 names, defaults and validation.

Defaults follow apis/config/v1/defaults.go (SetDefaults_*Args) and validation follows
apis/config/validation/validation_pluginargs.go, run on the defaulted values as upstream does.
Deliberate differences:
- the shape path is `scoringStrategy.requestedToCapacityRatio.shape[i]` (upstream reports
  `scoringStrategy.shape[i]`, which is not where the field is);
- RequestedToCapacityRatio requires `requestedToCapacityRatio.shape` (upstream dereferences a
  nil pointer when it is missing).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from policy_scheduler.policy.base import SpecModel
from policy_scheduler.policy.constants import KUBE_SCHEDULER_CONFIG_API_VERSION
from policy_scheduler.policy.errors import FieldError, PolicyError, field_error, parse_model
from policy_scheduler.policy.kube_types import (
    LabelKey,
    NodeAffinity,
    TopologySpreadConstraint,
    qualified_name_problem,
)

MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore
MAX_RESOURCE_WEIGHT = 100


class ArgsModel(SpecModel):
    """Args of one plugin; `apiVersion`/`kind` may be present as in a KubeSchedulerConfiguration."""

    plugin: ClassVar[str]

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

    @field_validator("weight")
    @classmethod
    def _zero_means_one(cls, weight: int) -> int:
        return weight or 1


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

    @model_validator(mode="after")
    def _sorted(self) -> RequestedToCapacityRatioParam:
        for i in range(1, len(self.shape)):
            if self.shape[i - 1].utilization >= self.shape[i].utilization:
                raise field_error(f"shape[{i}].utilization", "values must be sorted in increasing order")
        return self


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

    @field_validator("resources")
    @classmethod
    def _empty_means_default(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        return resources or _default_resources()

    @model_validator(mode="after")
    def _ratio_needs_shape(self) -> ScoringStrategy:
        if self.type == "RequestedToCapacityRatio" and self.requested_to_capacity_ratio is None:
            raise field_error("requestedToCapacityRatio", "required when type is RequestedToCapacityRatio")
        return self


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

    @field_validator("ignored_resource_groups")
    @classmethod
    def _groups_are_names(cls, groups: list[str]) -> list[str]:
        for group in groups:
            if "/" in group:
                raise ValueError(f"resource group name can't contain '/': {group!r}")
            problem = qualified_name_problem(group)
            if problem:
                raise ValueError(f"invalid resource group {group!r}: {problem}")
        return groups


class NodeResourcesBalancedAllocationArgs(ArgsModel):
    plugin = "NodeResourcesBalancedAllocation"

    resources: list[ResourceSpec] = Field(
        default_factory=_default_resources, description="Resources to balance; cpu and memory if empty."
    )

    @field_validator("resources")
    @classmethod
    def _empty_means_default(cls, resources: list[ResourceSpec]) -> list[ResourceSpec]:
        return resources or _default_resources()

    @model_validator(mode="after")
    def _unique_unit_weights(self) -> NodeResourcesBalancedAllocationArgs:
        seen: set[str] = set()
        for i, resource in enumerate(self.resources):
            if resource.name in seen:
                raise field_error(f"resources[{i}].name", f'Duplicate value: "{resource.name}"')
            seen.add(resource.name)
            if resource.weight != 1:
                raise field_error(f"resources[{i}].weight", "must be 1")
        return self


class DefaultConstraint(TopologySpreadConstraint):
    """A default topology spread constraint; its pod selector is deduced per pod, so it has none."""

    @model_validator(mode="after")
    def _valid_default(self) -> DefaultConstraint:
        if self.max_skew <= 0:
            raise field_error("maxSkew", "not in valid range (0, inf)")
        if not self.topology_key:
            raise field_error("topologyKey", "can not be empty")
        problem = qualified_name_problem(self.topology_key)
        if problem:
            raise field_error("topologyKey", problem)
        if self.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            raise field_error(
                "whenUnsatisfiable",
                f'unsupported value "{self.when_unsatisfiable}": '
                "supported values: DoNotSchedule, ScheduleAnyway",
            )
        if self.label_selector is not None:
            raise field_error(
                "labelSelector", "constraint must not define a selector, as they deduced for each pod"
            )
        return self


class PodTopologySpreadArgs(ArgsModel):
    plugin = "PodTopologySpread"

    default_constraints: list[DefaultConstraint] = Field(
        default_factory=list,
        description="Constraints for pods that define none; requires defaultingType List.",
    )
    defaulting_type: Literal["System", "List"] = Field(
        "System", description="System: Kubernetes' built-in defaults; List: defaultConstraints."
    )

    @model_validator(mode="after")
    def _consistent(self) -> PodTopologySpreadArgs:
        if self.defaulting_type == "System" and self.default_constraints:
            raise field_error("defaultingType", "must be List when .defaultConstraints are not empty")
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            key = (c.topology_key, c.when_unsatisfiable)
            if key in seen:
                raise field_error(f"defaultConstraints[{i}]", f'Duplicate value: "{{{key[0]}, {key[1]}}}"')
            seen.add(key)
        return self


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

    @model_validator(mode="after")
    def _not_both_zero(self) -> DefaultPreemptionArgs:
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise field_error(
                "minCandidateNodesPercentage", "cannot be zero at the same time as minCandidateNodesAbsolute"
            )
        return self


class VolumeBindingArgs(ArgsModel):
    plugin = "VolumeBinding"

    bind_timeout_seconds: int = Field(
        600, description="How long PreBind waits for the PV controller to bind the pod's volumes."
    )
    shape: list[dict[str, Any]] | None = Field(
        None,
        description="Storage capacity scoring shape; needs the StorageCapacityScoring feature gate (off).",
    )

    @model_validator(mode="after")
    def _validate(self) -> VolumeBindingArgs:
        if self.bind_timeout_seconds < 0:
            raise field_error(
                "bindTimeoutSeconds",
                f"Invalid value: {self.bind_timeout_seconds}: "
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        if self.shape is not None:  # the StorageCapacityScoring gate is off in v1.35
            raise field_error(
                "shape",
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            )
        return self


ARGS_MODELS: dict[str, type[ArgsModel]] = {
    model.plugin: model
    for model in (
        NodeResourcesFitArgs,
        NodeResourcesBalancedAllocationArgs,
        PodTopologySpreadArgs,
        InterPodAffinityArgs,
        NodeAffinityArgs,
        DefaultPreemptionArgs,
        VolumeBindingArgs,
    )
}


def default_plugin_args(name: str, args: Any, path: str) -> dict[str, Any]:
    """Validate `args` of plugin `name` and return them with upstream defaults applied.

    Plugins without typed args (out-of-tree or not implemented) get their args back unchanged.
    Raises PolicyError with paths below `path`.
    """
    model = ARGS_MODELS.get(name)
    if model is None:
        if args is not None and not isinstance(args, dict):
            raise PolicyError([FieldError(path, "must be an object")])
        return dict(args or {})
    parsed = parse_model(model, args, path)
    return parsed.model_dump(mode="json", exclude={"api_version", "kind"}, exclude_none=True)
