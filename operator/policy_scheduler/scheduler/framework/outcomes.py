"""What the framework's runs return: batch filter and score outcomes, and its failures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.nodetable import IntArray, Rows

PASSED = -1  # status_ref of a row that passed every filter


class FrameworkError(RuntimeError):
    pass


def plugin_failure(status: Status, plugin: str, message: str) -> Status:
    """A failed plugin's status: rejections keep their reasons, anything else becomes an Error
    whose message wraps the plugin's, as upstream's fmt.Errorf("running ... %q: %w")."""
    if status.is_rejected:
        return status.with_plugin(plugin)
    return Status(Code.ERROR, (message.format(plugin=plugin, error=status.message),), plugin)


@dataclass(slots=True)
class FilterOutcome:
    """Batch filter result over `rows`: which passed and, for the others, the first failing status."""

    rows: Rows
    status_ref: npt.NDArray[np.int32]
    statuses: list[Status]

    @property
    def passed(self) -> npt.NDArray[np.bool_]:
        passed: npt.NDArray[np.bool_] = self.status_ref == PASSED
        return passed

    def status_at(self, i: int) -> Status:
        ref = int(self.status_ref[i])
        return SUCCESS if ref == PASSED else self.statuses[ref]

    def error(self) -> Status | None:
        return next((s for s in self.statuses if s.code == Code.ERROR), None)


@dataclass(slots=True)
class ScoreOutcome:
    total: IntArray
    by_plugin: dict[str, IntArray]  # weighted scores, kept for explanations
