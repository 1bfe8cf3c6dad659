"""The standard component series on the operator's registry, as kube-scheduler and client-go
expose them: the process and Python runtime, the REST client, work queues."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from yarl import URL

from policy_scheduler.controllers.workqueue import WorkQueue
from policy_scheduler.kube.client import RestClientMetrics
from policy_scheduler.observability.event_metrics import TimedEvents
from policy_scheduler.observability.metrics import REGISTRY
from policy_scheduler.observability.scheduler_metrics import register_engine
from policy_scheduler.observability.workqueue_metrics import WorkQueueMetrics, register_queues
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.queue.hints import HintEntry, Strategy, is_pod_worth_requeuing
from tests.fakeclock import FakeClock


def samples(registry: CollectorRegistry = REGISTRY) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def names() -> set[str]:
    return {name for name, _ in samples()}


def test_process_and_python_runtime_series_are_on_the_operators_registry() -> None:
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} <= names()
    assert {"python_gc_collections_total", "python_info"} <= names()


def test_rest_client_series_carry_client_gos_labels() -> None:
    before = samples()
    recorder = RestClientMetrics(URL("https://127.0.0.1:6443"))
    recorder.observe("POST", 201, 0.02)
    recorder.observe("GET", None, 0.3)  # no answer: client-go's "<error>"
    after = samples()

    def delta(name: str, **labels: str) -> float:
        key = (name, frozenset(labels.items()))
        return after.get(key, 0.0) - before.get(key, 0.0)

    host = "127.0.0.1:6443"
    assert delta("rest_client_requests_total", code="201", method="POST", host=host) == 1
    assert delta("rest_client_requests_total", code="<error>", method="GET", host=host) == 1
    assert delta("rest_client_request_duration_seconds_bucket", verb="POST", host=host, le="0.025") == 1
    assert delta("rest_client_request_duration_seconds_bucket", verb="POST", host=host, le="0.005") == 0
    assert delta("rest_client_request_duration_seconds_count", verb="GET", host=host) == 1


def test_work_queue_series_follow_a_key_through_the_queue() -> None:
    clock = FakeClock()
    name = "test-queue"
    queue: WorkQueue[str] = WorkQueue(
        resync_seconds=300.0, clock=clock, name=name, observer=WorkQueueMetrics(name), rng=lambda: 0.0
    )
    unregister = register_queues(lambda: [queue])
    try:
        queue.add("a")
        queue.add("a")  # already queued: not another add
        queue.add("b")
        clock.advance(2.0)
        assert queue.poll() == "a"
        clock.advance(3.0)
        now = samples()

        def value(metric: str) -> float:
            return now[(metric, frozenset({("name", name)}))]

        assert value("workqueue_adds_total") == 2
        assert value("workqueue_depth") == 1
        assert value("workqueue_longest_running_processor_seconds") == 3.0
        assert value("workqueue_unfinished_work_seconds") == 3.0
        assert value("workqueue_queue_duration_seconds_count") == 1
        assert value("workqueue_queue_duration_seconds_sum") == 2.0
        queue.retry("a")
        queue.done("a")
        now = samples()
        assert value("workqueue_retries_total") == 1
        assert value("workqueue_work_duration_seconds_sum") == 3.0
        assert value("workqueue_longest_running_processor_seconds") == 0.0
    finally:
        unregister()
    assert ("workqueue_depth", frozenset({("name", name)})) not in samples()


def test_event_handling_is_timed_by_upstreams_event_labels() -> None:
    handled: list[str] = []

    class Engine:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: handled.append(name)

    ticks = iter(range(100))
    events = TimedEvents(Engine(), clock=lambda: float(next(ticks)))
    before = samples()
    events.pod_added(Pod("p", uid="p"))
    events.pod_updated(Pod("p", uid="p", node_name="n1"), Pod("p", uid="p", node_name="n1"))
    events.timed_pod_deleted(lambda pod: handled.append("deleted"))(Pod("p", uid="p", node_name="n1"))
    events.node_added(Node("n1"))
    events.dra_changed(Resource.RESOURCE_SLICE, None, object())
    after = samples()
    assert handled == ["pod_added", "pod_updated", "deleted", "node_added", "dra_changed"]

    def count(label: str) -> float:
        key = ("scheduler_event_handling_duration_seconds_count", frozenset({("event", label)}))
        return after.get(key, 0.0) - before.get(key, 0.0)

    for label in (
        "UnscheduledPodAdd",
        "AssignedPodUpdate",
        "AssignedPodDelete",
        "NodeAdd",
        "resource.k8s.io/ResourceSliceAdd",
    ):
        assert count(label) == 1, label


def test_queueing_hints_are_timed_by_plugin_event_and_hint() -> None:
    ran: list[tuple[str, str, str]] = []

    def skip(pod: Pod, old: Any, new: Any) -> QueueingHint:
        return QueueingHint.SKIP

    def broken(pod: Pod, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("hint bug")

    node_add = ClusterEvent(Resource.NODE, Action.ADD)
    info = QueuedPodInfo(Pod("p", uid="p"), 0.0, unschedulable_plugins={"A", "B"})
    entries = [HintEntry(node_add, "A", skip), HintEntry(node_add, "B", broken)]
    strategy = is_pod_worth_requeuing(
        info,
        node_add,
        None,
        Node("n1"),
        entries,
        lambda plugin, event, hint, _s: ran.append((plugin, event, hint)),
    )
    assert strategy == Strategy.AFTER_BACKOFF  # the failing hint queues, as upstream
    assert ran == [("A", "NodeAdd", "QueueSkip"), ("B", "NodeAdd", "Error")]


def test_inflight_events_count_popped_pods_and_the_events_recorded_meanwhile() -> None:
    engine = Engine()
    registry = CollectorRegistry()
    register_engine(engine, registry)
    active = engine.queue.active
    active.start_flight(QueuedPodInfo(Pod("p", uid="p"), 0.0))
    active.add_event_if_any_in_flight(None, Node("n1"), ClusterEvent(Resource.NODE, Action.ADD))
    active.add_event_if_any_in_flight(None, Node("n2"), ClusterEvent(Resource.NODE, Action.ADD))

    def inflight() -> dict[str, float]:
        return {
            dict(labels)["event"]: value
            for (name, labels), value in samples(registry).items()
            if name == "scheduler_inflight_events"
        }

    assert inflight() == {"PodPopped": 1, "NodeAdd": 2}
    active.done("p")
    assert inflight() == {}
