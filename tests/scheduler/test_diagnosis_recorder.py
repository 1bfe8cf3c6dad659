"""DiagnosisRecorder: what `explain` answers, recorded from real scheduling cycles, in bounded memory."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.diagnosis_recorder import (
    PENDING,
    SCHEDULED,
    SKIPPED_BY_PREFILTER,
    DiagnosisRecorder,
    Explanation,
    Rejection,
    pending_summary,
    rejection_counts,
)
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, fit_error_message
from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Taint,
)
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile

AFFINITY = "node(s) didn't match Pod's node affinity/selector"


class Binder:
    def __init__(self) -> None:
        self.engine: Engine | None = None

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


def engine_with(recorder: DiagnosisRecorder, nodes: list[Node]) -> Engine:
    binder = Binder()
    engine = Engine(binder=binder, seed=3, observer=recorder)
    binder.engine = engine
    engine.set_profiles(
        [resolve_profile(ProfileConfig(scheduler_name="default-scheduler"), implemented_plugin_names())]
    )
    for node in nodes:
        engine.node_added(node)
    return engine


def run_all(engine: Engine) -> None:
    async def loop() -> None:
        while engine.schedule_next():
            await engine.scheduler.drain_binding()

    asyncio.run(loop())


def node(name: str, cpu: int = 4000, **kw: Any) -> Node:
    return Node(name, allocatable={"cpu": cpu, "memory": 1 << 34, "pods": 110}, **kw)


def pod(name: str, cpu: int = 500, **kw: Any) -> Pod:
    return Pod(name, uid=name, containers=(Container("c", requests={"cpu": cpu}),), **kw)


def mixed_cluster() -> list[Node]:
    """3 nodes short of cpu, 3 tainted, 4 in the wrong zone: each rejects for its own reason."""
    small = [node(f"small-{i}", cpu=100, labels={"zone": "a"}) for i in range(3)]
    tainted = [
        node(f"tainted-{i}", labels={"zone": "a"}, taints=(Taint("dedicated", "gpu"),)) for i in range(3)
    ]
    elsewhere = [node(f"b-{i}", labels={"zone": "b"}) for i in range(4)]
    return small + tainted + elsewhere


def test_pending_pod_counts_every_reason_by_plugin() -> None:
    recorder = DiagnosisRecorder()
    engine = engine_with(recorder, mixed_cluster())
    engine.pod_added(pod("web", node_selector={"zone": "a"}))
    run_all(engine)
    found = recorder.get("default", "web")
    assert found is not None
    assert found.state == PENDING
    assert found.num_nodes == 10
    assert set(found.rejections) == {
        Rejection("NodeAffinity", AFFINITY, 4),
        Rejection("NodeResourcesFit", "Insufficient cpu", 3),
        Rejection("TaintToleration", "node(s) had untolerated taint(s)", 3),
    }
    assert found.rejections[0].nodes == 4  # most nodes first
    assert found.message.startswith("0/10 nodes are available: 3 Insufficient cpu, 3 node(s) had untolerated")
    summary = pending_summary(found)
    assert summary.startswith(f"4/10 nodes: {AFFINITY}; 3/10: ")


def test_nodes_skipped_by_a_prefilter_result_are_counted() -> None:
    recorder = DiagnosisRecorder()
    engine = engine_with(recorder, [node(f"n{i}", cpu=100) for i in range(6)])
    # matchFields metadata.name narrows the search to one node (NodeAffinity's PreFilterResult).
    term = NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n0",)),))
    engine.pod_added(pod("pinned", affinity=Affinity(node_affinity=NodeAffinity(required=(term,)))))
    run_all(engine)
    found = recorder.get("default", "pinned")
    assert found is not None
    assert set(found.rejections) == {
        Rejection("NodeResourcesFit", "Insufficient cpu", 1),
        Rejection(SKIPPED_BY_PREFILTER, "node(s) didn't satisfy plugin(s) [NodeAffinity]", 5),
    }


def test_scheduled_pod_names_its_node_and_scores_against_the_runner_up() -> None:
    recorder = DiagnosisRecorder()
    # n-free is empty; the others carry load, so the resource scores prefer n-free.
    nodes = [node("n-free"), node("n-busy-0"), node("n-busy-1")]
    engine = engine_with(recorder, nodes)
    for i, name in enumerate(["n-busy-0", "n-busy-1"]):
        engine.pod_added(pod(f"load-{i}", cpu=3000, node_name=name))
    engine.pod_added(pod("api"))
    run_all(engine)
    found = recorder.get("default", "api")
    assert found is not None
    assert found.state == SCHEDULED
    assert found.node == "n-free"
    assert found.feasible_nodes == 3
    assert found.evaluated_nodes == 3
    best, runner_up = found.scores[0], found.scores[1]
    assert best.node == "n-free"
    assert best.total > runner_up.total
    assert best.by_plugin["NodeResourcesFit"] > runner_up.by_plugin["NodeResourcesFit"]
    assert sum(best.by_plugin.values()) == best.total
    assert Explanation.from_json(found.to_json()) == found


def test_a_pod_scheduled_after_pending_moves_to_scheduled() -> None:
    recorder = DiagnosisRecorder()
    engine = engine_with(recorder, [node("tiny", cpu=100)])
    engine.pod_added(pod("grow"))
    run_all(engine)
    first = recorder.get("default", "grow")
    assert first is not None
    assert first.state == PENDING
    engine.node_added(node("big"))
    engine.queue.activate([engine.unassigned["default/grow"]])
    run_all(engine)
    found = recorder.get("default", "grow")
    assert found is not None
    assert found.state == SCHEDULED
    assert found.node == "big"
    assert len(recorder) == 1


def test_memory_is_bounded_by_the_lru_caps() -> None:
    recorder = DiagnosisRecorder(max_pending=5, max_scheduled=3)
    engine = engine_with(recorder, [node("tiny", cpu=100)])
    for i in range(20):
        engine.pod_added(pod(f"p{i}"))
    run_all(engine)
    assert len(recorder) == 5
    assert recorder.get("default", "p19") is not None
    assert recorder.get("default", "p0") is None


def test_rejection_rows_are_capped_and_the_rest_summed() -> None:
    diagnosis = Diagnosis(
        node_to_status=NodeToStatus(
            {
                f"n{i}": Status(
                    Code.UNSCHEDULABLE, (f"node(s) had untolerated taint {{k{i}: v}}",), "TaintToleration"
                )
                for i in range(50)
            }
        )
    )
    rows = rejection_counts(50, diagnosis, cap=10)
    assert len(rows) == 11
    assert rows[-1].nodes == 40
    assert sum(r.nodes for r in rows) == 50


def test_counts_agree_with_the_fit_error_message_on_multi_reason_nodes() -> None:
    both = Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"), "NodeResourcesFit")
    diagnosis = Diagnosis(node_to_status=NodeToStatus({"a": both, "b": both}))
    rows = rejection_counts(2, diagnosis)
    assert {(r.reason, r.nodes) for r in rows} == {("Insufficient cpu", 2), ("Insufficient memory", 2)}
    assert (
        fit_error_message(2, diagnosis)
        == "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
    )


def test_summary_is_capped() -> None:
    rows = tuple(Rejection("P", f"reason number {i} " + "x" * 40, 1) for i in range(30))
    text = pending_summary(Explanation("ns", "p", "s", PENDING, num_nodes=30, rejections=rows), cap=200)
    assert len(text) == 200
    assert text.endswith("...")
