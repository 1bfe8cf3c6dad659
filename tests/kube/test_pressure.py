"""Node pressure in the operator with a fake API: the monitor's samples and the kubelet model
kept between polls, and relief's evictions (order, budgets, rate limits, dry run, fail closed,
leader only). e2e/test_node_pressure.py runs it on the real control plane."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from policy_scheduler.controllers.eviction_policy_store import compile_policy
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.api import EvictionApi, Outcome
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.fence import Fence
from policy_scheduler.kube.pressure.monitor import PressureMonitor
from policy_scheduler.kube.pressure.options import PressureOptions
from policy_scheduler.kube.pressure.relief import Reliever
from policy_scheduler.kube.pressure.sources import (
    NODE_METRICS,
    SourceUnavailable,
    UsageApi,
    node_proxy_path,
    pod_metrics_path,
)
from policy_scheduler.kube.retry import Answer, RetryPolicy
from policy_scheduler.policy.eviction_settings import EvictionRecord, EvictionSettings
from policy_scheduler.scheduler.model import Node, OwnerReference, Pod
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore
from policy_scheduler.scheduler.pressure.view import NodePressureView
from tests.builders import make_node, make_pod
from tests.fence import SwitchFence
from tests.no_api import NO_API

GI, MI = 2**30, 2**20
T0 = 1_800_000_000.0
PDB_429 = json.dumps(
    {
        "kind": "Status",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "details": {"causes": [{"reason": "DisruptionBudget"}]},
    }
).encode()


def stamp(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Cluster:
    """The API as the monitor and relief see it: metrics, kubelets, evictions."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    node_usage: dict[str, int] = field(default_factory=dict)  # working set by node
    pod_usage: dict[str, int] = field(default_factory=dict)  # working set by pod name
    metrics_at: float = T0
    metrics_status: int = 200
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    configz: dict[str, dict[str, Any]] = field(default_factory=dict)
    eviction_answers: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # by pod name
    evictions: list[str] = field(default_factory=list)
    dry_runs: list[str] = field(default_factory=list)  # evictions asked with dryRun=All
    reads: list[str] = field(default_factory=list)

    # ---- ClusterView --------------------------------------------------------------------------

    def running_pods(self, node: str) -> Sequence[Pod]:
        return [p for p in self.pods if p.node_name == node]

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        return next((p for p in self.pods if (p.namespace, p.name) == (namespace, name)), None)

    def node_list(self) -> Sequence[Node]:
        return self.nodes

    # ---- the API ------------------------------------------------------------------------------

    async def get(self, path: str, query: Mapping[str, Any]) -> Answer:
        self.reads.append(path)
        if path == NODE_METRICS:
            if self.metrics_status != 200:
                return Answer(self.metrics_status, b'{"kind":"Status","message":"service unavailable"}')
            items = [
                {"metadata": {"name": n}, "timestamp": stamp(self.metrics_at), "usage": {"memory": str(ws)}}
                for n, ws in self.node_usage.items()
            ]
            return Answer(200, json.dumps({"kind": "NodeMetricsList", "items": items}).encode())
        for pod in self.pods:
            if path == pod_metrics_path(pod.namespace, pod.name):
                if pod.name not in self.pod_usage:
                    break
                body = {
                    "metadata": {"name": pod.name, "namespace": pod.namespace},
                    "timestamp": stamp(self.metrics_at),
                    "containers": [{"name": "c", "usage": {"memory": str(self.pod_usage[pod.name])}}],
                }
                return Answer(200, json.dumps(body).encode())
        for node, summary in self.summaries.items():
            if path == node_proxy_path(node, "stats/summary"):
                return Answer(200, json.dumps(summary).encode())
        for node, config in self.configz.items():
            if path == node_proxy_path(node, "configz"):
                return Answer(200, json.dumps({"kubeletconfig": config}).encode())
        if "/proxy/" in path:
            return Answer(403, b'{"kind":"Status","message":"forbidden"}')
        if path.startswith("/apis/metrics.k8s.io"):
            return Answer(404, b'{"kind":"Status","reason":"NotFound","details":{"name":"x","kind":"pods"}}')
        name = path.rsplit("/", 1)[1]
        found = next((p for p in self.pods if p.name == name), None)
        if found is None:
            return Answer(404, b"{}")
        return Answer(200, json.dumps({"metadata": {"uid": found.uid}, "spec": {}}).encode())

    async def call(
        self,
        api: Any,
        method: str,
        path: str,
        *,
        fence: Fence | None = None,
        query: dict[str, str] | None = None,
        **_: Any,
    ) -> Answer:
        if fence is not None:
            fence.check()
        if method == "GET":
            return await self.get(path, {})
        name = path.split("/pods/", 1)[1].split("/", 1)[0]
        status, body = self.eviction_answers.get(name, (201, b"{}"))
        dry_run = (query or {}).get("dryRun") == "All"
        if dry_run:
            self.dry_runs.append(name)
        if status == 201 and not dry_run:
            self.evictions.append(name)
        return Answer(status, body)


class Policies:
    def __init__(self, *settings: EvictionSettings) -> None:
        self.settings = list(settings)
        self.records: list[EvictionRecord] = []
        self.status: dict[str, dict[str, Any] | None] = {}

    def relieving(self) -> list[EvictionSettings]:
        return [s for s in self.settings if s.relief is not None]

    def record(self, policy: str | None, entry: EvictionRecord) -> None:
        self.records.append(entry)

    def relief_status(self, policy: str, status: dict[str, Any] | None) -> None:
        self.status[policy] = status

    def results(self) -> list[tuple[str, str]]:
        return [(r.name, r.result) for r in self.records]


class Events(EventRecorder):
    def __init__(self) -> None:
        super().__init__(NO_API, instance="test")
        self.said: list[tuple[str, str, str]] = []

    def event(
        self, regarding: Any, type_: str, reason: str, action: str, note: str, *_: Any, **__: Any
    ) -> None:
        self.said.append((regarding.name, reason, note))


class Clock:
    def __init__(self) -> None:
        self.now = T0 + 5

    def __call__(self) -> float:
        return self.now


def policy(name: str = "relief", **relief: Any) -> EvictionSettings:
    spec: dict[str, Any] = {"pressureRelief": {"thresholds": {"memory.available": "2Gi"}, **relief}}
    for key in ("rateLimit", "dryRun", "protected"):
        if key in relief:
            spec[key] = spec["pressureRelief"].pop(key)
    return compile_policy(name, spec)


@dataclass
class Harness:
    cluster: Cluster
    policies: Policies
    fence: SwitchFence
    clock: Clock
    monitor: PressureMonitor
    store: NodeUsageStore
    view: NodePressureView
    events: Events

    async def poll(self, advance: float = 15.0, *, fresh: bool = True) -> None:
        self.clock.now += advance
        if fresh:
            self.cluster.metrics_at = self.clock.now - 5
        await self.monitor.poll()


def harness(*settings: EvictionSettings, kubelet_proxy: bool = False, nodes: int = 2) -> Harness:
    cluster = Cluster(
        nodes=[
            make_node(f"n{i}", allocatable={"memory": 8 * GI}, memory_capacity=8 * GI) for i in range(nodes)
        ]
    )
    policies = Policies(*settings)
    fence, clock, events = SwitchFence(), Clock(), Events()
    store, view = NodeUsageStore(), NodePressureView()
    usage = UsageApi(cluster.get, kubelet_proxy=kubelet_proxy)
    eviction = EvictionApi(NO_API, retry=RetryPolicy(max_attempts=1), call_fn=cluster.call, fence=fence)
    reliever = Reliever(
        eviction, Limiters(), events, policies, view, fence=fence, namespace_labels=lambda: {}, clock=clock
    )

    class View:
        nodes = staticmethod(cluster.node_list)
        running_pods = staticmethod(cluster.running_pods)
        find_pod = staticmethod(cluster.find_pod)

    monitor = PressureMonitor(
        usage,
        View(),
        store,
        view,
        options=PressureOptions(interval=15.0, kubelet_proxy=kubelet_proxy),
        relief=reliever,
        clock=clock,
        monotonic=clock,
    )
    return Harness(cluster, policies, fence, clock, monitor, store, view, events)


def on(
    node: str, name: str, usage: int, *, request: int = 0, priority: int = 0, **fields: Any
) -> tuple[Pod, int]:
    pod = make_pod(name, memory=request or None, node_name=node, priority=priority, **fields)
    return pod, usage


def load(h: Harness, *pods: tuple[Pod, int], node: str = "n0") -> None:
    for pod, usage in pods:
        h.cluster.pods.append(pod)
        h.cluster.pod_usage[pod.name] = usage
    total = sum(u for p, u in pods if p.node_name == node)
    h.cluster.node_usage[node] = total
    h.cluster.node_usage.setdefault("n1", GI)


# ---- the monitor --------------------------------------------------------------------------------


async def test_usage_from_node_metrics_reaches_the_scheduler() -> None:
    h = harness()
    load(h, on("n0", "a", 3 * GI))
    await h.poll()
    usage = h.store.get("n0")
    assert usage is not None
    memory = usage.observations["memory.available"]
    assert (memory.available, memory.capacity) == (5 * GI, 8 * GI)  # capacity - working set
    assert usage.source == "metrics.k8s.io"
    assert usage.time == h.cluster.metrics_at


async def test_a_failed_source_keeps_the_last_sample_to_age() -> None:
    h = harness()
    load(h, on("n0", "a", 3 * GI))
    await h.poll()
    first = h.monitor.records["n0"].time
    h.cluster.metrics_status = 503
    await h.poll()
    record = h.monitor.records["n0"]
    assert record.time == first
    assert record.age(h.clock.now) == pytest.approx(20.0)


async def test_nodes_that_go_are_dropped() -> None:
    h = harness()
    load(h, on("n0", "a", 3 * GI))
    await h.poll()
    assert h.store.get("n1") is not None
    h.cluster.nodes = h.cluster.nodes[:1]
    await h.poll()
    assert (h.store.get("n1"), "n1" in h.monitor.records) == (None, False)


async def test_the_kubelet_state_is_kept_between_polls() -> None:
    """Memory pressure reported for the transition period after the signal recovers."""
    h = harness()
    load(h, on("n0", "a", 8 * GI - 50 * MI))  # 50Mi left < the default 100Mi
    await h.poll()
    assert h.monitor.records["n0"].conditions == ("MemoryPressure",)
    h.cluster.node_usage["n0"] = GI
    await h.poll()
    recovered = h.monitor.records["n0"]
    assert (recovered.under_pressure, recovered.conditions) == ((), ("MemoryPressure",))
    await h.poll(advance=301.0)
    later = h.monitor.records["n0"]
    assert later.conditions == ()


async def test_impossible_usage_leaves_the_node_without_data_and_says_why() -> None:
    h = harness()
    load(h, on("n0", "a", 3 * GI))
    h.cluster.node_usage["n0"] = 9 * GI  # more than the node has
    await h.poll()
    assert h.store.get("n0") is None
    problems = h.monitor.records["n0"].problems
    assert problems == (
        "NodeMetrics n0: usage.memory: 9663676416 is more than the node's memory capacity (8589934592)",
    )


async def test_the_kubelet_proxy_gives_the_summary_and_configz() -> None:
    h = harness(kubelet_proxy=True)
    load(h, on("n0", "a", 3 * GI))
    h.cluster.summaries["n0"] = {
        "node": {
            "nodeName": "n0",
            "fs": {"time": stamp(T0), "availableBytes": 5 * GI, "capacityBytes": 100 * GI},
            "memory": {"time": stamp(T0), "availableBytes": 5 * GI, "workingSetBytes": 3 * GI},
        },
        "pods": [],
    }
    h.cluster.configz["n0"] = {"evictionHard": {"nodefs.available": "10%", "memory.available": "500Mi"}}
    await h.poll()
    n0, n1 = h.monitor.records["n0"], h.monitor.records["n1"]
    assert (n0.config.source, n1.config.source) == ("kubelet /configz", "kubelet defaults")
    assert n0.under_pressure == ("nodefs.available",)  # 5Gi of 100Gi < 10%
    usage = h.store.get("n0")
    assert usage is not None
    assert usage.source == "Summary API"
    assert "nodefs.available" in usage.observations
    assert any("nodes/proxy/stats/summary: forbidden" in p for p in n1.problems)


async def test_a_pod_without_metrics_is_left_out_but_an_unserved_api_is_unavailable() -> None:
    """metrics-server's 404 names the pod (no sample yet, or gone); the API server's 404 for a
    group nobody serves names nothing."""
    answers = {
        pod_metrics_path("a", "new"): Answer(
            404, b'{"kind":"Status","reason":"NotFound","details":{"name":"a/new","kind":"pods"}}'
        ),
        pod_metrics_path("a", "gone"): Answer(
            404, b'{"kind":"Status","reason":"NotFound","details":{"name":"gone","kind":"pods"}}'
        ),
    }

    async def get(path: str, query: Mapping[str, Any]) -> Answer:
        return answers.get(
            path,
            Answer(
                404,
                b'{"kind":"Status","message":"the server could not find the requested resource",'
                b'"reason":"NotFound","details":{}}',
            ),
        )

    usage = UsageApi(get, kubelet_proxy=False)
    assert await usage.pod_metrics([("a", "new"), ("a", "gone")]) == {}
    with pytest.raises(SourceUnavailable, match=r"not served \(HTTP 404\): is metrics-server installed"):
        await usage.pod_metrics([("a", "new"), ("b", "other")])


async def test_a_problem_is_logged_once_while_it_lasts(caplog: pytest.LogCaptureFixture) -> None:
    """Also when relief reads pod usage within the pass (its own problems join the pass's)."""
    h = harness(policy(), kubelet_proxy=True)
    pressed(h)

    def logged() -> int:
        return sum("nodes/proxy/stats/summary" in str(getattr(r, "problem", "")) for r in caplog.records)

    for _ in range(3):
        await h.poll()
    assert h.cluster.evictions == ["hog"]  # relief acted on n0
    assert logged() == 2  # n0's and n1's Summary, forbidden: once each
    h.cluster.summaries = {n: {"node": {"nodeName": n}, "pods": []} for n in ("n0", "n1")}
    await h.poll()
    h.cluster.summaries = {}
    await h.poll()
    assert logged() == 4


# ---- relief ---------------------------------------------------------------------------------------


def pressed(h: Harness) -> None:
    """n0: 6.5Gi used of 8Gi, 1.5Gi left (< 2Gi): 512Mi to free."""
    load(
        h,
        on("n0", "hog", 3 * GI),  # above its (no) request by 3Gi: first
        on("n0", "web", 2 * GI),
        on("n0", "steady", GI + GI // 2, request=2 * GI),  # within its request: last
    )


async def test_relief_evicts_the_first_pod_of_the_kubelets_order() -> None:
    h = harness(policy())
    pressed(h)
    await h.poll()
    assert h.cluster.evictions == ["hog"]  # 3Gi frees the 512Mi needed: one eviction
    assert h.policies.results() == [("hog", "Evicted")]
    record = h.policies.records[0]
    assert (record.reason, record.signal, record.node) == ("NodePressure", "memory.available", "n0")
    assert "1.5Gi available" in record.message
    mark = h.view.get("n0")
    assert mark is not None
    assert mark.conditions == ("MemoryPressure",)
    assert h.view.get("n1") is None
    assert h.events.said[0][1] == "NodePressureRelief"
    status = h.policies.status["relief"]
    assert status is not None
    assert [n["name"] for n in status["nodes"]] == ["n0"]
    assert status["nodesWatched"] == 2


async def test_an_evicted_pod_still_in_the_sample_is_not_freed_twice() -> None:
    h = harness(policy())
    pressed(h)
    await h.poll()
    await h.poll()  # the hog is still running and still in the sample
    assert h.cluster.evictions == ["hog"]


async def test_a_budget_skips_the_pod_and_relief_goes_on() -> None:
    """A refused eviction evicted nothing: it does not count against the per-node limit."""
    h = harness(policy(rateLimit={"evictionsPerMinute": 60, "perNodePerMinute": 1}))
    pressed(h)
    h.cluster.eviction_answers["hog"] = (429, PDB_429)
    await h.poll()
    assert h.policies.results() == [("hog", "BlockedByBudget"), ("web", "Evicted")]
    assert ("hog", "NodePressureReliefBlocked") in [(n, r) for n, r, _ in h.events.said]


async def test_the_rate_limit_per_node_holds_relief_back() -> None:
    h = harness(policy(rateLimit={"evictionsPerMinute": 60, "perNodePerMinute": 1}))
    pressed(h)
    await h.poll()
    h.cluster.pods = [p for p in h.cluster.pods if p.name != "hog"]
    h.cluster.node_usage["n0"] = 7 * GI  # worse: 1Gi left
    await h.poll()
    await h.poll()  # still within the minute: reported once
    assert h.cluster.evictions == ["hog"]
    assert h.policies.results() == [("hog", "Evicted"), ("web", "RateLimited")]
    await h.poll(advance=60.0)
    assert h.cluster.evictions == ["hog", "web"]


async def test_a_dry_run_records_and_evicts_nothing() -> None:
    h = harness(policy(dryRun=True))
    pressed(h)
    await h.poll()
    await h.poll()
    assert h.cluster.evictions == []
    assert h.cluster.dry_runs == ["hog", "hog"]  # the Eviction API asked with dryRun=All, each pass
    assert h.policies.results() == [("hog", "WouldEvict")]  # reported once in a while


async def test_a_dry_run_skips_a_pod_its_budget_protects_as_a_real_run_does() -> None:
    h = harness(policy(dryRun=True))
    pressed(h)
    h.cluster.eviction_answers["hog"] = (429, PDB_429)
    await h.poll()
    assert h.cluster.evictions == []
    assert h.cluster.dry_runs == ["hog", "web"]
    assert h.policies.results() == [("hog", "BlockedByBudget"), ("web", "WouldEvict")]
    blocked = next(r for r in h.policies.records if r.name == "hog")
    assert "disruption budget" in blocked.message
    assert "(dryRun)" in blocked.message
    assert ("hog", "NodePressureReliefBlocked") in [(n, r) for n, r, _ in h.events.said]
    await h.poll()
    assert h.policies.results() == [("hog", "BlockedByBudget"), ("web", "WouldEvict")]


async def test_stale_or_missing_usage_evicts_nothing() -> None:
    h = harness(policy(maxUsageAgeSeconds=30))
    pressed(h)
    h.cluster.metrics_status = 503
    await h.poll()  # no sample at all
    assert h.cluster.evictions == []
    h.cluster.metrics_status = 200
    h.cluster.metrics_at = h.clock.now - 40  # a sample, but older than 30s
    await h.poll(advance=0.0, fresh=False)
    assert h.cluster.evictions == []
    status = h.policies.status["relief"]
    assert status is not None
    assert status["nodesWithoutUsage"] == ["n0", "n1"]
    assert h.view.get("n0") is None


async def test_only_the_leader_relieves() -> None:
    h = harness(policy())
    pressed(h)
    h.fence.open = False
    await h.poll()
    assert h.cluster.evictions == []
    h.fence.open = True
    await h.poll()
    assert h.cluster.evictions == ["hog"]


async def test_what_relief_never_evicts() -> None:
    h = harness(policy(protected=[{"podSelector": {"matchLabels": {"keep": "yes"}}}]))
    daemon = OwnerReference("DaemonSet", "agent", "ds-uid", controller=True)
    load(
        h,
        on("n0", "agent", 3 * GI, owner_references=(daemon,)),
        on("n0", "kept", 2 * GI, labels={"keep": "yes"}),
        on("n0", "mirror", 2 * GI, annotations={"kubernetes.io/config.mirror": "x"}),
        on("n0", "web", GI),
    )
    await h.poll()
    assert h.cluster.evictions == ["web"]


async def test_a_node_two_policies_select_is_relieved_under_the_first_by_name() -> None:
    first = policy("a-first", nodeSelector={"matchLabels": {"kubernetes.io/hostname": "n0"}})
    second = policy("b-second")
    h = harness(second, first)
    h.cluster.nodes = [replace(n, labels={"kubernetes.io/hostname": n.name}) for n in h.cluster.nodes]
    pressed(h)
    await h.poll()
    assert [r.name for r in h.policies.records] == ["hog"]
    mark = h.view.get("n0")
    assert mark is not None
    assert mark.policy == "a-first"
    assert h.view.policies == frozenset({"a-first", "b-second"})
    assert h.policies.status["b-second"]["nodesWatched"] == 1  # type: ignore[index]


async def test_the_policy_gives_thresholds_to_nodes_without_configz() -> None:
    h = harness(policy(kubeletEvictionHard={"memory.available": "1Gi"}))
    pressed(h)
    await h.poll()
    assert h.monitor.records["n0"].config.source == "policy"


async def test_explain_says_where_a_pod_stands() -> None:
    h = harness()
    load(h, on("n0", "a", 8 * GI - 90 * MI - GI // 2), on("n0", "b", GI // 2, request=GI))
    await h.poll()
    standing = await h.monitor.standing("default", "b")
    assert standing is not None
    assert (standing["position"], standing["of"], standing["victim"]) == (2, 2, False)
    assert standing["ahead"] == ["default/a"]
    assert await h.monitor.standing("default", "nowhere") is None


async def test_a_dry_run_eviction_is_the_eviction_api_with_dry_run_all() -> None:
    """The API server applies budgets to a dryRun=All eviction and evicts nothing; the answer
    reads as a real one (201: would be evicted; 429: the budget refuses)."""
    sent: list[tuple[str, str, dict[str, str] | None, Any]] = []

    async def call(api: Any, method: str, path: str, **kwargs: Any) -> Answer:
        sent.append((method, path, kwargs.get("query"), kwargs.get("body")))
        return Answer(429, PDB_429) if "guarded" in path else Answer(201, b"{}")

    api = EvictionApi(NO_API, retry=RetryPolicy(max_attempts=1), call_fn=call)
    assert (await api.evict("shop", "web", "u1", None, dry_run=True)).outcome is Outcome.EVICTED
    assert (await api.evict("shop", "guarded", "u2", None, dry_run=True)).outcome is Outcome.BUDGET
    assert (await api.evict("shop", "web", "u1", None)).outcome is Outcome.EVICTED
    assert [(m, p, q) for m, p, q, _ in sent] == [
        ("POST", "/api/v1/namespaces/shop/pods/web/eviction", {"dryRun": "All"}),
        ("POST", "/api/v1/namespaces/shop/pods/guarded/eviction", {"dryRun": "All"}),
        ("POST", "/api/v1/namespaces/shop/pods/web/eviction", None),
    ]
    assert sent[0][3]["deleteOptions"] == {"preconditions": {"uid": "u1"}}
