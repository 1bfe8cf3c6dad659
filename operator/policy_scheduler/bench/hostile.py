"""Hostile pods: shapes the API server may hand the scheduler, through the informer's
own path (watch event -> decode -> convert) into the real Engine at 1000 nodes.

Each shape says what must become of its pods: bound, or Unschedulable with a message naming the
cause. `python -m policy_scheduler.bench.hostile` prints the worst and median cycle per shape
(docs/reliability.md); tests/bench/test_hostile_pods.py checks the outcomes on a small cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import pod_from_api_or_malformed, pod_from_decode_failure
from policy_scheduler.apiobjects.decode import DecodeFailure, decode_watch_event
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.cycle_contracts import NullHooks
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.resource_names import CPU, MEMORY, PODS

GI = 1 << 30
# Labels at the API's limits: a 253-character DNS prefix, a 63-character name and value.
LONG_PREFIX = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
LONG_KEY = f"{LONG_PREFIX}/{'k' * 63}"
LONG_VALUE = "v" * 63
SPECIAL_NODE = "node-00007"  # the only node carrying LONG_KEY=LONG_VALUE

Json = dict[str, Any]


def pod_json(name: str, spec: Json | None = None, cpu: Any = "100m", **meta: Any) -> Json:
    container: Json = {
        "name": "c",
        "image": "pause",
        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "hostile", "uid": f"uid-{name}", **meta},
        "spec": {"schedulerName": "default-scheduler", "containers": [container], **(spec or {})},
        "status": {"phase": "Pending"},
    }


def with_requests(name: str, requests: Json, limits: bool = False) -> Json:
    """`limits`: the same limits too (the API server wants them for extended resources)."""
    obj = pod_json(name)
    obj["spec"]["containers"][0]["resources"] = {
        "requests": requests,
        **({"limits": requests} if limits else {}),
    }
    return obj


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    make: Callable[[int], Json]
    bound: bool  # its pods must be bound; else Unschedulable with `message` in the reason
    message: str = ""


def _node_terms(count: int) -> Json:
    terms = [
        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [f"node-{j:05d}"]}]}
        for j in range(count)
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def _anti_terms(count: int) -> Json:
    terms = [
        {"labelSelector": {"matchLabels": {"hostile-app": f"a{j}"}}, "topologyKey": HOSTNAME_LABEL}
        for j in range(count)
    ]
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}


def _preferred_terms(count: int) -> Json:
    terms = [
        {
            "weight": 1 + j % 100,
            "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": [f"z{j}"]}]},
        }
        for j in range(count)
    ]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def _containers(count: int, ports: int) -> list[Json]:
    return [
        {
            "name": f"c{j}",
            "image": "pause",
            "resources": {"requests": {"cpu": "1m"}},
            "ports": [{"containerPort": 1000 + p} for p in range(ports)],
        }
        for j in range(count)
    ]


SHAPES: tuple[Shape, ...] = (
    Shape("cpu 1e1000", lambda i: pod_json(f"huge-cpu-{i}", cpu="1e1000"), False, "Insufficient cpu"),
    Shape(
        "memory 99999999999999999999Ei",
        lambda i: with_requests(f"huge-mem-{i}", {"memory": "99999999999999999999Ei"}),
        False,
        "Insufficient memory",
    ),
    Shape(
        "cpu -1",
        lambda i: pod_json(f"negative-{i}", cpu="-1"),
        False,
        'requests.cpu: invalid quantity "-1": must be greater than or equal to 0',
    ),
    Shape(
        "cpu abc",
        lambda i: pod_json(f"garbage-{i}", cpu="abc"),
        False,
        'spec.containers[0].resources.requests.cpu: invalid quantity "abc"',
    ),
    Shape(
        "cpu as a list", lambda i: pod_json(f"list-qty-{i}", cpu=[1]), False, "spec.containers[0].resources"
    ),
    Shape(
        "priority as a string",
        lambda i: pod_json(f"prio-str-{i}", {"priority": "high"}),
        False,
        "spec.priority",
    ),
    Shape(
        "labels not a map",
        lambda i: pod_json(f"bad-labels-{i}", labels=["a"]),
        False,
        "metadata.labels",
    ),
    Shape(
        "5000 tolerations",
        lambda i: pod_json(
            f"tolerations-{i}",
            {
                "tolerations": [
                    {"key": f"k{j}", "operator": "Exists", "effect": "NoSchedule"} for j in range(5000)
                ]
            },
        ),
        True,
    ),
    Shape(
        "2000 required node affinity terms",
        lambda i: pod_json(f"node-terms-{i}", {"affinity": _node_terms(2000)}),
        True,
    ),
    Shape(
        "1000 preferred node affinity terms",
        lambda i: pod_json(f"preferred-{i}", {"affinity": _preferred_terms(1000)}),
        True,
    ),
    Shape(
        "1000 required pod anti-affinity terms",
        lambda i: pod_json(f"anti-terms-{i}", {"affinity": _anti_terms(1000)}, labels={"hostile-app": "a0"}),
        True,
    ),
    Shape(
        "labels at their limits",
        lambda i: pod_json(
            f"long-labels-{i}",
            {"nodeSelector": {LONG_KEY: LONG_VALUE}},
            cpu="1m",
            labels={LONG_KEY: LONG_VALUE, "x" * 63: LONG_VALUE},
        ),
        True,
    ),
    Shape(
        "unknown extended resource",
        lambda i: with_requests(f"extended-{i}", {"example.com/unknown-widget": "1"}, limits=True),
        False,
        "Insufficient example.com/unknown-widget",
    ),
    Shape(
        "500 containers, 4000 ports",
        lambda i: pod_json(f"containers-{i}", {"containers": _containers(500, 8)}),
        True,
    ),
    Shape(
        "1000 host ports",
        lambda i: pod_json(
            f"host-ports-{i}",
            {
                "containers": [
                    {
                        "name": "c",
                        "image": "pause",
                        "ports": [{"containerPort": p, "hostPort": p} for p in range(1, 1001)],
                    }
                ]
            },
        ),
        True,
    ),
)


def pod_from_json(obj: Json) -> Pod:
    """What the pod informer makes of this object arriving in a watch event."""
    line = json.dumps({"type": "ADDED", "object": obj}).encode()
    event = decode_watch_event(line, structs.Pod)
    if isinstance(event, DecodeFailure):
        return pod_from_decode_failure(event)
    assert isinstance(event, structs.WatchEvent)
    return pod_from_api_or_malformed(event.object)


def make_nodes(count: int) -> list[Node]:
    nodes = []
    for i in range(count):
        name = f"node-{i:05d}"
        labels = {HOSTNAME_LABEL: name}
        if name == SPECIAL_NODE:
            labels[LONG_KEY] = LONG_VALUE
        nodes.append(
            Node(name, uid=f"uid-{name}", labels=labels, allocatable={CPU: 4000, MEMORY: 32 * GI, PODS: 110})
        )
    return nodes


class Outcomes(NullHooks):
    """Scheduler hooks that record what became of each pod."""

    def __init__(self) -> None:
        self.bound: dict[str, str] = {}
        self.failures: dict[str, tuple[str, str]] = {}

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        self.bound[pod.name] = node_name

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        self.failures[pod.name] = (reason, message)


class _Binder:
    def __init__(self) -> None:
        self.engine: Engine | None = None

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


def make_engine(nodes: int) -> tuple[Engine, Outcomes]:
    outcomes, binder = Outcomes(), _Binder()
    engine = Engine(hooks=outcomes, binder=binder, seed=1)
    binder.engine = engine
    engine.set_profiles([resolve_profile(ProfileConfig(), implemented_plugin_names())])
    for node in make_nodes(nodes):
        engine.node_added(node)
    return engine, outcomes


def run(engine: Engine) -> list[tuple[float, float]]:
    """Schedule until the queue is empty; (wall, CPU) seconds of each cycle. CPU time is this
    thread's, so other processes on a busy machine do not inflate it."""

    async def loop() -> list[tuple[float, float]]:
        times: list[tuple[float, float]] = []
        while True:
            wall, cpu = time.perf_counter(), time.thread_time()
            if not engine.schedule_next():
                return times
            times.append((time.perf_counter() - wall, time.thread_time() - cpu))
            await engine.scheduler.drain_binding()

    return asyncio.run(loop())


@dataclass(frozen=True, slots=True)
class Figures:
    shape: str
    pods: int
    worst_cpu_ms: float
    median_cpu_ms: float
    worst_wall_ms: float
    convert_ms: float  # decoding and converting one pod, CPU


def measure(shape: Shape, nodes: int, pods: int) -> Figures:
    engine, _ = make_engine(nodes)
    start = time.thread_time()
    converted = [pod_from_json(shape.make(i)) for i in range(pods)]
    convert = (time.thread_time() - start) / pods
    for pod in converted:
        engine.pod_added(pod)
    # The set-up's objects out of the collector's way: a full collection over them pauses any
    # cycle, whatever its pod, long enough to be the worst one, which says nothing about the shape.
    gc.collect()
    gc.freeze()
    try:
        times = run(engine)
    finally:
        gc.unfreeze()
    cpu = [c for _, c in times]
    worst_wall = max(w for w, _ in times)
    return Figures(
        shape.name, pods, max(cpu) * 1e3, statistics.median(cpu) * 1e3, worst_wall * 1e3, convert * 1e3
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m policy_scheduler.bench.hostile", description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20, help="pods of each shape")
    args = parser.parse_args(argv)
    print(
        "| shape | pods | worst cycle CPU (ms) | median cycle CPU (ms) | worst cycle wall (ms) "
        "| convert CPU (ms/pod) |"
    )
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        f = measure(shape, args.nodes, args.pods)
        print(
            f"| {f.shape} | {f.pods} | {f.worst_cpu_ms:.1f} | {f.median_cpu_ms:.1f} | {f.worst_wall_ms:.1f} "
            f"| {f.convert_ms:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
