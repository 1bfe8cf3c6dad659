"""NodeResources*Args: v1 defaults and validation (apis/config/v1, apis/config/validation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    LEAST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    STRATEGIES,
    ResourceSpec,
    parse_resources,
    parse_shape,
    shape_problems,
)
from policy_scheduler.scheduler.selectors import label_key_errors
from policy_scheduler.scheduler.versioning.features import Features, default_features


def resources_json(resources: tuple[ResourceSpec, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "weight": r.weight} for r in resources]


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs(PluginArgs):
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_NodeResourcesBalancedAllocationArgs: cpu and memory when empty, weight 0 → 1."""
        return cls(parse_resources(raw.get("resources"), "resources"))

    def problems(self) -> list[Problem]:
        """ValidateNodeResourcesBalancedAllocationArgs."""
        found: list[Problem] = []
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                found.append(Problem(f"resources[{i}].name", spec.name, "", kind="Duplicate"))
            seen.add(spec.name)
            if spec.weight != 1:
                found.append(Problem(f"resources[{i}].weight", spec.weight, "must be 1"))
        return found

    def to_json(self) -> dict[str, Any]:
        return {"resources": resources_json(self.resources)}


def _string_list(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = raw.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key}: expected a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    # requestedToCapacityRatio.shape as (utilization, score 0..10); None when the param is absent.
    shape: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs(PluginArgs):
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_NodeResourcesFitArgs: LeastAllocated; cpu and memory when empty, weight 0 → 1."""
        strategy = raw.get("scoringStrategy")
        if strategy is None:
            strategy = {"type": LEAST_ALLOCATED}
        if not isinstance(strategy, Mapping):
            raise ValueError("scoringStrategy: expected an object")
        ratio = strategy.get("requestedToCapacityRatio")
        if ratio is not None and not isinstance(ratio, Mapping):
            raise ValueError("scoringStrategy.requestedToCapacityRatio: expected an object")
        return cls(
            _string_list(raw, "ignoredResources"),
            _string_list(raw, "ignoredResourceGroups"),
            ScoringStrategy(
                str(strategy.get("type", "")),
                parse_resources(strategy.get("resources"), "scoringStrategy.resources"),
                None if ratio is None else parse_shape(ratio.get("shape")),
            ),
        )

    def problems(self) -> list[Problem]:
        return self.problems_for(default_features())

    def problems_for(self, features: Features) -> list[Problem]:
        """ValidateNodeResourcesFitArgs of `features`' release. v1.35 validates a shape wherever
        it is and (ours: upstream dereferences a nil pointer) requires it for
        RequestedToCapacityRatio; later releases require requestedToCapacityRatio exactly for
        that strategy."""
        found: list[Problem] = []
        for i, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{i}]"
            if "/" in group:
                found.append(Problem(path, group, "resource group name can't contain '/'"))
            found.extend(Problem(path, group, detail) for detail in label_key_errors(group))
        for i, name in enumerate(self.ignored_resources):
            found.extend(Problem(f"ignoredResources[{i}]", name, detail) for detail in label_key_errors(name))
        strategy = self.scoring_strategy
        if strategy.type not in STRATEGIES:
            found.append(Problem("scoringStrategy.type", strategy.type, "", STRATEGIES))
        for i, spec in enumerate(strategy.resources):
            if not 0 < spec.weight <= 100:
                found.append(
                    Problem(
                        f"scoringStrategy.resources[{i}].weight",
                        spec.weight,
                        f"resource weight of {spec.name} not in valid range (0, 100]",
                    )
                )
        if features.behaviour.fit_args_check_ratio_by_type:
            found.extend(self._ratio_problems_by_type())
            return found
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO and strategy.shape is None:
            found.append(
                Problem(
                    "scoringStrategy.requestedToCapacityRatio",
                    None,
                    "required when type is RequestedToCapacityRatio",
                    kind="Required",
                )
            )
        if strategy.shape is not None:
            found.extend(shape_problems(strategy.shape))
        return found

    def _ratio_problems_by_type(self) -> list[Problem]:
        strategy = self.scoring_strategy
        path = "scoringStrategy.requestedToCapacityRatio"
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if strategy.shape is None:
                detail = "must be specified when type is RequestedToCapacityRatio"
                return [Problem(path, None, detail, kind="Required")]
            return shape_problems(strategy.shape)
        if strategy.shape is not None:
            return [
                Problem(path, None, "must be nil when type is not RequestedToCapacityRatio", kind="Forbidden")
            ]
        return []

    def to_json(self) -> dict[str, Any]:
        strategy: dict[str, Any] = {
            "type": self.scoring_strategy.type,
            "resources": resources_json(self.scoring_strategy.resources),
        }
        if self.scoring_strategy.shape is not None:
            strategy["requestedToCapacityRatio"] = {
                "shape": [{"utilization": u, "score": s} for u, s in self.scoring_strategy.shape]
            }
        return {
            "ignoredResources": list(self.ignored_resources),
            "ignoredResourceGroups": list(self.ignored_resource_groups),
            "scoringStrategy": strategy,
        }
