"""Pressure relief: what an EvictionPolicy's pressureRelief evicts on a node, before the kubelet.

Relief holds a node's signals to thresholds the admin sets above the kubelet's, as the kubelet
holds them to its own (an EvictionConfig whose source is the policy, kept between passes in a
ManagerState: a threshold met stays met until the signal is back above it plus its minimum
reclaim, and the node stays marked for the transition period). With `on_node_condition`, the
kubelet's own thresholds of the signals whose condition the node reports count too. It then
walks the kubelet's order for the signal and takes the pods the kubelet would evict first,
leaving out what it never evicts (static, mirror and critical pods), what the policy protects,
pods without usage data (a ranking on missing numbers would be a guess) and pods already
evicted; their frees count as reclaimed until the sample no longer shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from policy_scheduler.scheduler.pressure.assess import NodeAssessment, RankedPod
from policy_scheduler.scheduler.pressure.pods import PodFacts
from policy_scheduler.scheduler.pressure.signals import CONDITION_OF
from policy_scheduler.scheduler.pressure.thresholds import SOURCE_POLICY, EvictionConfig, Threshold

DEFAULT_MAX_USAGE_AGE = 120.0
DEFAULT_TRANSITION_PERIOD = 60.0

SKIP_NEVER_EVICTED = "the kubelet never evicts it: {why}"
SKIP_NO_USAGE = "no usage data for the pod"


@dataclass(frozen=True, slots=True)
class ReliefConfig:
    """An EvictionPolicy's pressureRelief, as the core uses it. `thresholds` are hard, with
    their minimum reclaims; `max_usage_age` and `pressure_transition_period` in seconds."""

    thresholds: tuple[Threshold, ...] = ()
    on_node_condition: bool = True
    max_usage_age: float = DEFAULT_MAX_USAGE_AGE
    pressure_transition_period: float = DEFAULT_TRANSITION_PERIOD

    def config_for(self, kubelet: EvictionConfig, reported: Collection[str]) -> EvictionConfig:
        """The thresholds relief holds a node to: its own, and (on_node_condition) the node's
        kubelet thresholds, acting at once, of the signals whose condition the node reports and
        that relief sets no threshold for."""
        thresholds = list(self.thresholds)
        if self.on_node_condition and reported:
            own = {t.signal for t in self.thresholds}
            thresholds += [
                replace(t, grace_period=0.0)
                for t in kubelet.thresholds
                if CONDITION_OF.get(t.signal) in reported and t.signal not in own
            ]
        return EvictionConfig(
            tuple(thresholds), self.pressure_transition_period, kubelet.max_pod_grace_period, SOURCE_POLICY
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    pod: PodFacts
    why: str


@dataclass(frozen=True, slots=True)
class ReliefDecision:
    """What relief does on one node now."""

    node: str
    signal: str | None  # the signal reclaimed; None: no relief threshold is met
    target: int | None  # threshold + minimum reclaim: where relief stops
    available: int | None
    needed: int  # still to free, beyond what pods already evicted free
    candidates: tuple[RankedPod, ...]  # the pods relief may evict, in the kubelet's order
    skipped: tuple[Skipped, ...]  # pods ahead in that order relief leaves alone, and why


def decide(
    assessment: NodeAssessment,
    *,
    pending: Mapping[str, int],
    refuse: Callable[[PodFacts], str | None],
) -> ReliefDecision:
    """One node's relief from its assessment under relief's thresholds. `pending`: what each
    pod already evicted from the node (by uid) frees, while the sample may still show it;
    `refuse(pod)`: why relief may not evict a pod (the policy protects it, it is terminating),
    or None."""
    signal = assessment.eviction_signal if assessment.eviction_starts_in == 0 else None
    if signal is None or signal != assessment.order_signal:
        return ReliefDecision(assessment.name, None, None, None, 0, (), ())
    observed = next((s.observation for s in assessment.signals if s.signal == signal), None)
    needed = max(0, assessment.reclaim_needed - sum(pending.values()))
    candidates: list[RankedPod] = []
    skipped: list[Skipped] = []
    for ranked in assessment.order:
        pod = ranked.pod
        if pod.uid in pending:
            continue
        why = (
            SKIP_NEVER_EVICTED.format(why=ranked.never_evicted)
            if ranked.never_evicted
            else SKIP_NO_USAGE
            if not ranked.has_usage or ranked.frees is None
            else refuse(pod)
        )
        if why is None:
            candidates.append(ranked)
        else:
            skipped.append(Skipped(pod, why))
    return ReliefDecision(
        assessment.name,
        signal,
        assessment.reclaim_target,
        observed.available if observed is not None else None,
        needed,
        tuple(candidates),
        tuple(skipped),
    )
