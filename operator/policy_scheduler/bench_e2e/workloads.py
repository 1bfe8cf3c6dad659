"""Workloads in the style of kube-scheduler's scheduler_perf (performance-config.yaml).

Nodes are scheduler_perf's node-default (4 cpu, 32Gi, 110 pods) in three zones. Init pods are
created already bound (spec.nodeName set), so no scheduler spends time on them, or pending when
they are meant to sit in the queue (Unschedulable). Measured pods carry ROLE_LABEL=measured and
are all created before the scheduler under test starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]

ROLE_LABEL = "bench-e2e/role"
MEASURED = "measured"
NODE_CPU, NODE_MEMORY, NODE_PODS = "4", "32Gi", "110"
LOW_PRIORITY, HIGH_PRIORITY = "bench-e2e-low", "bench-e2e-high"
PRIORITY_VALUES = {LOW_PRIORITY: 10, HIGH_PRIORITY: 1000}


def pod(
    name: str,
    namespace: str,
    scheduler: str,
    *,
    role: str = MEASURED,
    cpu: str = "100m",
    memory: str = "500Mi",
    labels: dict[str, str] | None = None,
    node: str | None = None,
    **spec: Any,
) -> JSON:
    """scheduler_perf's pod-default: one container requesting 100m cpu and 500Mi."""
    body: JSON = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {ROLE_LABEL: role, **(labels or {})}},
        "spec": body,
    }


def _term(labels: dict[str, str], key: str) -> JSON:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
GREEN, BLUE, RED = {"color": "green"}, {"color": "blue"}, {"color": "red"}
MeasuredFn = Callable[[str, str, str], JSON]  # (name, namespace, scheduler) -> pod
InitFn = Callable[[str, str, Sequence[str]], list[JSON]]  # (namespace, scheduler, nodes) -> pods
ObjectsFn = Callable[[str, Sequence[str]], list[JSON]]  # (namespace, nodes) -> other API objects
# (namespace, measured pods, node count) -> PodGroups; it labels the pods into their groups
GroupsFn = Callable[[str, list[JSON], int], list[JSON]]


def _bound(count: Callable[[int], int], **kwargs: Any) -> InitFn:
    """`count(nodes)` init pods bound round-robin (at most one per node while count <= nodes)."""

    def make(namespace: str, scheduler: str, nodes: Sequence[str]) -> list[JSON]:
        return [
            pod(f"init-{i}", namespace, scheduler, role="init", node=nodes[i % len(nodes)], **kwargs)
            for i in range(count(len(nodes)))
        ]

    return make


def _measured(**kwargs: Any) -> MeasuredFn:
    def make(name: str, namespace: str, scheduler: str) -> JSON:
        return pod(name, namespace, scheduler, **kwargs)

    return make


def _unschedulable(namespace: str, scheduler: str, nodes: Sequence[str]) -> list[JSON]:
    # Requests more cpu than any node has: stays in the unschedulable queue the whole run.
    return [
        pod(f"init-{i}", namespace, scheduler, role="unschedulable", cpu="9")
        for i in range(max(len(nodes) // 5, 1))
    ]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    init: InitFn
    measured: MeasuredFn
    max_measured: Callable[[int], int] = lambda nodes: 1 << 30
    churn: bool = False
    priority_classes: bool = False
    # created before the pods (namespaced ones in the run's namespace); see bench_e2e/dra.py
    objects: ObjectsFn | None = None
    # the measured pods have resource claims: only a scheduler that allocates them can bind
    claims: bool = False
    # Gang workloads (bench_e2e/gang.py): the PodGroups, and what policy-scheduler's profile adds.
    groups: GroupsFn | None = None
    profile: JSON | None = None


def _fifth(nodes: int) -> int:
    return max(nodes // 5, 1)


CATALOGUE: tuple[Workload, ...] = (
    Workload(
        "SchedulingBasic",
        "nodes/5 default init pods; default measured pods",
        _bound(_fifth),
        _measured(),
    ),
    Workload(
        "SchedulingNodeAffinity",
        "measured pods require zone In [zone-a, zone-b] (pod-with-node-affinity)",
        _bound(_fifth),
        _measured(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}
                                ]
                            }
                        ]
                    }
                }
            }
        ),
    ),
    Workload(
        "TopologySpreading",
        "nodes/5 blue init pods; blue measured pods, zone DoNotSchedule maxSkew 5",
        _bound(_fifth, labels=BLUE),
        _measured(
            labels=BLUE,
            topologySpreadConstraints=[
                {
                    "maxSkew": 5,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": BLUE},
                }
            ],
        ),
    ),
    Workload(
        "SchedulingPodAntiAffinity",
        "nodes/5 green init pods (one per node); green measured pods, required anti-affinity on hostname",
        _bound(
            _fifth,
            labels=GREEN,
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(GREEN, HOSTNAME)]
                }
            },
        ),
        _measured(
            labels=GREEN,
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(GREEN, HOSTNAME)]
                }
            },
        ),
        max_measured=lambda nodes: nodes - _fifth(nodes),  # one green pod per node
    ),
    Workload(
        "SchedulingPreferredPodAffinity",
        "nodes/5 red init pods; red measured pods, preferred pod affinity (weight 1) on hostname",
        _bound(_fifth, labels=RED),
        _measured(
            labels=RED,
            affinity={
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "podAffinityTerm": _term(RED, HOSTNAME)}
                    ]
                }
            },
        ),
    ),
    Workload(
        "PreemptionBasic",
        "4 low-priority 1-cpu pods fill every node; high-priority 1-cpu measured pods preempt one each",
        _bound(lambda nodes: 4 * nodes, cpu="1", priorityClassName=LOW_PRIORITY),
        _measured(cpu="1", priorityClassName=HIGH_PRIORITY),
        max_measured=lambda nodes: nodes,
        priority_classes=True,
    ),
    Workload(
        "Unschedulable",
        "nodes/5 pending 9-cpu pods never fit (they stay queued); default measured pods",
        _unschedulable,
        _measured(),
    ),
    Workload(
        "SchedulingChurn",
        "as SchedulingBasic while a node and a bound pod are created and deleted every 100 ms",
        _bound(_fifth),
        _measured(),
        churn=True,
    ),
)


def catalogue() -> dict[str, Workload]:
    from policy_scheduler.bench_e2e.dra import DRA_WORKLOADS  # built on Workload, defined apart
    from policy_scheduler.bench_e2e.gang import GANG_WORKLOADS

    return {w.name: w for w in (*CATALOGUE, *DRA_WORKLOADS, *GANG_WORKLOADS)}


def priority_classes() -> list[JSON]:
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in PRIORITY_VALUES.items()
    ]
