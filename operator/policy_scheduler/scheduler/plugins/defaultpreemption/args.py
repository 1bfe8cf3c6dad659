"""DefaultPreemptionArgs: v1 defaults and ValidateDefaultPreemptionArgs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.framework.plugin_args import int_arg

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> DefaultPreemptionArgs:
        """SetDefaults_DefaultPreemptionArgs."""
        return cls(
            int_arg(raw, "minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE),
            int_arg(raw, "minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE),
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> DefaultPreemptionArgs:
        args = cls.defaulted(raw)
        raise_problems(args.problems())
        return args

    def problems(self) -> list[Problem]:
        """ValidateDefaultPreemptionArgs."""
        percentage, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        found: list[Problem] = []
        if not 0 <= percentage <= 100:
            found.append(Problem("minCandidateNodesPercentage", percentage, "not in valid range [0, 100]"))
        if absolute < 0:
            found.append(Problem("minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)"))
        if percentage == 0 and absolute == 0:
            found.append(
                Problem(
                    "minCandidateNodesPercentage",
                    0,
                    "cannot be zero at the same time as minCandidateNodesAbsolute",
                )
            )
            found.append(
                Problem(
                    "minCandidateNodesAbsolute",
                    0,
                    "cannot be zero at the same time as minCandidateNodesPercentage",
                )
            )
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "minCandidateNodesPercentage": self.min_candidate_nodes_percentage,
            "minCandidateNodesAbsolute": self.min_candidate_nodes_absolute,
        }
