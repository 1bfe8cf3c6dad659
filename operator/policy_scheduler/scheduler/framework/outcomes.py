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
    """Weighted scores of the scored rows: `weighted[i]` is plugin `plugins[i]`'s, `total` their sum."""

    total: IntArray
    plugins: tuple[str, ...]
    weighted: IntArray  # [plugin, position], kept for explanations

    @classmethod
    def unscored(cls, count: int) -> ScoreOutcome:
        """Every row scores 1: no score plugin ran."""
        return cls(np.ones(count, dtype=np.int64), (), np.empty((0, count), dtype=np.int64))

    @property
    def by_plugin(self) -> dict[str, IntArray]:
        return dict(zip(self.plugins, self.weighted, strict=True))

    def plugin_scores_at(self, positions: list[int]) -> list[dict[str, int]]:
        """Each position's weighted score per plugin, read from the matrix in one go."""
        columns: list[list[int]] = self.weighted[:, positions].T.tolist()
        return [dict(zip(self.plugins, column, strict=True)) for column in columns]
