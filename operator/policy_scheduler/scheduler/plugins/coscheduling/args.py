"""CoschedulingArgs: scheduler-plugins' v1 defaults (apis/config/v1/defaults.go) and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.framework.plugin_args import int_arg

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> CoschedulingArgs:
        """SetDefaults_CoschedulingArgs."""
        return cls(
            int_arg(raw, "permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_TIME_SECONDS),
            int_arg(raw, "podGroupBackoffSeconds", DEFAULT_POD_GROUP_BACKOFF_SECONDS),
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CoschedulingArgs:
        args = cls.defaulted(raw)
        raise_problems(args.problems())
        return args

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        if self.permit_waiting_time_seconds < 0:
            found.append(
                Problem("permitWaitingTimeSeconds", self.permit_waiting_time_seconds, "must be >= 0")
            )
        if self.pod_group_backoff_seconds < 0:
            found.append(Problem("podGroupBackoffSeconds", self.pod_group_backoff_seconds, "must be >= 0"))
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "permitWaitingTimeSeconds": self.permit_waiting_time_seconds,
            "podGroupBackoffSeconds": self.pod_group_backoff_seconds,
        }
