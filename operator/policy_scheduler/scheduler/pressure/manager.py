"""The eviction manager's bookkeeping: which thresholds are met, for how long, and the node
conditions it reports (pkg/kubelet/eviction/helpers.go and eviction_manager.go `synchronize`).

Pure functions over plain data, plus `synchronize`: one pass of the kubelet's loop from a
`ManagerState` to the next, with the clock passed in. A caller that polls usage (the operator,
from the second phase of issue 35 on) keeps the state between polls and so gets soft
thresholds' grace periods and the pressure transition period exactly as the kubelet applies
them; a single snapshot is `synchronize` from the empty state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from policy_scheduler.scheduler.pressure.observations import Observations
from policy_scheduler.scheduler.pressure.signals import (
    CONDITION_OF,
    MEMORY_PRESSURE,
    RESOURCE_OF,
    Resource,
    eviction_priority_key,
)
from policy_scheduler.scheduler.pressure.thresholds import Threshold

BEST_EFFORT = "BestEffort"


def thresholds_met(
    thresholds: Iterable[Threshold], observations: Observations, enforce_min_reclaim: bool
) -> list[Threshold]:
    """thresholdsMet: met when the threshold (plus its minimum reclaim, when enforced) is more
    than what is available. A signal without an observation meets nothing."""
    results: list[Threshold] = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        level = threshold.quantity(observed.capacity, with_min_reclaim=enforce_min_reclaim)
        if level > observed.available:
            results.append(threshold)
    return results


def thresholds_updated_stats(
    thresholds: Iterable[Threshold], observations: Observations, last: Observations
) -> list[Threshold]:
    """thresholdsUpdatedStats: only thresholds whose signal has a newer sample than last time
    (or no time, or no last sample) drive an eviction."""
    results: list[Threshold] = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        previous = last.get(threshold.signal)
        if previous is None or observed.time is None or observed.time > (previous.time or 0.0):
            results.append(threshold)
    return results


def thresholds_first_observed_at(
    thresholds: Iterable[Threshold], last_observed_at: Mapping[Threshold, float], now: float
) -> dict[Threshold, float]:
    """thresholdsFirstObservedAt: when each currently met threshold was first seen met."""
    return {t: last_observed_at.get(t, now) for t in thresholds}


def thresholds_met_grace_period(observed_at: Mapping[Threshold, float], now: float) -> list[Threshold]:
    """thresholdsMetGracePeriod: met for at least their grace period (hard ones at once)."""
    return [t for t, at in observed_at.items() if now - at >= t.grace_period]


def node_conditions(thresholds: Iterable[Threshold]) -> list[str]:
    """nodeConditions: the conditions of the given thresholds' signals, each once."""
    results: list[str] = []
    for threshold in thresholds:
        condition = CONDITION_OF.get(threshold.signal)
        if condition is not None and condition not in results:
            results.append(condition)
    return results


def node_conditions_last_observed_at(
    conditions: Iterable[str], last_observed_at: Mapping[str, float], now: float
) -> dict[str, float]:
    """nodeConditionsLastObservedAt: the given conditions now, the others as they were."""
    results = dict.fromkeys(conditions, now)
    for condition, at in last_observed_at.items():
        results.setdefault(condition, at)
    return results


def node_conditions_observed_since(observed_at: Mapping[str, float], period: float, now: float) -> list[str]:
    """nodeConditionsObservedSince: conditions seen within the transition period stay reported."""
    return [condition for condition, at in observed_at.items() if now - at < period]


def same_threshold(a: Threshold, b: Threshold) -> bool:
    """hasThreshold's comparison: signal, grace period and value (not the minimum reclaim)."""
    return a.signal == b.signal and a.grace_period == b.grace_period and a.value == b.value


def merge_thresholds(a: Sequence[Threshold], b: Iterable[Threshold]) -> list[Threshold]:
    """mergeThresholds: a, then the thresholds of b not already in it."""
    results = list(a)
    for threshold in b:
        if not any(same_threshold(threshold, kept) for kept in results):
            results.append(threshold)
    return results


def by_eviction_priority(thresholds: Iterable[Threshold]) -> list[Threshold]:
    """byEvictionPriority: memory signals first. The kubelet's order among the others follows
    its config map's iteration order (random); ours is the fixed order of signals.SIGNALS."""
    return sorted(thresholds, key=lambda t: eviction_priority_key(t.signal))


def reclaimable_threshold(thresholds: Iterable[Threshold]) -> tuple[Threshold, Resource] | None:
    """getReclaimableThreshold: the first threshold whose signal has a resource to reclaim."""
    for threshold in thresholds:
        resource = RESOURCE_OF.get(threshold.signal)
        if resource is not None:
            return threshold, resource
    return None


@dataclass(frozen=True, slots=True)
class ManagerState:
    """What the kubelet's eviction manager keeps between passes of its loop."""

    thresholds_first_observed_at: Mapping[Threshold, float] = field(default_factory=dict)
    node_conditions_last_observed_at: Mapping[str, float] = field(default_factory=dict)
    thresholds_met: tuple[Threshold, ...] = ()  # met for their grace period at the last pass
    last_observations: Observations = field(default_factory=dict)
    node_conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    state: ManagerState
    # Reported on the node (met, or met within the pressure transition period).
    node_conditions: tuple[str, ...]
    # Met now, grace periods or not (what the conditions come from), in eviction priority order.
    thresholds_met_now: tuple[Threshold, ...]
    # Met for their grace period, on fresh samples: these make the kubelet evict.
    thresholds_driving_eviction: tuple[Threshold, ...]
    # The threshold the kubelet reclaims for now (thresholdToReclaim) and its resource.
    acting: Threshold | None
    resource: Resource | None


def synchronize(
    thresholds: Sequence[Threshold],
    pressure_transition_period: float,
    state: ManagerState,
    observations: Observations,
    now: float,
) -> SyncResult:
    """One pass of the eviction manager's `synchronize`, up to choosing what to reclaim (the
    ranking and the victims are `ranking.evictions`)."""
    met = thresholds_met(thresholds, observations, False)
    if state.thresholds_met:
        met = merge_thresholds(met, thresholds_met(state.thresholds_met, observations, True))
    first_observed = thresholds_first_observed_at(met, state.thresholds_first_observed_at, now)
    conditions_now = node_conditions(met)
    last_observed = node_conditions_last_observed_at(
        conditions_now, state.node_conditions_last_observed_at, now
    )
    conditions = node_conditions_observed_since(last_observed, pressure_transition_period, now)
    grace_met = thresholds_met_grace_period(first_observed, now)
    fresh = thresholds_updated_stats(grace_met, observations, state.last_observations)
    new_state = ManagerState(
        first_observed, last_observed, tuple(grace_met), dict(observations), tuple(conditions)
    )
    reclaim = reclaimable_threshold(by_eviction_priority(fresh))
    return SyncResult(
        new_state,
        tuple(conditions),
        tuple(by_eviction_priority(met)),
        tuple(by_eviction_priority(fresh)),
        reclaim[0] if reclaim else None,
        reclaim[1] if reclaim else None,
    )


def admits(conditions: Sequence[str], *, critical: bool, qos: str, tolerates_memory_pressure: bool) -> bool:
    """managerImpl.Admit: whether the kubelet admits a new pod under these node conditions.
    Critical pods always; under memory pressure alone, all but BestEffort pods (unless they
    tolerate the memory-pressure NoSchedule taint); under any other pressure, none."""
    if not conditions or critical:
        return True
    if list(conditions) == [MEMORY_PRESSURE]:
        return qos != BEST_EFFORT or tolerates_memory_pressure
    return False
