"""CoschedulingArgs: scheduler-plugins' v1 defaults (apis/config/v1/defaults.go) and validation."""

from __future__ import annotations

from dataclasses import dataclass

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import ScalarArgs

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0


@dataclass(frozen=True, slots=True)
class CoschedulingArgs(ScalarArgs):
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        if self.permit_waiting_time_seconds < 0:
            found.append(
                Problem("permitWaitingTimeSeconds", self.permit_waiting_time_seconds, "must be >= 0")
            )
        if self.pod_group_backoff_seconds < 0:
            found.append(Problem("podGroupBackoffSeconds", self.pod_group_backoff_seconds, "must be >= 0"))
        return found
