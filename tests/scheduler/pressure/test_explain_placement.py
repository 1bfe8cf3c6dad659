"""explain's placement check: whether a pod's requests push the node it was placed on,
nominated to or considered for below an eviction threshold (the check simulate reports), and
EvictionHeadroom's reasons, in the recomputed answer, the operator's and the table."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from policy_scheduler.explain.format import format_explanation
from policy_scheduler.explain.recompute import recompute
from policy_scheduler.kube.serving.server import make_app
from policy_scheduler.scheduler.diagnosis_recorder import (
    PENDING,
    SCHEDULED,
    DiagnosisRecorder,
    Explanation,
    NodeScore,
)
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.pressure.headroom import NodeUsage, NodeUsageStore
from policy_scheduler.scheduler.pressure.observations import MemoryStats, NodeStats
from policy_scheduler.scheduler.pressure.placement import (
    CHOSEN,
    CONSIDERED,
    NOMINATED,
    placement_targets,
)
from policy_scheduler.scheduler.pressure.signals import MEMORY_AVAILABLE
from policy_scheduler.scheduler.pressure.thresholds import KubeletEvictionSettings, eviction_config
from policy_scheduler.simulate.scenario import Scenario

GI, MI = 1024**3, 1024**2
ONE_GI_HARD = eviction_config(
    KubeletEvictionSettings(eviction_hard={MEMORY_AVAILABLE: "1Gi"}, enforce_node_allocatable=())
)


def _pod(name: str, memory: int, node: str = "", created: float = 0.0) -> Pod:
    return Pod(
        name,
        uid=name,
        node_name=node,
        creation_timestamp=created,
        containers=(Container("c", requests={"cpu": 100, "memory": memory}),),
    )


def _profile(headroom: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if headroom:
        spec["plugins"] = {"score": {"enabled": [{"name": "EvictionHeadroom", "weight": 1}]}}
        spec["pluginConfig"] = [
            {"name": "EvictionHeadroom", "args": {"signals": [{"name": MEMORY_AVAILABLE}]}}
        ]
    return {
        "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
        "kind": "SchedulingProfile",
        "metadata": {"name": "default", "generation": 1},
        "spec": spec,
    }


def _scenario(web_memory: int, headroom: bool = False) -> tuple[Scenario, NodeUsageStore]:
    """Node n1: 10Gi, 2Gi available at the sample, which covers `old` (512Mi) and not `new`
    (256Mi, bound since); eviction threshold 1Gi."""
    scenario = Scenario()
    scenario.nodes = [Node("n1", allocatable={"cpu": 4000, "memory": 10 * GI, "pods": 110})]
    old, new = _pod("old", 512 * MI, "n1"), _pod("new", 256 * MI, "n1")
    scenario.pods = [old, new, _pod("web", web_memory)]
    scenario.profiles = [_profile(headroom)]
    store = NodeUsageStore()
    stats = NodeStats(memory=MemoryStats(2 * GI, 8 * GI), source="NodeMetrics n1")
    store.set("n1", NodeUsage.of(stats, ONE_GI_HARD, [old]))
    return scenario, store


def test_a_placement_that_pushes_its_node_below_a_threshold_is_reported() -> None:
    scenario, store = _scenario(GI)
    found = recompute(scenario, "default", "web", node_usage=store)
    assert (found.state, found.node) == (SCHEDULED, "n1")
    assert found.placement is not None
    [node] = found.placement["nodes"]
    assert (node["node"], node["role"], node["usageSource"]) == ("n1", CHOSEN, "NodeMetrics n1")
    assert node["thresholdSource"] == ONE_GI_HARD.source
    [check] = node["checks"]
    # 2Gi available, less new's 256Mi the sample does not show: 1792Mi; less web's 1Gi: 768Mi
    assert (check["signal"], check["availableBefore"], check["availableAfter"]) == (
        MEMORY_AVAILABLE,
        1792 * MI,
        768 * MI,
    )
    assert (check["threshold"], check["crosses"], check["shortBy"]) == (GI, True, 256 * MI)
    assert found.placement["crosses"] is True
    text = format_explanation(found)
    assert "Headroom: placed on n1 (usage: NodeMetrics n1; thresholds: " in text
    assert (
        "would push memory.available on n1 below its eviction threshold (768Mi left < 1Gi): 256Mi short"
        in text
    )
    assert "EvictionHeadroom" not in text  # not in the profile


def test_a_placement_that_leaves_room_says_so_with_eviction_headroom_reasons() -> None:
    scenario, store = _scenario(512 * MI, headroom=True)
    found = recompute(scenario, "default", "web", node_usage=store)
    assert found.placement is not None
    [node] = found.placement["nodes"]
    [check] = node["checks"]
    assert (check["availableAfter"], check["crosses"], check["shortBy"]) == (1280 * MI, False, 0)
    assert found.placement["crosses"] is False
    # (2Gi - 512Mi - 256Mi - 1Gi) / (10Gi - 1Gi) of room: 2
    assert node["evictionHeadroom"] == [
        f"memory.available: {2 * GI} available, eviction threshold {GI}: score 2 (weight 1)"
    ]
    text = format_explanation(found)
    assert "would leave memory.available on n1 above its eviction threshold (1280Mi left >= 1Gi)" in text
    assert "EvictionHeadroom: memory.available:" in text


def test_no_usage_data_no_placement_section_unless_eviction_headroom_scores() -> None:
    scenario, _ = _scenario(GI)
    assert recompute(scenario, "default", "web").placement is None
    scenario, _ = _scenario(GI, headroom=True)
    found = recompute(scenario, "default", "web")
    assert found.placement is not None
    [node] = found.placement["nodes"]
    assert node["usage"] is False
    assert "checks" not in node
    text = format_explanation(found)
    assert "no usage data for node n1" in text
    assert "EvictionHeadroom: memory.available: no usage data: neutral score 50" in text


def test_which_nodes_are_checked() -> None:
    scheduled = Explanation("ns", "p", "x", SCHEDULED, node="n1", scores=(NodeScore("n1", 9, {}),))
    assert placement_targets(scheduled, "") == [("n1", CHOSEN)]
    pending = Explanation("ns", "p", "x", PENDING, scores=(NodeScore("a", 9, {}), NodeScore("b", 7, {})))
    assert placement_targets(pending, "") == [("a", CONSIDERED), ("b", CONSIDERED)]
    assert placement_targets(pending, "n2") == [("n2", NOMINATED)]
    turned_down = Explanation("ns", "p", "x", PENDING, node="a", scores=(NodeScore("a", 9, {}),))
    assert placement_targets(turned_down, "n2") == [("n2", NOMINATED), ("a", CHOSEN)]
    assert placement_targets(Explanation("ns", "p", "x", PENDING), "") == []


def test_the_operator_adds_the_placement_check_to_its_answer() -> None:
    recorder = DiagnosisRecorder()
    recorded = Explanation("shop", "web", "default-scheduler", SCHEDULED, node="n1")
    recorder._scheduled.put("shop/web", recorded)
    scenario, store = _scenario(GI)
    checked = recompute(scenario, "default", "web", node_usage=store).placement
    assert checked is not None
    asked: list[Explanation] = []

    def placement(explanation: Explanation) -> dict[str, Any]:
        asked.append(explanation)
        return dict(checked)

    async def scenario_() -> dict[str, Any]:
        app = make_app(lambda: True, recorder, None, None, placement)
        async with TestClient(TestServer(app)) as client:
            answer = await client.get("/debug/explain/shop/web")
            assert answer.status == 200
            body: dict[str, Any] = await answer.json()
            return body

    body = asyncio.run(scenario_())
    assert asked == [recorded]
    assert body["placementPressure"] == checked
    assert Explanation.from_json(body).placement == checked
