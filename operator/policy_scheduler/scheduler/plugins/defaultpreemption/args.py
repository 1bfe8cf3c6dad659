"""DefaultPreemptionArgs: v1 defaults and ValidateDefaultPreemptionArgs."""

from __future__ import annotations

from dataclasses import dataclass

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import ScalarArgs

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs(ScalarArgs):
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE

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
