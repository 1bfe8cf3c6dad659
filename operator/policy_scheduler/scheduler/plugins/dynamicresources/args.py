"""DynamicResourcesArgs: v1 defaults and ValidateDynamicResourcesArgs with v1.35's default gates.

DRASchedulerFilterTimeout is beta and on: `filterTimeout` defaults to 10s (0 disables it).
DRADeviceBindingConditions is alpha and off: `bindingTimeout` is forbidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.durations import go_duration, parse_go_duration
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs

DEFAULT_FILTER_TIMEOUT = 10.0  # DynamicResourcesFilterTimeoutDefault


def _duration(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a duration string, got {value!r}")
    return parse_go_duration(value)


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs(PluginArgs):
    filter_timeout: float | None = DEFAULT_FILTER_TIMEOUT  # seconds; 0 means no timeout
    binding_timeout: float | None = None

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """SetDefaults_DynamicResourcesArgs."""
        timeout = _duration(raw, "filterTimeout")
        return cls(DEFAULT_FILTER_TIMEOUT if timeout is None else timeout, _duration(raw, "bindingTimeout"))

    def problems(self) -> list[Problem]:
        """ValidateDynamicResourcesArgs."""
        found: list[Problem] = []
        if self.filter_timeout is not None and self.filter_timeout < 0:
            found.append(
                Problem("filterTimeout", go_duration(self.filter_timeout), "must be zero or positive")
            )
        if self.binding_timeout is not None:
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
