"""Eviction thresholds as the kubelet parses and defaults them.

Ported from pkg/kubelet/eviction/helpers.go (ParseThresholdConfig, parseThresholdStatement,
parsePercentage, parseGracePeriods, parseMinimumReclaims, addAllocatableThresholds,
UpdateContainerFsThresholds), eviction/api/types.go (GetThresholdQuantity),
defaults_linux.go (DefaultEvictionHard), cmd/kubelet/app/server.go (evictionHard defaulting
and mergeDefaultEvictionSettings) and pkg/kubelet/apis/config/v1beta1/defaults.go
(evictionPressureTransitionPeriod, enforceNodeAllocatable). Identical in v1.35.4 and v1.37.2.

Quantities are integers in base units (bytes, inodes, PIDs), rounded up as Quantity.Value();
percentages are float32 as the kubelet keeps them, so thresholds resolve to the same integer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import NoReturn

import numpy as np

from policy_scheduler.scheduler.framework.durations import parse_go_duration
from policy_scheduler.scheduler.pressure.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    DiskLayout,
    valid_signal,
)
from policy_scheduler.scheduler.resources import MAX_QUANTITY, QuantityError, parse_quantity

# defaults_linux.go DefaultEvictionHard
DEFAULT_EVICTION_HARD: Mapping[str, str] = {
    MEMORY_AVAILABLE: "100Mi",
    NODEFS_AVAILABLE: "10%",
    NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%",
    IMAGEFS_INODES_FREE: "5%",
}
DEFAULT_PRESSURE_TRANSITION_PERIOD = 300.0  # evictionPressureTransitionPeriod: 5m
DEFAULT_ENFORCE_NODE_ALLOCATABLE: tuple[str, ...] = ("pods",)  # DefaultNodeAllocatableEnforcement
NODE_ALLOCATABLE_ENFORCEMENT_KEY = "pods"

# Where a node's thresholds came from, as the `pressure` command reports it.
SOURCE_KUBELET_CONFIG = "kubelet config file"
SOURCE_POLICY = "policy"
SOURCE_KUBELET_DEFAULTS = "kubelet defaults"

# strconv.ParseFloat's decimal syntax (no hex floats, no Inf/NaN: see docs/differences.md).
_GO_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


class ThresholdError(ValueError):
    """A threshold setting the kubelet refuses; `path` names the field, e.g.
    `evictionHard[memory.available]`."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True, slots=True)
class ThresholdValue:
    """evictionapi.ThresholdValue: a quantity, or else a fraction of the signal's capacity."""

    quantity: int | None = None
    percentage: float = 0.0  # a float32 value, e.g. 0.1 for "10%"
    text: str = field(default="", compare=False)  # as written, for messages

    def resolve(self, capacity: int) -> int:
        """GetThresholdQuantity: the quantity, or int64(float64(capacity) * float64(percentage))."""
        if self.quantity is not None:
            return self.quantity
        return int(float(capacity) * self.percentage)

    def __str__(self) -> str:
        if self.text:
            return self.text
        if self.quantity is not None:
            return str(self.quantity)
        return f"{self.percentage * 100:g}%"


ZERO = ThresholdValue()


@dataclass(frozen=True, slots=True)
class Threshold:
    """evictionapi.Threshold; the operator is always LessThan. `grace_period` in seconds: 0 is a
    hard threshold."""

    signal: str
    value: ThresholdValue
    grace_period: float = 0.0
    min_reclaim: ThresholdValue | None = None

    @property
    def hard(self) -> bool:
        """isHardEvictionThreshold."""
        return self.grace_period == 0

    def quantity(self, capacity: int, *, with_min_reclaim: bool = False) -> int:
        """The level below which the threshold is met (plus its minimum reclaim when asked:
        thresholdsMet with enforceMinReclaim)."""
        level = self.value.resolve(capacity)
        if with_min_reclaim and self.min_reclaim is not None:
            level += self.min_reclaim.resolve(capacity)
        return level


def parse_percentage(text: str) -> float:
    """parsePercentage: "10.5%" -> float32(10.5) / 100 (trailing '%'s dropped)."""
    number = text.rstrip("%")
    if not _GO_FLOAT.fullmatch(number):
        raise ValueError(f'invalid percentage "{text}"')
    value = np.float32(float(number)) / np.float32(100)
    if not math.isfinite(float(value)):
        raise ValueError(f'invalid percentage "{text}"')
    return float(value)


def _quantity(text: str, path: str) -> Decimal:
    if not isinstance(text, str):
        raise ThresholdError(path, f"expected a string such as 100Mi or 10%, got {text!r}")
    try:
        return parse_quantity(text)
    except QuantityError:
        raise ThresholdError(path, f'invalid quantity "{text}"') from None


def _base_units(amount: Decimal) -> int:
    return min(math.ceil(amount), MAX_QUANTITY)


def parse_threshold_statement(signal: str, text: str, path: str) -> Threshold | None:
    """parseThresholdStatement: None for "0%" and "100%" (they disable the threshold)."""
    if not valid_signal(signal):
        raise ThresholdError(path, f"unsupported eviction signal {signal}")
    if not isinstance(text, str):
        raise ThresholdError(path, f"expected a string such as 100Mi or 10%, got {text!r}")
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        try:
            percentage = parse_percentage(text)
        except ValueError:
            return _quantity_in_percentage(text, path)
        if percentage < 0:
            raise ThresholdError(path, f"eviction percentage threshold {signal} must be >= 0%: {text}")
        if percentage > 1:
            raise ThresholdError(path, f"eviction percentage threshold {signal} must be <= 100%: {text}")
        return Threshold(signal, ThresholdValue(percentage=percentage, text=text))
    amount = _quantity(text, path)
    if amount <= 0:
        raise ThresholdError(path, f"eviction threshold {signal} must be positive: {text}")
    return Threshold(signal, ThresholdValue(_base_units(amount), text=text))


def _quantity_in_percentage(text: str, path: str) -> NoReturn:
    """The error for a percentage that does not parse: "10Mi%" mixes the two forms."""
    number = text.rstrip("%")
    try:
        parse_quantity(number)
    except QuantityError:
        raise ThresholdError(path, f'invalid percentage "{text}"') from None
    raise ThresholdError(
        path, f'"{text}" is both a quantity and a percentage: write a quantity (100Mi) or a percentage (10%)'
    )


def _by_signal(statements: Mapping[str, str] | None, base: str) -> Iterator[tuple[str, str, str]]:
    """(signal, value, field path) of each statement; an unknown signal is an error."""
    for signal, text in (statements or {}).items():
        path = f"{base}[{signal}]"
        if not valid_signal(signal):
            raise ThresholdError(path, f"unsupported eviction signal {signal}")
        yield signal, text, path


def parse_grace_periods(statements: Mapping[str, str] | None, base: str) -> dict[str, float]:
    """parseGracePeriods: Go durations, in seconds, never negative."""
    results: dict[str, float] = {}
    for signal, text, path in _by_signal(statements, base):
        if not isinstance(text, str):
            raise ThresholdError(path, f"expected a duration such as 1m30s, got {text!r}")
        try:
            period = parse_go_duration(text)
        except ValueError as exc:
            raise ThresholdError(path, str(exc)) from None
        if period < 0:
            raise ThresholdError(
                path, f"invalid eviction grace period specified: {text}, must be a positive value"
            )
        results[signal] = period
    return results


def parse_minimum_reclaims(statements: Mapping[str, str] | None, base: str) -> dict[str, ThresholdValue]:
    """parseMinimumReclaims: a quantity (0 allowed) or a positive percentage."""
    results: dict[str, ThresholdValue] = {}
    for signal, text, path in _by_signal(statements, base):
        if isinstance(text, str) and text.endswith("%"):
            try:
                percentage = parse_percentage(text)
            except ValueError:
                _quantity_in_percentage(text, path)
            if percentage <= 0:
                raise ThresholdError(
                    path, f"eviction percentage minimum reclaim {signal} must be positive: {text}"
                )
            results[signal] = ThresholdValue(percentage=percentage, text=text)
            continue
        amount = _quantity(text, path)
        if amount < 0:
            raise ThresholdError(path, f"negative eviction minimum reclaim specified for {signal}")
        results[signal] = ThresholdValue(_base_units(amount), text=text)
    return results


def _statements(statements: Mapping[str, str] | None, base: str) -> list[Threshold]:
    results: list[Threshold] = []
    for signal, text in (statements or {}).items():
        threshold = parse_threshold_statement(signal, text, f"{base}[{signal}]")
        if threshold is not None:
            results.append(threshold)
    return results


def parse_threshold_config(
    allocatable_config: Sequence[str],
    eviction_hard: Mapping[str, str] | None,
    eviction_soft: Mapping[str, str] | None = None,
    eviction_soft_grace_period: Mapping[str, str] | None = None,
    eviction_minimum_reclaim: Mapping[str, str] | None = None,
) -> list[Threshold]:
    """ParseThresholdConfig: hard thresholds, then soft ones with their grace periods, minimum
    reclaims on every threshold of their signal, and allocatableMemory.available copies of the
    hard memory thresholds when node allocatable is enforced on pods."""
    results = _statements(eviction_hard, "evictionHard")
    soft = _statements(eviction_soft, "evictionSoft")
    grace_periods = parse_grace_periods(eviction_soft_grace_period, "evictionSoftGracePeriod")
    min_reclaims = parse_minimum_reclaims(eviction_minimum_reclaim, "evictionMinimumReclaim")
    for i, threshold in enumerate(soft):
        period = grace_periods.get(threshold.signal)
        if period is None:
            raise ThresholdError(
                f"evictionSoftGracePeriod[{threshold.signal}]",
                f"grace period must be specified for the soft eviction threshold {threshold.signal}",
            )
        soft[i] = replace(threshold, grace_period=period)
    results.extend(soft)
    results = [
        replace(t, min_reclaim=min_reclaims[t.signal]) if t.signal in min_reclaims else t for t in results
    ]
    if NODE_ALLOCATABLE_ENFORCEMENT_KEY in allocatable_config:
        results = add_allocatable_thresholds(results)
    return results


def add_allocatable_thresholds(thresholds: Sequence[Threshold]) -> list[Threshold]:
    """addAllocatableThresholds: each hard memory.available threshold, copied for the pods' cgroup."""
    extra = [
        Threshold(ALLOCATABLE_MEMORY_AVAILABLE, t.value, 0.0, t.min_reclaim)
        for t in thresholds
        if t.signal == MEMORY_AVAILABLE and t.hard
    ]
    return [*thresholds, *extra]


def _find(thresholds: Sequence[Threshold], signal: str, *, hard: bool) -> Threshold:
    """The last threshold of `signal` with that hardness, else the zero threshold (Go's zero value)."""
    found = Threshold(signal, ZERO)
    for threshold in thresholds:
        if threshold.signal == signal and threshold.hard == hard:
            found = threshold
    return found


def _last_index(thresholds: Sequence[Threshold], signal: str, *, hard: bool) -> int:
    index = -1
    for i, threshold in enumerate(thresholds):
        if threshold.signal == signal and threshold.hard == hard:
            index = i
    return index


def update_containerfs_thresholds(
    thresholds: Sequence[Threshold], layout: DiskLayout
) -> tuple[list[Threshold], list[str]]:
    """UpdateContainerFsThresholds: containerfs.* thresholds copied from nodefs (one disk, or
    writable layers split from images) or imagefs (images and layers on their own disk). Any
    containerfs setting of the user is replaced; the returned messages say so."""
    image_fs, split = layout.dedicated_image_fs, layout.split_container_fs
    results = list(thresholds)
    warnings = [
        f"found {signal} for {'hard' if hard else 'soft'} eviction. ignoring"
        for signal in (CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
        for hard in (True, False)
        if _last_index(thresholds, signal, hard=hard) != -1
    ]
    if image_fs == split:  # split disks (containerfs = nodefs) or a single filesystem
        bytes_source, inodes_source = NODEFS_AVAILABLE, NODEFS_INODES_FREE
    elif image_fs:  # a separate image filesystem holding the writable layers too
        bytes_source, inodes_source = IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE
    else:
        return results, warnings
    for target, source in ((CONTAINERFS_AVAILABLE, bytes_source), (CONTAINERFS_INODES_FREE, inodes_source)):
        for hard in (True, False):
            origin = _find(thresholds, source, hard=hard)
            copied = Threshold(target, origin.value, 0.0 if hard else origin.grace_period, origin.min_reclaim)
            index = _last_index(thresholds, target, hard=hard)
            if index != -1:
                results[index] = copied
            else:
                results.append(copied)
    return results, warnings


@dataclass(frozen=True, slots=True)
class KubeletEvictionSettings:
    """The eviction fields of a KubeletConfiguration (kubelet.config.k8s.io/v1beta1), as plain
    data. `eviction_hard` None means the field is unset (the kubelet then uses its defaults)."""

    eviction_hard: Mapping[str, str] | None = None
    eviction_soft: Mapping[str, str] | None = None
    eviction_soft_grace_period: Mapping[str, str] | None = None
    eviction_minimum_reclaim: Mapping[str, str] | None = None
    eviction_pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD
    eviction_max_pod_grace_period: int = 0
    merge_default_eviction_settings: bool = False
    enforce_node_allocatable: tuple[str, ...] = DEFAULT_ENFORCE_NODE_ALLOCATABLE


@dataclass(frozen=True, slots=True)
class EvictionConfig:
    """eviction.Config: what the kubelet's eviction manager runs with, and where it came from.
    `thresholds` are before UpdateContainerFsThresholds, which depends on each node's disks
    (`thresholds_for`)."""

    thresholds: tuple[Threshold, ...]
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD
    max_pod_grace_period: int = 0
    source: str = SOURCE_KUBELET_DEFAULTS

    def thresholds_for(self, layout: DiskLayout) -> tuple[Threshold, ...]:
        updated, _ = update_containerfs_thresholds(self.thresholds, layout)
        return tuple(updated)


def effective_eviction_hard(settings: KubeletEvictionSettings) -> Mapping[str, str]:
    """kubelet's loadConfigFile: DefaultEvictionHard when unset, merged under the user's values
    with mergeDefaultEvictionSettings."""
    if settings.eviction_hard is None:
        return DEFAULT_EVICTION_HARD
    if settings.merge_default_eviction_settings:
        return {**DEFAULT_EVICTION_HARD, **settings.eviction_hard}
    return settings.eviction_hard


def eviction_config(
    settings: KubeletEvictionSettings | None = None, source: str = SOURCE_KUBELET_CONFIG
) -> EvictionConfig:
    """The eviction manager's config from a KubeletConfiguration's eviction fields; with none,
    the kubelet's defaults. Raises ThresholdError naming the field."""
    if settings is None:
        settings, source = KubeletEvictionSettings(), SOURCE_KUBELET_DEFAULTS
    if settings.eviction_pressure_transition_period < 0:
        raise ThresholdError("evictionPressureTransitionPeriod", "must not be negative")
    thresholds = parse_threshold_config(
        settings.enforce_node_allocatable,
        effective_eviction_hard(settings),
        settings.eviction_soft,
        settings.eviction_soft_grace_period,
        settings.eviction_minimum_reclaim,
    )
    return EvictionConfig(
        tuple(thresholds),
        settings.eviction_pressure_transition_period,
        settings.eviction_max_pod_grace_period,
        source,
    )


DEFAULT_CONFIG = eviction_config(None)
