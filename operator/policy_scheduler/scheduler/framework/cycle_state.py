"""Per-cycle scratch space shared by the plugins of one scheduling attempt."""

from __future__ import annotations

import copy
from typing import Any


class CycleState:
    """Plugin data keyed by name. Cloned for preemption dry runs (values with clone() are cloned)."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.record_plugin_metrics = False  # this cycle is sampled for per-plugin durations

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def clone(self) -> CycleState:
        other = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            other._data[key] = clone() if callable(clone) else copy.copy(value)
        other.skip_filter = set(self.skip_filter)
        other.skip_score = set(self.skip_score)
        other.record_plugin_metrics = self.record_plugin_metrics
        return other
