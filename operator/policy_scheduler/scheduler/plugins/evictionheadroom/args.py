"""EvictionHeadroomArgs: which signals count, how much each weighs, and the thresholds to keep
headroom above where a node's own are lower or unknown.

    pluginConfig:
    - name: EvictionHeadroom
      args:
        signals:                     # default: memory.available, nodefs.available,
        - name: memory.available     # imagefs.available, pid.available, weight 1 each
          weight: 2
        thresholds:                  # default: the kubelet's default evictionHard
          memory.available: 1Gi      # a quantity or a percentage of the signal's capacity
        maxUsageAgeSeconds: 300      # older usage counts as no usage (0: no limit)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs, int_arg
from policy_scheduler.scheduler.pressure.signals import (
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    PID_AVAILABLE,
    SIGNALS,
    valid_signal,
)
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_EVICTION_HARD,
    Threshold,
    ThresholdError,
    parse_threshold_statement,
)

MAX_WEIGHT = 100
DEFAULT_MAX_USAGE_AGE_SECONDS = 300


@dataclass(frozen=True, slots=True)
class SignalWeight:
    name: str
    weight: int = 1


DEFAULT_SIGNALS = tuple(
    SignalWeight(s) for s in (MEMORY_AVAILABLE, NODEFS_AVAILABLE, IMAGEFS_AVAILABLE, PID_AVAILABLE)
)


def _signals(raw: Any) -> tuple[SignalWeight, ...]:
    if raw is None:
        return DEFAULT_SIGNALS
    if not isinstance(raw, list):
        raise ValueError("signals: expected a list of {name, weight}")
    out: list[SignalWeight] = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"signals[{i}]: expected {{name, weight}} with a string name")
        out.append(SignalWeight(item["name"], int_arg(item, "weight", 1)))
    return tuple(out)


def _thresholds(raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return tuple(DEFAULT_EVICTION_HARD.items())
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise ValueError(
            "thresholds: expected a map of signal to quantity or percentage, e.g. memory.available: 1Gi"
        )
    return tuple(raw.items())


@dataclass(frozen=True, slots=True)
class EvictionHeadroomArgs(PluginArgs):
    signals: tuple[SignalWeight, ...] = DEFAULT_SIGNALS
    thresholds: tuple[tuple[str, str], ...] = tuple(DEFAULT_EVICTION_HARD.items())
    max_usage_age_seconds: int = DEFAULT_MAX_USAGE_AGE_SECONDS

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        return cls(
            _signals(raw.get("signals")),
            _thresholds(raw.get("thresholds")),
            int_arg(raw, "maxUsageAgeSeconds", DEFAULT_MAX_USAGE_AGE_SECONDS),
        )

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        seen: set[str] = set()
        for i, s in enumerate(self.signals):
            if not valid_signal(s.name):
                found.append(Problem(f"signals[{i}].name", s.name, "", SIGNALS))
            elif s.name in seen:
                found.append(Problem(f"signals[{i}].name", s.name, "", kind="Duplicate"))
            seen.add(s.name)
            if not 1 <= s.weight <= MAX_WEIGHT:
                found.append(
                    Problem(f"signals[{i}].weight", s.weight, f"must be in the range [1, {MAX_WEIGHT}]")
                )
        if not self.signals:
            found.append(Problem("signals", [], "at least one signal is required", kind="Required"))
        for signal, text in self.thresholds:
            try:
                parse_threshold_statement(signal, text, f"thresholds[{signal}]")
            except ThresholdError as exc:
                found.append(Problem(exc.path, text, exc.message))
        if self.max_usage_age_seconds < 0:
            found.append(Problem("maxUsageAgeSeconds", self.max_usage_age_seconds, "must be >= 0"))
        return found

    def floors(self) -> dict[str, Threshold]:
        """The thresholds as parsed ("0%" and "100%" set none, as in the kubelet)."""
        parsed = {signal: parse_threshold_statement(signal, text, "") for signal, text in self.thresholds}
        return {signal: t for signal, t in parsed.items() if t is not None}

    def to_json(self) -> dict[str, Any]:
        return {
            "signals": [{"name": s.name, "weight": s.weight} for s in self.signals],
            "thresholds": dict(self.thresholds),
            "maxUsageAgeSeconds": self.max_usage_age_seconds,
        }
