"""VolumeBindingArgs: SetDefaults_VolumeBindingArgs and ValidateVolumeBindingArgs, which follow
the StorageCapacityScoring gate (on by default from v1.37): with it, `shape` defaults to full
nodes scoring lowest and is validated; without it, `shape` is refused."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs, int_arg
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import parse_shape, shape_problems
from policy_scheduler.scheduler.versioning.features import Features, default_features
from policy_scheduler.scheduler.versioning.gates import STORAGE_CAPACITY_SCORING

DEFAULT_BIND_TIMEOUT_SECONDS = 600
# (utilization, score 0..10): SetDefaults_VolumeBindingArgs' shape.
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, 10), (100, 0))
# ValidateVolumeBindingArgs' message for a shape while the StorageCapacityScoring gate is off.
SHAPE_WITHOUT_GATE = "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs(PluginArgs):
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[tuple[int, int], ...] | None = None  # (utilization, score 0..10) as written

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        return cls.defaulted_for(raw, default_features())

    @classmethod
    def defaulted_for(cls, raw: Mapping[str, Any], features: Features) -> Self:
        timeout = int_arg(raw, "bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        shape = raw.get("shape")
        if shape is not None and not isinstance(shape, list):
            raise ValueError("shape: expected a list of points")
        points = parse_shape(shape, "shape") if shape else None
        if points is None and features.enabled(STORAGE_CAPACITY_SCORING):
            points = DEFAULT_SHAPE
        return cls(timeout, points)

    def problems(self) -> list[Problem]:
        return self.problems_for(default_features())

    def problems_for(self, features: Features) -> list[Problem]:
        found: list[Problem] = []
        if self.bind_timeout_seconds < 0:
            found.append(
                Problem(
                    "bindTimeoutSeconds",
                    self.bind_timeout_seconds,
                    "invalid BindTimeoutSeconds, should not be a negative value",
                )
            )
        if features.enabled(STORAGE_CAPACITY_SCORING):
            found.extend(shape_problems(self.shape or (), "shape"))
        elif self.shape is not None:
            found.append(
                Problem("shape", [{"utilization": u, "score": s} for u, s in self.shape], SHAPE_WITHOUT_GATE)
            )
        return found

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bindTimeoutSeconds": self.bind_timeout_seconds}
        if self.shape is not None:
            out["shape"] = [{"utilization": u, "score": s} for u, s in self.shape]
        return out
