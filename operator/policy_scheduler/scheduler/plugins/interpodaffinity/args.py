"""InterPodAffinityArgs: v1 defaults and ValidateInterPodAffinityArgs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.framework.plugin_args import bool_arg, int_arg

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> InterPodAffinityArgs:
        """SetDefaults_InterPodAffinityArgs."""
        return cls(
            int_arg(raw, "hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT),
            bool_arg(raw, "ignorePreferredTermsOfExistingPods", False),
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> InterPodAffinityArgs:
        args = cls.defaulted(raw)
        raise_problems(args.problems())
        return args

    def problems(self) -> list[Problem]:
        """ValidateInterPodAffinityArgs (ValidateHardPodAffinityWeight)."""
        weight = self.hard_pod_affinity_weight
        if not 0 <= weight <= 100:
            return [Problem("hardPodAffinityWeight", weight, "not in valid range [0-100]")]
        return []

    def to_json(self) -> dict[str, Any]:
        return {
            "hardPodAffinityWeight": self.hard_pod_affinity_weight,
            "ignorePreferredTermsOfExistingPods": self.ignore_preferred_terms_of_existing_pods,
        }
