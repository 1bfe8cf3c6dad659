"""EvictionHeadroom (ours, issue 35): scores from real usage against eviction thresholds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.plugin_args import default_plugin_args
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.evictionheadroom import (
    NEUTRAL_SCORE,
    EvictionHeadroom,
    EvictionHeadroomArgs,
)
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.pressure.headroom import NodeUsage, NodeUsageStore, placement_checks
from policy_scheduler.scheduler.pressure.observations import FsStats, MemoryStats, NodeStats
from policy_scheduler.scheduler.pressure.signals import MEMORY_AVAILABLE, NODEFS_AVAILABLE
from policy_scheduler.scheduler.pressure.thresholds import (
    KubeletEvictionSettings,
    eviction_config,
    parse_threshold_statement,
)
from policy_scheduler.scheduler.profile_resolution import resolve_profile

from ._build_noderesources import all_rows, make_node, make_pod, make_table

GI, MI = 1024**3, 1024**2
MEMORY_ONLY = {"signals": [{"name": MEMORY_AVAILABLE}], "thresholds": {MEMORY_AVAILABLE: "1Gi"}}


def memory(available: int, working_set: int, time: float | None = None) -> NodeStats:
    return NodeStats(memory=MemoryStats(available, working_set, time))


def build(
    usage: dict[str, NodeUsage],
    args: dict[str, Any] | None = None,
    pods: Sequence[Pod] = (),
    now: float = 0.0,
) -> tuple[EvictionHeadroom, NodeTable, NodeUsageStore]:
    table = make_table(
        [make_node(n, {"memory": 64 * GI, "ephemeral-storage": 1000 * GI}) for n in ("a", "b", "c")], pods
    )
    store = NodeUsageStore()
    for name, u in usage.items():
        store.set(name, u)
    handle = Handle(table, services=ClusterServices(node_usage=store), clock=lambda: now)
    return EvictionHeadroom.from_profile(handle, dict(MEMORY_ONLY if args is None else args)), table, store


def scores(plugin: EvictionHeadroom, table: NodeTable, pod: Pod) -> list[int]:
    return [int(s) for s in plugin.score(CycleState(), pod, all_rows(table))]


def test_more_headroom_scores_higher_and_no_data_is_neutral() -> None:
    # capacity 9Gi, threshold 1Gi: room 8Gi. a: 5Gi available -> 4Gi headroom -> 50; b: 1.5Gi -> 6
    plugin, table, _ = build(
        {"a": NodeUsage.of(memory(5 * GI, 4 * GI)), "b": NodeUsage.of(memory(GI + GI // 2, 7 * GI + GI // 2))}
    )
    assert scores(plugin, table, make_pod()) == [50, 6, NEUTRAL_SCORE]


def test_the_pods_request_counts_as_demand() -> None:
    plugin, table, _ = build({"a": NodeUsage.of(memory(5 * GI, 4 * GI))})
    pod = make_pod({"memory": 2 * GI})
    assert scores(plugin, table, pod)[0] == 25  # (5 - 2 - 1) / 8
    big = make_pod({"memory": 5 * GI})
    assert scores(plugin, table, big)[0] == 0  # below the threshold after placing it


def test_requests_the_sample_does_not_include_count_as_demand() -> None:
    old = make_pod({"memory": GI}, node_name="a", name="old")
    new = make_pod({"memory": 2 * GI}, node_name="a", name="new")
    usage = NodeUsage.of(memory(5 * GI, 4 * GI), measured_pods=[old])
    plugin, table, _ = build({"a": usage}, pods=[old, new])
    assert scores(plugin, table, make_pod())[0] == 25  # new's 2Gi are not in the sample yet
    unknown = NodeUsage.of(memory(5 * GI, 4 * GI))  # measured pods unknown: no correction
    plugin, table, _ = build({"a": unknown}, pods=[old, new])
    assert scores(plugin, table, make_pod())[0] == 50


def test_the_nodes_own_threshold_counts_when_higher() -> None:
    config = eviction_config(
        KubeletEvictionSettings(eviction_hard={MEMORY_AVAILABLE: "3Gi"}, enforce_node_allocatable=())
    )
    plugin, table, _ = build({"a": NodeUsage.of(memory(5 * GI, 4 * GI), config)})
    assert scores(plugin, table, make_pod())[0] == 33  # (5 - 3) / (9 - 3)
    low = eviction_config(
        KubeletEvictionSettings(eviction_hard={MEMORY_AVAILABLE: "100Mi"}, enforce_node_allocatable=())
    )
    plugin, table, _ = build({"a": NodeUsage.of(memory(5 * GI, 4 * GI), low)})
    assert scores(plugin, table, make_pod())[0] == 50  # the plugin's 1Gi floor stays


def test_stale_usage_is_neutral() -> None:
    usage = {"a": NodeUsage.of(memory(5 * GI, 4 * GI, time=1000.0))}
    fresh, table, _ = build(usage, {**MEMORY_ONLY, "maxUsageAgeSeconds": 60}, now=1059.0)
    assert scores(fresh, table, make_pod())[0] == 50
    stale, table, _ = build(usage, {**MEMORY_ONLY, "maxUsageAgeSeconds": 60}, now=1061.0)
    assert scores(stale, table, make_pod())[0] == NEUTRAL_SCORE
    assert stale.reasons(make_pod(), "a") == [
        f"memory.available: usage data too old: neutral score {NEUTRAL_SCORE}"
    ]


def test_weighted_mean_over_signals() -> None:
    stats = NodeStats(
        memory=MemoryStats(5 * GI, 4 * GI),
        fs=FsStats(available_bytes=100 * GI, capacity_bytes=100 * GI),
    )
    args = {
        "signals": [{"name": MEMORY_AVAILABLE, "weight": 3}, {"name": NODEFS_AVAILABLE, "weight": 1}],
        "thresholds": {MEMORY_AVAILABLE: "1Gi", NODEFS_AVAILABLE: "10Gi"},
    }
    plugin, table, _ = build({"a": NodeUsage.of(stats)}, args)
    # memory 50, nodefs 100 (all free): (3*50 + 100) / 4
    assert scores(plugin, table, make_pod())[0] == 62
    pod = make_pod({"ephemeral-storage": 45 * GI})  # nodefs: (100 - 45 - 10) / 90 -> 50
    assert scores(plugin, table, pod)[0] == 50


def test_scores_follow_the_store() -> None:
    plugin, table, store = build({})
    assert scores(plugin, table, make_pod())[0] == NEUTRAL_SCORE
    store.set("a", NodeUsage.of(memory(9 * GI, 0)))
    assert scores(plugin, table, make_pod())[0] == 100
    store.delete("a")
    assert scores(plugin, table, make_pod())[0] == NEUTRAL_SCORE


def test_reasons() -> None:
    plugin, _, _ = build({"a": NodeUsage.of(memory(5 * GI, 4 * GI))})
    assert plugin.reasons(make_pod(), "a") == [
        f"memory.available: {5 * GI} available, eviction threshold {GI}: score 50 (weight 1)"
    ]
    assert plugin.reasons(make_pod(), "b") == [
        f"memory.available: no usage data: neutral score {NEUTRAL_SCORE}"
    ]


def test_pods_sign_by_their_requests() -> None:
    plugin, _, _ = build({})
    assert plugin.sign_pod(make_pod({"memory": GI})) == plugin.sign_pod(make_pod({"memory": GI}))
    assert plugin.sign_pod(make_pod({"memory": GI})) != plugin.sign_pod(make_pod({"memory": 2 * GI}))


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({"signals": [{"name": "memory"}]}, "signals[0].name"),
        ({"signals": [{"name": MEMORY_AVAILABLE}, {"name": MEMORY_AVAILABLE}]}, "signals[1].name"),
        ({"signals": [{"name": MEMORY_AVAILABLE, "weight": 0}]}, "signals[0].weight"),
        ({"signals": []}, "signals"),
        ({"thresholds": {MEMORY_AVAILABLE: "-1Gi"}}, "thresholds[memory.available]"),
        ({"thresholds": {"memory": "1Gi"}}, "thresholds[memory]"),
        ({"maxUsageAgeSeconds": -1}, "maxUsageAgeSeconds"),
    ],
)
def test_invalid_args(args: dict[str, Any], path: str) -> None:
    with pytest.raises(ArgsError) as caught:
        EvictionHeadroomArgs.from_json(args)
    assert caught.value.problems[0].path == path
    with pytest.raises(PolicyError, match=path.replace("[", r"\[").replace("]", r"\]")):
        default_plugin_args("EvictionHeadroom", args, "spec.pluginConfig[0].args")


def test_defaults() -> None:
    args = EvictionHeadroomArgs.from_json({})
    assert [s.name for s in args.signals] == [
        "memory.available",
        "nodefs.available",
        "imagefs.available",
        "pid.available",
    ]
    assert dict(args.thresholds)["memory.available"] == "100Mi"
    assert EvictionHeadroomArgs.from_json(args.to_json()) == args


def test_opt_in_only() -> None:
    assert "EvictionHeadroom" in implemented_plugin_names()
    default = resolve_profile(ProfileConfig(), implemented_plugin_names())
    assert "EvictionHeadroom" not in [ref.name for ref in default.points["score"]]


def test_placement_checks() -> None:
    usage = NodeUsage.of(memory(2 * GI, 6 * GI))
    one_gi = parse_threshold_statement(MEMORY_AVAILABLE, "1Gi", "")
    assert one_gi is not None
    floors = {MEMORY_AVAILABLE: one_gi}
    [stays] = placement_checks(usage, {}, {"memory": GI // 2}, floors)
    assert (stays.crosses, stays.short_by, stays.available_after) == (False, 0, GI + GI // 2)
    assert stays.describe("a") == (
        "would leave memory.available on a above its eviction threshold (1.5Gi left >= 1Gi)"
    )
    [crossed] = placement_checks(usage, {}, {"memory": GI + MI}, floors)
    assert (crossed.signal, crossed.available_after, crossed.level) == (MEMORY_AVAILABLE, GI - MI, GI)
    assert (crossed.crosses, crossed.short_by) == (True, MI)
    assert (
        crossed.describe("a")
        == "would push memory.available on a below its eviction threshold (1023Mi left < 1Gi)"
    )
    # requests placed earlier count too
    [after_earlier] = placement_checks(usage, {"memory": GI}, {"memory": MI}, floors)
    assert after_earlier.available_after == GI - MI
    assert after_earlier.crosses
    [already] = placement_checks(NodeUsage.of(memory(GI // 2, 0)), {}, {"memory": 1}, floors)
    assert already.describe("a") == "a is already below its memory.available eviction threshold (512Mi < 1Gi)"
    # no usage data, no request of the resource: nothing to say
    assert placement_checks(NodeUsage.of(NodeStats()), {}, {"memory": 10 * GI}, floors) == []
    assert placement_checks(usage, {}, {"ephemeral-storage": 10 * GI}, floors) == []


def test_reasons_for_a_pod_on_the_node_count_its_requests_once() -> None:
    """explain asks after binding: the table then holds the pod's requests, which must not count
    a second time as demand the sample does not show."""
    pending = make_pod({"memory": 2 * GI}, name="web", uid="web")
    bound = make_pod({"memory": 2 * GI}, name="web", uid="web", node_name="a")
    usage = {"a": NodeUsage.of(memory(5 * GI, 4 * GI), measured_pods=[])}
    before, _, _ = build(usage)
    after, _, _ = build(usage, pods=[bound])
    # (5Gi - 2Gi - 1Gi) / 8Gi of room: 25, before binding and after
    assert before.reasons(pending, "a") == after.reasons(bound, "a")
    assert before.reasons(pending, "a")[0].endswith("score 25 (weight 1)")
    # another pod's requests the sample does not show do count
    other = make_pod({"memory": 2 * GI}, name="other", uid="other", node_name="a")
    crowded, _, _ = build(usage, pods=[other])
    assert crowded.reasons(pending, "a")[0].endswith("score 0 (weight 1)")
