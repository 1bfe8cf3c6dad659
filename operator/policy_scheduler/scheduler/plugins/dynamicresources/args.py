"""DynamicResourcesArgs: SetDefaults_DynamicResourcesArgs and ValidateDynamicResourcesArgs,
which follow feature gates: with DRASchedulerFilterTimeout (beta, on) `filterTimeout` defaults
to 10s (0 disables it), without it the field is forbidden; with DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus (both on from v1.36) `bindingTimeout` defaults to 600s and must be
at least 1s, without them it is forbidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.durations import go_duration, parse_go_duration
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs
from policy_scheduler.scheduler.versioning.features import Features, default_features
from policy_scheduler.scheduler.versioning.gates import (
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    DRA_SCHEDULER_FILTER_TIMEOUT,
)

DEFAULT_FILTER_TIMEOUT = 10.0  # DynamicResourcesFilterTimeoutDefault
DEFAULT_BINDING_TIMEOUT = 600.0  # DynamicResourcesBindingTimeoutDefault


def _duration(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a duration string, got {value!r}")
    return parse_go_duration(value)


def _binding_conditions(features: Features) -> bool:
    return features.enabled(DRA_DEVICE_BINDING_CONDITIONS) and features.enabled(
        DRA_RESOURCE_CLAIM_DEVICE_STATUS
    )


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs(PluginArgs):
    filter_timeout: float | None = DEFAULT_FILTER_TIMEOUT  # seconds; 0 means no timeout
    binding_timeout: float | None = None

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        return cls.defaulted_for(raw, default_features())

    @classmethod
    def defaulted_for(cls, raw: Mapping[str, Any], features: Features) -> Self:
        """SetDefaults_DynamicResourcesArgs."""
        filter_timeout = _duration(raw, "filterTimeout")
        if filter_timeout is None and features.enabled(DRA_SCHEDULER_FILTER_TIMEOUT):
            filter_timeout = DEFAULT_FILTER_TIMEOUT
        binding_timeout = _duration(raw, "bindingTimeout")
        if binding_timeout is None and _binding_conditions(features):
            binding_timeout = DEFAULT_BINDING_TIMEOUT
        return cls(filter_timeout, binding_timeout)

    def problems(self) -> list[Problem]:
        return self.problems_for(default_features())

    def problems_for(self, features: Features) -> list[Problem]:
        """ValidateDynamicResourcesArgs."""
        found: list[Problem] = []
        if features.enabled(DRA_SCHEDULER_FILTER_TIMEOUT):
            if self.filter_timeout is not None and self.filter_timeout < 0:
                found.append(
                    Problem("filterTimeout", go_duration(self.filter_timeout), "must be zero or positive")
                )
        elif self.filter_timeout is not None:
            found.append(
                Problem(
                    "filterTimeout",
                    go_duration(self.filter_timeout),
                    "DRASchedulingFilterTimeout feature gate is disabled",
                    kind="Forbidden",
                )
            )
        if _binding_conditions(features):
            if self.binding_timeout is not None and self.binding_timeout < 1:
                found.append(
                    Problem("bindingTimeout", go_duration(self.binding_timeout), "must be at least 1 second")
                )
        elif self.binding_timeout is not None:
            found.append(
                Problem(
                    "bindingTimeout",
                    go_duration(self.binding_timeout),
                    "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
                    kind="Forbidden",
                )
            )
        return found

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.filter_timeout is not None:
            out["filterTimeout"] = go_duration(self.filter_timeout)
        if self.binding_timeout is not None:
            out["bindingTimeout"] = go_duration(self.binding_timeout)
        return out
