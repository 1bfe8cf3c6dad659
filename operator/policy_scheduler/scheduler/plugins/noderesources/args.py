"""NodeResources*Args: v1 defaults and validation (apis/config/v1, apis/config/validation)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    parse_resources,
)


def resources_json(resources: tuple[ResourceSpec, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, "weight": r.weight} for r in resources]


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> NodeResourcesBalancedAllocationArgs:
        """SetDefaults_NodeResourcesBalancedAllocationArgs: cpu and memory when empty, weight 0 → 1."""
        return cls(parse_resources(raw.get("resources"), "resources"))

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> NodeResourcesBalancedAllocationArgs:
        args = cls.defaulted(raw)
        raise_problems(args.problems())
        return args

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
