"""The eviction manager's bookkeeping. Tables from helpers_test.go (v1.37.2): TestThresholdsMet,
TestPercentageThresholdsMet, TestThresholdsUpdatedStats, TestThresholdsFirstObservedAt,
TestThresholdsMetGracePeriod, TestNodeConditions, TestNodeConditionsLastObservedAt,
TestNodeConditionsObservedSince; and pass-by-pass scenarios from eviction_manager_test.go:
TestMemoryPressure, TestMinReclaim, TestStaticCriticalPodsAreNotEvicted,
TestAdmitUnderNodeConditions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.pressure.assess import NodeAssessment, NodeInput, assess
from policy_scheduler.scheduler.pressure.manager import (
    ManagerState,
    admits,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
)
from policy_scheduler.scheduler.pressure.observations import MemoryStats, NodeStats, SignalObservation
from policy_scheduler.scheduler.pressure.pods import SYSTEM_CRITICAL_PRIORITY, pod_facts
from policy_scheduler.scheduler.pressure.signals import (
    DISK_PRESSURE,
    MEMORY_AVAILABLE,
    MEMORY_PRESSURE,
    NODEFS_AVAILABLE,
)
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig, Threshold, ThresholdValue

from ._build import (
    DEFAULT_PRIORITY,
    HIGH_PRIORITY,
    LOW_PRIORITY,
    memory_stats,
    new_container,
    new_pod,
    new_resource_list,
    q,
)


def obs(available: str, capacity: str = "0", time: float | None = None) -> SignalObservation:
    return SignalObservation(q(available), q(capacity), time)


HARD = Threshold(MEMORY_AVAILABLE, ThresholdValue(q("1Gi")), 0.0, ThresholdValue(q("500Mi")))

MET_CASES: dict[str, tuple[bool, list[Threshold], dict[str, SignalObservation], list[Threshold]]] = {
    "empty": (False, [], {}, []),
    "threshold-met-memory": (False, [HARD], {MEMORY_AVAILABLE: obs("500Mi")}, [HARD]),
    "threshold-not-met": (False, [HARD], {MEMORY_AVAILABLE: obs("2Gi")}, []),
    "threshold-met-with-min-reclaim": (True, [HARD], {MEMORY_AVAILABLE: obs("1.05Gi")}, [HARD]),
    "threshold-not-met-with-min-reclaim": (True, [HARD], {MEMORY_AVAILABLE: obs("2Gi")}, []),
}


@pytest.mark.parametrize("name", list(MET_CASES))
def test_thresholds_met(name: str) -> None:
    enforce, thresholds, observations, expected = MET_CASES[name]
    assert thresholds_met(thresholds, observations, enforce) == expected


SPECIFIC = [
    Threshold(
        MEMORY_AVAILABLE,
        ThresholdValue(percentage=float(np.float32(0.2))),
        0.0,
        ThresholdValue(percentage=float(np.float32(0.05))),
    ),
    Threshold(NODEFS_AVAILABLE, ThresholdValue(percentage=float(np.float32(0.3)))),
]
PERCENTAGE_CASES: dict[str, tuple[bool, dict[str, SignalObservation], list[Threshold]]] = {
    "BothMet": (
        False,
        {MEMORY_AVAILABLE: obs("100Mi", "1000Mi"), NODEFS_AVAILABLE: obs("100Gi", "1000Gi")},
        SPECIFIC,
    ),
    "NoneMet": (
        False,
        {MEMORY_AVAILABLE: obs("300Mi", "1000Mi"), NODEFS_AVAILABLE: obs("400Gi", "1000Gi")},
        [],
    ),
    "DiskMet": (
        False,
        {MEMORY_AVAILABLE: obs("300Mi", "1000Mi"), NODEFS_AVAILABLE: obs("100Gi", "1000Gi")},
        [SPECIFIC[1]],
    ),
    "MemoryMet": (
        False,
        {MEMORY_AVAILABLE: obs("100Mi", "1000Mi"), NODEFS_AVAILABLE: obs("400Gi", "1000Gi")},
        [SPECIFIC[0]],
    ),
    "MemoryMetWithMinReclaim": (True, {MEMORY_AVAILABLE: obs("225Mi", "1000Mi")}, [SPECIFIC[0]]),
    "MemoryNotMetWithMinReclaim": (True, {MEMORY_AVAILABLE: obs("300Mi", "1000Mi")}, []),
}


@pytest.mark.parametrize("name", list(PERCENTAGE_CASES))
def test_percentage_thresholds_met(name: str) -> None:
    enforce, observations, expected = PERCENTAGE_CASES[name]
    assert Counter(thresholds_met(SPECIFIC, observations, enforce)) == Counter(expected)


UPDATED = Threshold(MEMORY_AVAILABLE, ThresholdValue())
T0, T1 = 1451606400.0, 1451606460.0  # 2016-01-01 00:00 and 00:01 UTC
UPDATED_CASES: dict[
    str, tuple[list[Threshold], dict[str, SignalObservation], dict[str, SignalObservation], bool]
] = {
    "empty": ([], {}, {}, False),
    "no-time": ([UPDATED], {MEMORY_AVAILABLE: obs("0")}, {}, True),
    "no-last-observation": ([UPDATED], {MEMORY_AVAILABLE: obs("0", time=T0)}, {}, True),
    "time-machine": (
        [UPDATED],
        {MEMORY_AVAILABLE: obs("0", time=T0)},
        {MEMORY_AVAILABLE: obs("0", time=T1)},
        False,
    ),
    "same-observation": (
        [UPDATED],
        {MEMORY_AVAILABLE: obs("0", time=T0)},
        {MEMORY_AVAILABLE: obs("0", time=T0)},
        False,
    ),
    "new-observation": (
        [UPDATED],
        {MEMORY_AVAILABLE: obs("0", time=T1)},
        {MEMORY_AVAILABLE: obs("0", time=T0)},
        True,
    ),
}


@pytest.mark.parametrize("name", list(UPDATED_CASES))
def test_thresholds_updated_stats(name: str) -> None:
    thresholds, observations, last, updated = UPDATED_CASES[name]
    assert thresholds_updated_stats(thresholds, observations, last) == ([UPDATED] if updated else [])


NOW = 1_700_000_000.0
HARD_1GI = Threshold(MEMORY_AVAILABLE, ThresholdValue(q("1Gi")))
SOFT_2GI = Threshold(MEMORY_AVAILABLE, ThresholdValue(q("2Gi")), 60.0)


@pytest.mark.parametrize(
    ("thresholds", "last", "expected"),
    [
        ([], {}, {}),
        ([HARD_1GI], {}, {HARD_1GI: NOW}),
        ([HARD_1GI], {HARD_1GI: NOW - 60}, {HARD_1GI: NOW - 60}),
    ],
    ids=["empty", "no-previous-observation", "previous-observation"],
)
def test_thresholds_first_observed_at(
    thresholds: list[Threshold], last: dict[Threshold, float], expected: dict[Threshold, float]
) -> None:
    assert thresholds_first_observed_at(thresholds, last, NOW) == expected


@pytest.mark.parametrize(
    ("observed_at", "expected"),
    [
        ({}, []),
        ({HARD_1GI: NOW}, [HARD_1GI]),
        ({SOFT_2GI: NOW}, []),
        ({SOFT_2GI: NOW - 120}, [SOFT_2GI]),
    ],
    ids=["empty", "hard-threshold-met", "soft-threshold-not-met", "soft-threshold-met"],
)
def test_thresholds_met_grace_period(observed_at: dict[Threshold, float], expected: list[Threshold]) -> None:
    assert thresholds_met_grace_period(observed_at, NOW) == expected


def test_node_conditions() -> None:
    assert node_conditions([]) == []
    assert node_conditions([Threshold(MEMORY_AVAILABLE, ThresholdValue())]) == [MEMORY_PRESSURE]
    both = [
        Threshold(MEMORY_AVAILABLE, ThresholdValue()),
        HARD_1GI,
        Threshold(NODEFS_AVAILABLE, ThresholdValue()),
    ]
    assert node_conditions(both) == [MEMORY_PRESSURE, DISK_PRESSURE]


@pytest.mark.parametrize(
    ("conditions", "last", "expected"),
    [
        ([MEMORY_PRESSURE], {}, {MEMORY_PRESSURE: NOW}),
        ([MEMORY_PRESSURE], {MEMORY_PRESSURE: NOW - 60}, {MEMORY_PRESSURE: NOW}),
        ([], {MEMORY_PRESSURE: NOW - 60}, {MEMORY_PRESSURE: NOW - 60}),
    ],
    ids=["no-previous-observation", "previous-observation", "old-observation"],
)
def test_node_conditions_last_observed_at(
    conditions: list[str], last: dict[str, float], expected: dict[str, float]
) -> None:
    assert node_conditions_last_observed_at(conditions, last, NOW) == expected


@pytest.mark.parametrize(("period", "expected"), [(120.0, [MEMORY_PRESSURE]), (30.0, [])], ids=["in", "out"])
def test_node_conditions_observed_since(period: float, expected: list[str]) -> None:
    assert node_conditions_observed_since({MEMORY_PRESSURE: NOW - 60}, period, NOW) == expected


# ---- eviction_manager_test.go: the manager pass by pass --------------------------------------


def memory_pods() -> list[Pod]:
    """TestMemoryPressure's podsToMake; the fifth pod is the one to evict."""
    made = [
        ("guaranteed-low-priority-high-usage", LOW_PRIORITY, new_resource_list("100m", "1Gi")),
        ("burstable-below-requests", DEFAULT_PRIORITY, new_resource_list("100m", "100Mi")),
        ("burstable-above-requests", DEFAULT_PRIORITY, new_resource_list("100m", "100Mi")),
        ("best-effort-high-priority-high-usage", HIGH_PRIORITY, new_resource_list()),
        ("best-effort-low-priority-low-usage", LOW_PRIORITY, new_resource_list()),
    ]
    return [new_pod(name, priority, [new_container(name, requests)]) for name, priority, requests in made]


MEMORY_USAGE = {
    "guaranteed-low-priority-high-usage": "900Mi",
    "burstable-below-requests": "50Mi",
    "burstable-above-requests": "400Mi",
    "best-effort-high-priority-high-usage": "400Mi",
    "best-effort-low-priority-low-usage": "100Mi",
}


@dataclass
class Kubelet:
    """Runs the model pass after pass on one node, as the manager's loop does (fake clock)."""

    config: EvictionConfig
    pods: Sequence[Pod]
    usage: dict[str, str]
    now: float = 1_000_000.0
    state: ManagerState = field(default_factory=ManagerState)

    def sync(self, available: str, step: float = 0.0) -> NodeAssessment:
        """makeMemoryStats(available): working set == available."""
        self.now += step
        stats = NodeStats(memory=MemoryStats(q(available), q(available)))
        facts = [pod_facts(p) for p in self.pods]
        usage = [memory_stats(self.usage[p.name]) for p in self.pods]
        [node] = assess(
            [NodeInput("node", stats, self.config, self.state)], facts, usage, [0] * len(facts), now=self.now
        )
        self.state = node.state
        return node


def killed(node: NodeAssessment) -> str | None:
    """The pod the kubelet evicts in this pass: the first victim, if it acts now."""
    if node.eviction_starts_in != 0:
        return None
    victims = [r.pod.name for r in node.order if r.victim]
    return victims[0] if victims else None


def under_memory_pressure(node: NodeAssessment) -> bool:
    return MEMORY_PRESSURE in node.conditions


def test_memory_pressure() -> None:
    config = EvictionConfig(
        (HARD_1GI, Threshold(MEMORY_AVAILABLE, ThresholdValue(q("2Gi")), 120.0)), 300.0, 5
    )
    kubelet = Kubelet(config, memory_pods(), MEMORY_USAGE)
    to_evict = "best-effort-low-priority-low-usage"

    node = kubelet.sync("2Gi")
    assert not under_memory_pressure(node)
    assert killed(node) is None

    node = kubelet.sync("1500Mi", 60)  # induce soft threshold
    assert under_memory_pressure(node)
    assert killed(node) is None  # the grace period has not passed
    assert node.eviction_signal == MEMORY_AVAILABLE
    assert node.eviction_starts_in == 120.0

    node = kubelet.sync("1500Mi", 180)  # past the grace period
    assert under_memory_pressure(node)
    assert killed(node) == to_evict
    assert node.kill_grace_period == 5  # MaxPodGracePeriodSeconds for a soft threshold

    node = kubelet.sync("3Gi", 1200)  # remove memory pressure
    assert not under_memory_pressure(node)

    node = kubelet.sync("500Mi", 60)  # induce memory pressure
    assert under_memory_pressure(node)
    assert killed(node) == to_evict
    assert node.kill_grace_period == 1

    node = kubelet.sync("2Gi", 60)  # reduce memory pressure
    assert under_memory_pressure(node)  # the transition period has not passed
    assert killed(node) is None

    node = kubelet.sync("2Gi", 300)  # past the transition period
    assert not under_memory_pressure(node)
    assert killed(node) is None


def test_min_reclaim() -> None:
    config = EvictionConfig(
        (Threshold(MEMORY_AVAILABLE, ThresholdValue(q("1Gi")), 0.0, ThresholdValue(q("500Mi"))),)
    )
    kubelet = Kubelet(config, memory_pods(), MEMORY_USAGE)
    to_evict = "best-effort-low-priority-low-usage"

    assert not under_memory_pressure(kubelet.sync("2Gi"))
    node = kubelet.sync("500Mi", 60)
    assert under_memory_pressure(node)
    assert killed(node) == to_evict
    # reduced, but not above 1Gi + 500Mi: the kubelet goes on evicting
    node = kubelet.sync("1.2Gi", 60)
    assert under_memory_pressure(node)
    assert killed(node) == to_evict
    assert node.reclaim_target == q("1Gi") + q("500Mi")
    node = kubelet.sync("2Gi", 60)  # the minimum reclaim is reached
    assert under_memory_pressure(node)
    assert killed(node) is None
    node = kubelet.sync("2Gi", 300)
    assert not under_memory_pressure(node)
    assert killed(node) is None


def test_static_critical_pods_are_not_evicted() -> None:
    critical = new_pod(
        "critical",
        SYSTEM_CRITICAL_PRIORITY,
        [new_container("critical", new_resource_list("100m", "1Gi"))],
        namespace="kube-system",
        annotations={"kubernetes.io/config.source": "file"},
    )
    config = EvictionConfig((HARD_1GI, Threshold(MEMORY_AVAILABLE, ThresholdValue(q("2Gi")), 120.0)))
    kubelet = Kubelet(config, [critical], {"critical": "800Mi"})
    kubelet.sync("2Gi")
    node = kubelet.sync("1500Mi", 60)
    assert under_memory_pressure(node)
    assert killed(node) is None
    node = kubelet.sync("1500Mi", 180)
    assert under_memory_pressure(node)
    assert killed(node) is None  # ranked, never evicted
    [ranked] = node.order
    assert ranked.pod.name == "critical"
    assert ranked.never_evicted == "static pod"
    assert node.reclaimable is False


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], [True, True, True]),
        ([MEMORY_PRESSURE], [True, True, False]),
        ([MEMORY_PRESSURE, DISK_PRESSURE], [False] * 3),
    ],
)
def test_admit_under_node_conditions(conditions: list[str], expected: list[bool]) -> None:
    qos = ["Guaranteed", "Burstable", "BestEffort"]
    got = [admits(conditions, critical=False, qos=c, tolerates_memory_pressure=False) for c in qos]
    assert got == expected


def test_admit_critical_and_tolerating_pods() -> None:
    assert admits([DISK_PRESSURE], critical=True, qos="BestEffort", tolerates_memory_pressure=False)
    assert admits([MEMORY_PRESSURE], critical=False, qos="BestEffort", tolerates_memory_pressure=True)
