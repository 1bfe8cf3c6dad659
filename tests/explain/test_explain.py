"""explain: the table, the HTTP adapter, the recompute fallback, and kube-scheduler's metrics."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, generate_latest

from policy_scheduler.explain.command import parse_target
from policy_scheduler.explain.format import format_explanation
from policy_scheduler.explain.recompute import recompute
from policy_scheduler.kube.serving.server import make_app
from policy_scheduler.observability import metrics
from policy_scheduler.observability.scheduler_metrics import MetricsObserver, attempts_label, register_engine
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.diagnosis_recorder import (
    PENDING,
    SCHEDULED,
    DiagnosisRecorder,
    Explanation,
    NodeScore,
    Observers,
    Rejection,
)
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Container, Node, Pod, Taint
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.simulate.scenario import Scenario

PENDING_EXPLANATION = Explanation(
    namespace="shop",
    name="web",
    profile="default-scheduler",
    state=PENDING,
    reason="Unschedulable",
    message="0/10 nodes are available: ...",
    num_nodes=10,
    rejections=(
        Rejection("NodeAffinity", "node(s) didn't match Pod's node affinity/selector", 4),
        Rejection("NodeResourcesFit", "Insufficient cpu", 3),
        Rejection("TaintToleration", "node(s) had untolerated taint(s)", 3),
    ),
)
SCHEDULED_EXPLANATION = Explanation(
    namespace="shop",
    name="api",
    profile="default-scheduler",
    state=SCHEDULED,
    num_nodes=3,
    node="n1",
    evaluated_nodes=3,
    feasible_nodes=3,
    scores=(
        NodeScore("n1", 190, {"NodeResourcesFit": 90, "TaintToleration": 100}),
        NodeScore("n2", 140, {"NodeResourcesFit": 40, "TaintToleration": 100}),
    ),
)


def test_pending_table_lists_every_reason_with_its_node_count() -> None:
    text = format_explanation(PENDING_EXPLANATION, note="answered by test")
    assert "State:    pending (Unschedulable)" in text
    assert "Note:     answered by test" in text
    rows = [line.split() for line in text.splitlines()]
    assert [
        "4/10",
        "NodeAffinity",
        "node(s)",
        "didn't",
        "match",
        "Pod's",
        "node",
        "affinity/selector",
    ] in rows
    assert ["3/10", "NodeResourcesFit", "Insufficient", "cpu"] in rows
    assert ["3/10", "TaintToleration", "node(s)", "had", "untolerated", "taint(s)"] in rows


def test_scheduled_table_compares_the_winner_with_the_runner_up() -> None:
    text = format_explanation(SCHEDULED_EXPLANATION)
    assert "State:    scheduled to n1" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["PLUGIN", "n1", "(chosen)", "n2"] in rows
    assert ["NodeResourcesFit", "90", "40"] in rows
    assert ["TOTAL", "190", "140"] in rows
    assert "n1 won by 50 over n2" in text


def test_target_parsing() -> None:
    assert parse_target("shop/web", "default") == ("shop", "web")
    assert parse_target("web", "shop") == ("shop", "web")


def test_http_adapter_serves_the_recorder_as_json() -> None:
    recorder = DiagnosisRecorder()
    recorder._pending.put("shop/web", PENDING_EXPLANATION)

    async def scenario() -> tuple[int, dict[str, object], int]:
        app = make_app(lambda: True, recorder, None)
        async with TestClient(TestServer(app)) as client:
            found = await client.get("/debug/explain/shop/web")
            missing = await client.get("/debug/explain/shop/nope")
            return found.status, await found.json(), missing.status

    status, body, missing = asyncio.run(scenario())
    assert status == 200
    assert missing == 404
    assert Explanation.from_json(body) == PENDING_EXPLANATION


STANDING = {
    "node": "n1",
    "conditions": ["MemoryPressure"],
    "underPressure": ["memory.available"],
    "thresholdSource": "kubelet defaults",
    "usageSource": "metrics.k8s.io",
    "signal": "memory.available",
    "evicting": True,
    "position": 2,
    "of": 3,
    "victim": False,
    "neverEvicted": None,
    "frees": 1 << 30,
    "freesText": "1Gi",
    "usageAboveRequests": 0,
    "reclaimNeeded": 50 << 20,
    "reclaimNeededText": "50Mi",
    "ahead": ["shop/batch"],
    "relief": "relieve",
}


def test_the_operator_adds_where_a_pod_stands_under_pressure() -> None:
    """A recorded explanation gets the standing; a pod with no record, only its standing."""
    recorder = DiagnosisRecorder()
    recorder._pending.put("shop/api", SCHEDULED_EXPLANATION)

    async def standing(namespace: str, name: str) -> dict[str, object] | None:
        return STANDING if name in ("api", "old") else None

    async def scenario() -> list[tuple[int, dict[str, object]]]:
        app = make_app(lambda: True, recorder, None, standing)
        async with TestClient(TestServer(app)) as client:
            answers = [await client.get(f"/debug/explain/shop/{name}") for name in ("api", "old", "nope")]
            return [(a.status, await a.json()) for a in answers]

    (recorded, body), (old, running), (missing, _) = asyncio.run(scenario())
    assert (recorded, old, missing) == (200, 200, 404)
    assert Explanation.from_json(body) == dataclasses.replace(SCHEDULED_EXPLANATION, pressure=STANDING)
    assert (running["state"], running["node"], running["pressure"]) == ("running", "n1", STANDING)
    text = format_explanation(Explanation.from_json(running))
    assert "State:    running on n1" in text
    assert "2 of 3 in the order the kubelet evicts pods for memory.available" in text
    assert "not among the pods the kubelet would evict now" in text
    assert "ahead of it: shop/batch" in text
    assert "relieved under EvictionPolicy relieve" in text


def _cluster_scenario() -> Scenario:
    scenario = Scenario()
    scenario.nodes = [
        Node("small", allocatable={"cpu": 100, "memory": 1 << 34, "pods": 110}),
        Node(
            "tainted",
            taints=(Taint("dedicated", "gpu"),),
            allocatable={"cpu": 4000, "memory": 1 << 34, "pods": 110},
        ),
        Node("full", allocatable={"cpu": 1000, "memory": 1 << 34, "pods": 110}),
    ]
    hog = Pod("hog", uid="hog", node_name="full", containers=(Container("c", requests={"cpu": 900}),))
    web = Pod("web", uid="web", containers=(Container("c", requests={"cpu": 500}),))
    scenario.pods = [hog, web]
    scenario.profiles = [
        {
            "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
            "kind": "SchedulingProfile",
            "metadata": {"name": "default", "generation": 1},
            "spec": {"schedulerName": "default-scheduler"},
        }
    ]
    return scenario


def test_recompute_runs_one_cycle_of_the_core_on_the_snapshot() -> None:
    found = recompute(_cluster_scenario(), "default", "web")
    assert found.source == "recomputed"
    assert found.state == PENDING
    # "full" is short of cpu because the bound pod's requests were placed.
    assert set(found.rejections) == {
        Rejection("NodeResourcesFit", "Insufficient cpu", 2),
        Rejection("TaintToleration", "node(s) had untolerated taint(s)", 1),
    }


def test_kube_scheduler_metrics_after_a_burst() -> None:
    class Binder:
        engine: Engine

        async def bind(self, pod: Pod, node_name: str) -> None:
            pending = self.engine.unassigned[pod.key]
            self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))

    observer = MetricsObserver()
    binder = Binder()
    engine = Engine(binder=binder, observer=Observers(DiagnosisRecorder(), observer), plugin_metrics=observer)
    binder.engine = engine
    engine.set_profiles([resolve_profile(ProfileConfig(scheduler_name="burst"), implemented_plugin_names())])
    for i in range(4):
        engine.node_added(Node(f"n{i}", allocatable={"cpu": 1000, "memory": 1 << 34, "pods": 110}))
    for i in range(30):
        engine.pod_added(
            Pod(
                f"p{i}",
                uid=f"p{i}",
                scheduler_name="burst",
                containers=(Container("c", requests={"cpu": 300}),),
            )
        )

    async def run() -> None:
        while engine.schedule_next():
            await engine.scheduler.drain_binding()

    before = metrics.REGISTRY.get_sample_value("scheduler_pod_scheduling_attempts_count") or 0.0
    attempts_before = metrics.REGISTRY.get_sample_value("scheduler_preemption_attempts_total") or 0.0
    asyncio.run(run())
    value = metrics.REGISTRY.get_sample_value
    assert value("scheduler_pod_scheduling_attempts_count") == before + 12  # 4 nodes x 3 pods fit
    assert (value("scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "1"}) or 0) >= 12
    # DefaultPreemption ran for each of the 18 pods that did not fit.
    assert (value("scheduler_preemption_attempts_total") or 0) - attempts_before == 18
    filter_evals = value(
        "scheduler_plugin_evaluation_total",
        {"plugin": "NodeResourcesFit", "extension_point": "Filter", "profile": "burst"},
    )
    assert filter_evals is not None
    assert filter_evals >= 30 * 4 - 12

    registry = CollectorRegistry()
    register_engine(engine, registry)
    assert registry.get_sample_value("scheduler_cache_size", {"type": "nodes"}) == 4
    assert registry.get_sample_value("scheduler_cache_size", {"type": "pods"}) == 12
    assert (
        registry.get_sample_value(
            "scheduler_unschedulable_pods", {"plugin": "NodeResourcesFit", "profile": "burst"}
        )
        == 18
    )
    assert (
        registry.get_sample_value(
            "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "UnscheduledPodAdd"}
        )
        == 30
    )
    text = generate_latest(metrics.REGISTRY).decode()
    # No pod contents in metrics: names of pods never appear as label values.
    assert 'p1"' not in text
    assert "p1," not in text


def test_attempts_label_is_capped_like_upstream() -> None:
    assert attempts_label(1) == "1"
    assert attempts_label(15) == "15+"


def test_json_round_trip_is_stable() -> None:
    for explanation in (PENDING_EXPLANATION, SCHEDULED_EXPLANATION):
        assert Explanation.from_json(json.loads(json.dumps(explanation.to_json()))) == explanation
