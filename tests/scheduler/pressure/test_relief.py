"""Relief's decision on a node (scheduler/pressure/relief.py): its thresholds, the condition
trigger, and which pods of the kubelet's order it takes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from policy_scheduler.scheduler.pressure.assess import NodeAssessment, NodeInput, assess
from policy_scheduler.scheduler.pressure.manager import ManagerState
from policy_scheduler.scheduler.pressure.observations import MemoryStats, NodeStats, PodUsage
from policy_scheduler.scheduler.pressure.pods import PodFacts
from policy_scheduler.scheduler.pressure.relief import ReliefConfig, decide
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_CONFIG,
    SOURCE_POLICY,
    parse_minimum_reclaims,
    parse_threshold_statement,
)

MI, GI = 2**20, 2**30


def threshold(signal: str, value: str, min_reclaim: str | None = None) -> object:
    parsed = parse_threshold_statement(signal, value, "t")
    assert parsed is not None
    if min_reclaim is None:
        return parsed
    from dataclasses import replace

    return replace(parsed, min_reclaim=parse_minimum_reclaims({signal: min_reclaim}, "m")[signal])


def relief(*thresholds: object, on_node_condition: bool = True) -> ReliefConfig:
    return ReliefConfig(tuple(thresholds), on_node_condition)  # type: ignore[arg-type]


def memory_node(available: int, capacity: int = 10 * GI, time: float = 100.0) -> NodeStats:
    return NodeStats(memory=MemoryStats(available, capacity - available, time))


def pod(name: str, *, priority: int = 0, memory: int = 0, critical: bool = False) -> PodFacts:
    return PodFacts(
        "default", name, uid=name, priority=2_000_000_000 if critical else priority, memory_request=memory
    )


def run(
    config: ReliefConfig,
    stats: NodeStats,
    pods: Sequence[tuple[PodFacts, int | None]],
    *,
    reported: Sequence[str] = (),
    state: ManagerState | None = None,
    now: float = 100.0,
) -> NodeAssessment:
    node = NodeInput("n1", stats, config.config_for(DEFAULT_CONFIG, reported), state or ManagerState())
    usage = [PodUsage(memory_working_set=ws) if ws is not None else None for _, ws in pods]
    return assess([node], [p for p, _ in pods], usage, [0] * len(pods), now=now)[0]


NO_REFUSAL: Callable[[PodFacts], str | None] = lambda _: None  # noqa: E731


def test_relief_thresholds_come_from_the_policy() -> None:
    config = relief(threshold("memory.available", "1Gi", "512Mi"))
    result = run(config, memory_node(900 * MI), [(pod("a"), 400 * MI), (pod("b"), 300 * MI)])
    assert result.threshold_source == SOURCE_POLICY
    decision = decide(result, pending={}, refuse=NO_REFUSAL)
    assert decision.signal == "memory.available"
    assert decision.target == 1536 * MI  # 1Gi + 512Mi minimum reclaim
    assert decision.needed == 1536 * MI - 900 * MI
    assert [c.pod.name for c in decision.candidates] == ["a", "b"]


def test_above_the_threshold_nothing_is_relieved() -> None:
    result = run(relief(threshold("memory.available", "1Gi")), memory_node(2 * GI), [(pod("a"), GI)])
    decision = decide(result, pending={}, refuse=NO_REFUSAL)
    assert (decision.signal, decision.needed, decision.candidates) == (None, 0, ())


def test_a_met_threshold_holds_until_the_minimum_reclaim_is_back() -> None:
    config = relief(threshold("memory.available", "1Gi", "512Mi"))
    first = run(config, memory_node(900 * MI, time=100.0), [(pod("a"), GI)], now=100.0)
    # 1.2Gi is above 1Gi but below 1.5Gi: still met, as the kubelet's thresholdsMet with minReclaim
    later = run(config, memory_node(1229 * MI, time=115.0), [(pod("a"), GI)], state=first.state, now=115.0)
    assert decide(later, pending={}, refuse=NO_REFUSAL).signal == "memory.available"
    healed = run(config, memory_node(1600 * MI, time=130.0), [(pod("a"), GI)], state=later.state, now=130.0)
    assert decide(healed, pending={}, refuse=NO_REFUSAL).signal is None
    # ... while the node stays marked for the transition period
    assert healed.conditions == ("MemoryPressure",)


def test_the_same_sample_twice_drives_no_second_eviction() -> None:
    """thresholdsUpdatedStats: relief acts once per fresh sample, as the kubelet does."""
    config = relief(threshold("memory.available", "1Gi"))
    first = run(config, memory_node(900 * MI, time=100.0), [(pod("a"), GI)], now=100.0)
    again = run(config, memory_node(900 * MI, time=100.0), [(pod("a"), GI)], state=first.state, now=105.0)
    assert decide(again, pending={}, refuse=NO_REFUSAL).signal is None
    assert again.conditions == ("MemoryPressure",)


@pytest.mark.parametrize(
    ("on_node_condition", "reported", "acts"),
    [
        (True, ("MemoryPressure",), True),  # the kubelet's 100Mi applies: 50Mi left
        (False, ("MemoryPressure",), False),
        (True, ("DiskPressure",), False),  # another signal's condition adds no memory threshold
        (True, (), False),
    ],
)
def test_the_node_condition_brings_the_kubelets_thresholds(
    on_node_condition: bool, reported: tuple[str, ...], acts: bool
) -> None:
    config = relief(threshold("nodefs.available", "20%"), on_node_condition=on_node_condition)
    result = run(config, memory_node(50 * MI), [(pod("a"), GI)], reported=reported)
    decision = decide(result, pending={}, refuse=NO_REFUSAL)
    assert (decision.signal == "memory.available") is acts
    if acts:
        assert decision.target == 100 * MI  # DefaultEvictionHard


def test_the_kubelets_order_without_what_relief_may_not_evict() -> None:
    config = relief(threshold("memory.available", "1Gi"))
    pods = [
        (pod("over-a-lot"), 600 * MI),  # above its (zero) request, lowest priority: first
        (pod("proxy", critical=True), 500 * MI),  # never evicted by the kubelet
        (pod("fresh"), None),  # no usage yet: ranks first for the kubelet, left alone here
        (pod("protected"), 400 * MI),
        (pod("within", memory=GI), 100 * MI),
    ]
    result = run(config, memory_node(500 * MI), pods)
    assert [r.pod.name for r in result.order][:2] == ["fresh", "over-a-lot"]
    decision = decide(
        result,
        pending={},
        refuse=lambda p: "protected by the policy" if p.name == "protected" else None,
    )
    assert [c.pod.name for c in decision.candidates] == ["over-a-lot", "within"]
    assert {s.pod.name: s.why for s in decision.skipped} == {
        "fresh": "no usage data for the pod",
        "proxy": "the kubelet never evicts it: critical pod (priority 2000000000 >= 2000000000)",
        "protected": "protected by the policy",
    }


def test_pods_already_evicted_count_as_reclaimed() -> None:
    config = relief(threshold("memory.available", "1Gi"))
    result = run(config, memory_node(700 * MI), [(pod("a"), 200 * MI), (pod("b"), 300 * MI)])
    decision = decide(result, pending={"a": 200 * MI}, refuse=NO_REFUSAL)
    assert decision.needed == GI - 700 * MI - 200 * MI
    assert [c.pod.name for c in decision.candidates] == ["b"]
    done = decide(result, pending={"a": 200 * MI, "b": 300 * MI}, refuse=NO_REFUSAL)
    assert (done.needed, done.candidates) == (0, ())
