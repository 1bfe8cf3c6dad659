"""CPU cost of the operator's node-pressure pass with relief (issue 35; docs/benchmarks.md).

One PressureMonitor pass as the leader runs it every --node-usage-interval: NodeMetrics for N
nodes decoded, each node's kubelet eviction modelled, then relief under one EvictionPolicy that
selects every node: a tenth of the nodes are below its memory threshold, so their pods' usage
is read (PodMetrics, pod by pod) and ranked, and the first of each order evicted. The API is a
function answering from memory (no network): the figure is the operator's own CPU per pass,
which its event loop spends between scheduling cycles.

Run: .venv/bin/python scripts/bench_relief.py [--nodes 5000] [--pods-per-node 10] [--passes 5] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.controllers.eviction_policy_store import compile_policy
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.api import EvictionApi
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.fence import UNFENCED
from policy_scheduler.kube.pressure.monitor import PressureMonitor
from policy_scheduler.kube.pressure.options import PressureOptions
from policy_scheduler.kube.pressure.relief import Reliever
from policy_scheduler.kube.pressure.sources import NODE_METRICS, UsageApi, pod_metrics_path
from policy_scheduler.kube.retry import Answer, RetryPolicy
from policy_scheduler.policy.eviction_settings import EvictionRecord, EvictionSettings
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore
from policy_scheduler.scheduler.pressure.view import NodePressureView

GI, MI = 2**30, 2**20
NODE_MEMORY = 32 * GI


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Cluster:
    """Nodes, pods and the API answers the pass reads, built once."""

    def __init__(self, nodes: int, pods_per_node: int) -> None:
        self.nodes = [
            Node(f"node-{i}", allocatable={"memory": NODE_MEMORY}, memory_capacity=NODE_MEMORY)
            for i in range(nodes)
        ]
        self.pods: dict[str, list[Pod]] = {}
        self.pod_answers: dict[str, Answer] = {}
        self.usage: dict[str, int] = {}
        now = time.time()
        for i, node in enumerate(self.nodes):
            short = i % 10 == 0  # below the policy's 4Gi threshold
            each = (NODE_MEMORY - 3 * GI) // pods_per_node if short else 8 * GI // pods_per_node
            pods = []
            for j in range(pods_per_node):
                name = f"p-{i}-{j}"
                request = (j % 4) * 256 * MI
                container = Container("c", requests={"memory": request} if request else {})
                pods.append(
                    Pod(name, namespace="bench", uid=name, node_name=node.name, containers=(container,))
                )
                body = {
                    "metadata": {"name": name, "namespace": "bench"},
                    "timestamp": stamp(now),
                    "containers": [{"name": "c", "usage": {"memory": str(each)}}],
                }
                self.pod_answers[pod_metrics_path("bench", name)] = Answer(200, json.dumps(body).encode())
            self.pods[node.name] = pods
            self.usage[node.name] = each * pods_per_node
        self.timestamp = stamp(now)
        self.evictions = 0

    def node_metrics(self) -> Answer:
        items = [
            {"metadata": {"name": n}, "timestamp": self.timestamp, "usage": {"memory": str(u)}}
            for n, u in self.usage.items()
        ]
        return Answer(200, json.dumps({"kind": "NodeMetricsList", "items": items}).encode())

    async def get(self, path: str, query: Mapping[str, Any]) -> Answer:
        if path == NODE_METRICS:
            return self.node_metrics()
        return self.pod_answers.get(path, Answer(404, b"{}"))

    async def call(self, api: Any, method: str, path: str, **_: Any) -> Answer:
        if method == "GET":  # the victim re-read before its eviction
            name = path.rsplit("/", 1)[1]
            return Answer(200, json.dumps({"metadata": {"uid": name}, "spec": {}}).encode())
        self.evictions += 1
        return Answer(201, b"{}")

    # ClusterView
    def node_list(self) -> Sequence[Node]:
        return self.nodes

    def running_pods(self, node: str) -> Sequence[Pod]:
        return self.pods.get(node, ())

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        return None


class Policies:
    def __init__(self, settings: EvictionSettings) -> None:
        self.settings = settings

    def relieving(self) -> list[EvictionSettings]:
        return [self.settings]

    def record(self, policy: str | None, entry: EvictionRecord) -> None:
        return None

    def relief_status(self, policy: str, status: dict[str, Any] | None) -> None:
        return None


class Events(EventRecorder):
    def event(self, *_: Any, **__: Any) -> None:
        return None


def monitor(cluster: Cluster) -> PressureMonitor:
    policy = compile_policy(
        "bench",
        {
            "rateLimit": {"evictionsPerMinute": 100000, "burst": 100000, "maxInFlight": 10000},
            "pressureRelief": {"thresholds": {"memory.available": "4Gi"}},
        },
    )
    view = NodePressureView()
    eviction = EvictionApi(None, retry=RetryPolicy(max_attempts=1), call_fn=cluster.call)
    reliever = Reliever(
        eviction,
        Limiters(),
        Events(None, instance="bench"),
        Policies(policy),
        view,
        fence=UNFENCED,
        namespace_labels=lambda: {},
    )

    class View:
        nodes = staticmethod(cluster.node_list)
        running_pods = staticmethod(cluster.running_pods)
        find_pod = staticmethod(cluster.find_pod)

    return PressureMonitor(
        UsageApi(cluster.get, kubelet_proxy=False),
        View(),
        NodeUsageStore(),
        view,
        options=PressureOptions(interval=15.0),
        relief=reliever,
    )


async def run(args: argparse.Namespace) -> None:
    cluster = Cluster(args.nodes, args.pods_per_node)
    passes = []
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.passes):
        # A fresh monitor each pass: every pressed node acts again (no pending evictions).
        pass_monitor = monitor(cluster)
        started_cpu, started = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        await pass_monitor.poll()
        if profiler is not None:
            profiler.disable()
        passes.append((time.process_time() - started_cpu, time.perf_counter() - started))
    cpu = sorted(p[0] for p in passes)
    wall = sorted(p[1] for p in passes)
    pressed = sum(1 for i in range(args.nodes) if i % 10 == 0)
    print(
        f"{args.nodes} nodes, {args.nodes * args.pods_per_node} pods, {pressed} nodes relieved per pass, "
        f"{cluster.evictions // args.passes} evictions per pass"
    )
    print(f"pass CPU s: min {cpu[0]:.3f} median {cpu[len(cpu) // 2]:.3f} max {cpu[-1]:.3f}")
    print(f"pass wall s: min {wall[0]:.3f} median {wall[len(wall) // 2]:.3f} max {wall[-1]:.3f}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
