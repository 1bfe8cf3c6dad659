"""Point-in-time assessment of many nodes: each signal against its thresholds, the conditions
the kubelet would report, and each node's pods in the order it would evict them, with the ones
it would have to evict marked.

This is what `policy-scheduler pressure` prints, and what relief (issue 35's second phase)
acts on: feed it the same plain data from live sources, keep each node's `state` between
polls and pass it back, and grace periods and the transition period apply as in the kubelet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.scheduler.pressure.manager import (
    ManagerState,
    SyncResult,
    by_eviction_priority,
    synchronize,
)
from policy_scheduler.scheduler.pressure.observations import (
    NodeStats,
    Observations,
    PodUsage,
    SignalObservation,
    make_signal_observations,
)
from policy_scheduler.scheduler.pressure.pods import PodFacts
from policy_scheduler.scheduler.pressure.ranking import (
    BoolArray,
    Measured,
    PodColumns,
    criteria_of,
    evictions,
    measure,
    merge_measured,
    rank,
)
from policy_scheduler.scheduler.pressure.signals import (
    CONDITION_OF,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    EPHEMERAL_STORAGE,
    INODES,
    MEMORY_AVAILABLE,
    PRIMARY_SIGNALS,
    RESOURCE_OF,
    SIGNALS,
    DiskLayout,
    rank_function,
)
from policy_scheduler.scheduler.pressure.thresholds import DEFAULT_CONFIG, EvictionConfig, Threshold

DERIVED_FS_SIGNALS = frozenset({CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE})
IMMEDIATE_EVICTION_GRACE_PERIOD = 1  # immediateEvictionGracePeriodSeconds

STATUS_OK = "ok"
STATUS_MET = "threshold met"
STATUS_NO_DATA = "no data"
STATUS_NO_THRESHOLD = "no threshold"

NOTE_NODE_RECLAIM = (
    "before evicting pods for {signal} the kubelet deletes unused containers and images; what "
    "that frees is not known here, so the marked pods are the most it would evict"
)
NOTE_NO_USAGE = "no usage data for this node: no signal can be evaluated"
NOTE_PODS_WITHOUT_USAGE = (
    "{count} pod(s) without usage data rank first, as the kubelet ranks pods it has no stats for"
)
NOTE_NOT_ENOUGH = "evicting every pod the kubelet may evict would not bring {signal} back above {target}"


@dataclass(frozen=True, slots=True)
class NodeInput:
    """One node: its usage (None: no data at all), eviction config and the manager state from
    the previous assessment (empty: a first observation)."""

    name: str
    stats: NodeStats | None
    config: EvictionConfig = DEFAULT_CONFIG
    state: ManagerState = field(default_factory=ManagerState)


@dataclass(frozen=True, slots=True)
class ThresholdCheck:
    threshold: Threshold
    level: int | None  # the threshold resolved against the signal's capacity; None without data
    target: int | None  # level plus the minimum reclaim: where eviction stops
    met: bool | None  # None without data
    grace_remaining: float | None  # soft and met: seconds until it makes the kubelet evict


@dataclass(frozen=True, slots=True)
class SignalAssessment:
    signal: str
    condition: str
    observation: SignalObservation | None
    checks: tuple[ThresholdCheck, ...]
    status: str

    @property
    def met(self) -> bool:
        return any(c.met for c in self.checks)


@dataclass(frozen=True, slots=True)
class RankedPod:
    pod: PodFacts
    position: int  # 1 = evicted first
    victim: bool  # the kubelet would have to evict it to get back above threshold + min reclaim
    frees: int | None  # what evicting it frees of the ranked resource; None without data
    exceeds_requests: bool | None  # None without data
    usage_above_requests: int | None
    has_usage: bool

    @property
    def never_evicted(self) -> str | None:
        return self.pod.never_evicted


@dataclass(frozen=True, slots=True)
class NodeAssessment:
    name: str
    threshold_source: str
    usage_source: str | None
    signals: tuple[SignalAssessment, ...]
    conditions: tuple[str, ...]
    under_pressure: tuple[str, ...]
    # The signal the kubelet reclaims now, or (soft threshold met, grace running) will reclaim
    # after `eviction_starts_in` seconds if it holds; None when nothing is met.
    eviction_signal: str | None
    eviction_starts_in: float | None
    # The grace period the kubelet kills with: 1s for a hard threshold; for a soft one
    # evictionMaxPodGracePeriod, capped by the pod's terminationGracePeriodSeconds.
    kill_grace_period: int | None
    # The signal the order is for: eviction_signal, or the one asked for, else the first with data.
    order_signal: str
    reclaim_target: int | None  # threshold + minimum reclaim the kubelet evicts up to
    reclaim_needed: int  # what the marked pods must free (0: nothing to evict)
    reclaimable: bool | None  # the evictable pods free enough (None when nothing is needed)
    order: tuple[RankedPod, ...]
    state: ManagerState
    notes: tuple[str, ...]


def _checks(
    thresholds: Sequence[Threshold],
    observation: SignalObservation | None,
    sync: SyncResult,
    now: float,
) -> tuple[ThresholdCheck, ...]:
    checks: list[ThresholdCheck] = []
    for t in thresholds:
        if observation is None:
            checks.append(ThresholdCheck(t, None, None, None, None))
            continue
        # Met as the kubelet counts it: below the threshold, or met before and still below the
        # threshold plus its minimum reclaim.
        met = t in sync.thresholds_met_now
        remaining: float | None = None
        if met and not t.hard:
            since = sync.state.thresholds_first_observed_at.get(t, now)
            remaining = max(0.0, t.grace_period - (now - since))
        level = t.quantity(observation.capacity)
        target = t.quantity(observation.capacity, with_min_reclaim=True)
        checks.append(ThresholdCheck(t, level, target, met, remaining))
    return tuple(checks)


def _kill_grace_period(acting: Threshold | None, config: EvictionConfig) -> int | None:
    if acting is None:
        return None
    return IMMEDIATE_EVICTION_GRACE_PERIOD if acting.hard else config.max_pod_grace_period


def _disabled(t: Threshold) -> bool:
    """A zero threshold (containerfs copied from an unset one) never triggers."""
    return t.value.quantity is None and t.value.percentage == 0


def _signals(
    thresholds: Sequence[Threshold], observations: Observations, sync: SyncResult, now: float
) -> tuple[SignalAssessment, ...]:
    by_signal: dict[str, list[Threshold]] = defaultdict(list)
    for t in thresholds:
        if not _disabled(t):
            by_signal[t.signal].append(t)
    result: list[SignalAssessment] = []
    for signal in SIGNALS:
        observed = observations.get(signal)
        mine = by_signal.get(signal, [])
        if observed is None and signal not in PRIMARY_SIGNALS and (not mine or signal in DERIVED_FS_SIGNALS):
            continue  # the kubelet's containerfs.* copies need the Summary API's containerFs
        checks = _checks(mine, observed, sync, now)
        if not mine:
            status = STATUS_NO_THRESHOLD
        elif observed is None:
            status = STATUS_NO_DATA
        else:
            status = STATUS_MET if any(c.met for c in checks) else STATUS_OK
        result.append(SignalAssessment(signal, CONDITION_OF[signal], observed, checks, status))
    return tuple(result)


@dataclass(frozen=True, slots=True)
class _Evaluated:
    """One node after its signals are evaluated, before its pods are ranked."""

    node: NodeInput
    signals: tuple[SignalAssessment, ...]
    state: ManagerState
    conditions: tuple[str, ...]
    acting: Threshold | None
    starts: float | None


@dataclass(slots=True)
class _Plan:
    """What one node needs from the vectorized ranking."""

    signal: str
    layout: DiskLayout
    needed: int
    target: int | None


def _plan(
    node: NodeInput,
    signals: tuple[SignalAssessment, ...],
    driving: Sequence[Threshold],
    wanted: str | None,
) -> tuple[_Plan, Threshold | None, float | None]:
    """The signal to rank for, what must be freed, and the threshold the kubelet acts on (now,
    or once a soft threshold's grace period has passed: `starts` seconds from now)."""
    layout = node.stats.layout if node.stats is not None else DiskLayout()
    acting = driving[0] if driving else None
    starts: float | None = 0.0 if acting else None
    pending = by_eviction_priority(
        c.threshold for s in signals for c in s.checks if c.met and c.grace_remaining is not None
    )
    if acting is None and pending:
        acting = pending[0]
        starts = min(
            c.grace_remaining or 0.0
            for s in signals
            for c in s.checks
            if c.met and c.threshold.signal == acting.signal
        )
    with_data = [s.signal for s in signals if s.observation is not None]
    signal = (
        wanted or (acting.signal if acting else None) or (with_data[0] if with_data else MEMORY_AVAILABLE)
    )
    assessment = next((s for s in signals if s.signal == signal), None)
    needed, target = 0, None
    if assessment is not None and assessment.observation is not None:
        targets = [c.target for c in assessment.checks if c.met and c.target is not None]
        if targets:
            target = max(targets)
            needed = max(0, target - assessment.observation.available)
    return _Plan(signal, layout, needed, target), acting, starts


def _measure_for(columns: PodColumns, plans: Sequence[_Plan], signal: str, mask: BoolArray) -> Measured:
    """The pods' measures for `signal`, each with the rank function of its node's disks."""
    layouts = sorted({p.layout for p in plans}, key=lambda d: (d.dedicated_image_fs, d.split_container_fs))
    if len(layouts) == 1:
        return measure(columns, rank_function(signal, layouts[0]))
    node_layout = np.fromiter((layouts.index(p.layout) for p in plans), dtype=np.int64, count=len(plans))
    pod_layout = node_layout[columns.node]
    parts = [
        (mask & (pod_layout == i), measure(columns, rank_function(signal, layout)))
        for i, layout in enumerate(layouts)
    ]
    return merge_measured(parts, len(columns))


def assess(
    nodes: Sequence[NodeInput],
    pods: Sequence[PodFacts],
    usage: Sequence[PodUsage | None],
    pod_node: Sequence[int],
    *,
    now: float,
    signal: str | None = None,
) -> list[NodeAssessment]:
    """Assess every node; `pod_node[i]` is the index in `nodes` of pod i's node. `signal`
    ranks every node's pods for that signal instead of the one under pressure."""
    columns = PodColumns.build(pods, usage, pod_node)
    plans: list[_Plan] = []
    evaluated: list[_Evaluated] = []
    for node in nodes:
        observations = make_signal_observations(node.stats) if node.stats is not None else {}
        layout = node.stats.layout if node.stats is not None else DiskLayout()
        thresholds = node.config.thresholds_for(layout)
        sync = synchronize(thresholds, node.config.pressure_transition_period, node.state, observations, now)
        signals = _signals(thresholds, observations, sync, now)
        plan, acting, starts = _plan(node, signals, sync.thresholds_driving_eviction, signal)
        plans.append(plan)
        evaluated.append(_Evaluated(node, signals, sync.state, sync.node_conditions, acting, starts))

    needed = np.fromiter((p.needed for p in plans), dtype=np.int64, count=len(plans))
    ranked: dict[int, list[RankedPod]] = defaultdict(list)
    node_signal = [p.signal for p in plans]
    for this_signal in sorted(set(node_signal)):
        wanted_nodes = np.fromiter((s == this_signal for s in node_signal), dtype=np.bool_, count=len(plans))
        mask = wanted_nodes[columns.node] if len(columns) else np.zeros(0, dtype=np.bool_)
        if not mask.any():
            continue
        m = _measure_for(columns, plans, this_signal, mask)
        criteria = criteria_of(rank_function(this_signal, DiskLayout()))
        order = rank(columns, m, criteria, np.flatnonzero(mask).astype(np.int64))
        ev = evictions(columns, m, order, needed)
        for i, pod_index in enumerate(ev.order.tolist()):
            found = bool(columns.found[pod_index])
            ranked[int(columns.node[pod_index])].append(
                RankedPod(
                    pod=pods[pod_index],
                    position=int(ev.position[i]),
                    victim=bool(ev.victim[i]),
                    frees=int(ev.frees[i]) if ev.frees_known[i] else None,
                    exceeds_requests=bool(ev.exceeds[i]) if found else None,
                    usage_above_requests=int(ev.above[i]) if ev.frees_known[i] else None,
                    has_usage=found,
                )
            )

    results: list[NodeAssessment] = []
    for index, (done, plan) in enumerate(zip(evaluated, plans, strict=True)):
        node, pods_in_order = done.node, tuple(ranked.get(index, ()))
        notes: list[str] = []
        if node.stats is None:
            notes.append(NOTE_NO_USAGE)
        without = sum(1 for r in pods_in_order if not r.has_usage)
        if without and node.stats is not None:
            notes.append(NOTE_PODS_WITHOUT_USAGE.format(count=without))
        reclaimable: bool | None = None
        if plan.needed > 0:
            freed = sum(r.frees or 0 for r in pods_in_order if r.victim)
            reclaimable = freed >= plan.needed
            if not reclaimable:
                notes.append(NOTE_NOT_ENOUGH.format(signal=plan.signal, target=plan.target))
            if RESOURCE_OF[plan.signal] in (EPHEMERAL_STORAGE, INODES):
                notes.append(NOTE_NODE_RECLAIM.format(signal=plan.signal))
        results.append(
            NodeAssessment(
                name=node.name,
                threshold_source=node.config.source,
                usage_source=node.stats.source if node.stats is not None else None,
                signals=done.signals,
                conditions=done.conditions,
                under_pressure=tuple(s.signal for s in done.signals if s.met),
                eviction_signal=done.acting.signal if done.acting else None,
                eviction_starts_in=done.starts,
                kill_grace_period=_kill_grace_period(done.acting, node.config),
                order_signal=plan.signal,
                reclaim_target=plan.target,
                reclaim_needed=plan.needed,
                reclaimable=reclaimable,
                order=pods_in_order,
                state=done.state,
                notes=tuple(notes),
            )
        )
    return results
