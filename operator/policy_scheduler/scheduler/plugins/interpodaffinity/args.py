"""InterPodAffinityArgs: v1 defaults and ValidateInterPodAffinityArgs."""

from __future__ import annotations

from dataclasses import dataclass

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import ScalarArgs

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs(ScalarArgs):
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False

    def problems(self) -> list[Problem]:
        """ValidateInterPodAffinityArgs (ValidateHardPodAffinityWeight)."""
        weight = self.hard_pod_affinity_weight
        if not 0 <= weight <= 100:
            return [Problem("hardPodAffinityWeight", weight, "not in valid range [0-100]")]
        return []
