"""Benchmark workloads: clusters and pods shaped like kube-scheduler's scheduler_perf test cases.

Every workload builds a fresh Engine with the default profile, adds its nodes and its existing
(already bound) pods, queues the pods to measure, and then schedules them through the real
scheduling and binding cycles with an in-memory binder. Only that last part is timed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from policy_scheduler.bench_e2e import dra as dra_objects
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL, ZONE_LABEL
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.resource_names import CPU, MEMORY, PODS
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.simulate import dra as simulate_dra

MI = 1024 * 1024
GI = 1024 * MI
ZONES = ("moon-1", "moon-2", "moon-3")  # as scheduler_perf's labelNodePrepareStrategy

PodFactory = Callable[[int], Pod]
DRA_NAMESPACE = "dra-bench"


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    description: str
    nodes: int
    existing: int  # bound pods present before the measurement
    measured: int  # pods scheduled while timing
    existing_pod: PodFactory
    measured_pod: PodFactory
    # The first `special` existing pods come from `special_pod` (e.g. pods like the measured ones).
    special: int = 0
    special_pod: PodFactory | None = None
    zones: bool = False
    percentage_of_nodes_to_score: int | None = None
    # The scheduler_perf test case this mirrors and its published throughput threshold (pods/s).
    upstream: str = ""
    upstream_threshold: float | None = None
    fits_nowhere: bool = False  # the measured pods are never bound: each cycle is a failed one
    # DRA objects (DeviceClass, ResourceSlices, ResourceClaimTemplate) in this namespace, from the
    # node names; the measured pods' template claims are created as the claim controller would.
    dra_namespace: str = ""

    def scaled(self, nodes: int, existing: int, measured: int) -> Workload:
        return dataclasses.replace(self, nodes=nodes, existing=existing, measured=measured)


# ---- objects ------------------------------------------------------------------------------------


def make_node(i: int, zones: bool) -> Node:
    """templates/node-default.yaml: 4 cpu, 32Gi, 110 pods; plus hostname (and zone) labels."""
    name = f"node-{i:05d}"
    labels = {HOSTNAME_LABEL: name}
    if zones:
        labels[ZONE_LABEL] = ZONES[i % len(ZONES)]
    return Node(
        name=name, uid=f"uid-{name}", labels=labels, allocatable={CPU: 4000, MEMORY: 32 * GI, PODS: 110}
    )


def _pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **spec: object) -> Pod:
    """templates/pod-default.yaml: one pause container requesting 100m cpu and 500Mi."""
    container = Container(
        name="pause", image="registry.k8s.io/pause:3.10.1", requests={CPU: 100, MEMORY: 500 * MI}
    )
    return Pod(
        name=name,
        namespace=namespace,
        uid=f"uid-{namespace}-{name}",
        labels=dict(labels or {}),
        containers=(container,),
        **spec,  # type: ignore[arg-type]
    )


def default_pod(prefix: str) -> PodFactory:
    return lambda i: _pod(f"{prefix}-{i}", labels={"app": f"app-{i % 50}"})


def oversized_pod(prefix: str) -> PodFactory:
    """Unschedulable's pod that fits nowhere: more cpu than any default node has."""
    container = Container(
        name="pause", image="registry.k8s.io/pause:3.10.1", requests={CPU: 9000, MEMORY: 500 * MI}
    )
    return lambda i: dataclasses.replace(_pod(f"{prefix}-{i}"), containers=(container,))


def template_claim_pod(namespace: str) -> PodFactory:
    """pod-with-claim-template.yaml: one claim from bench_e2e's ResourceClaimTemplate."""
    claim = PodResourceClaim(dra_objects.CLAIM, resource_claim_template_name=dra_objects.TEMPLATE)
    return lambda i: _pod(f"dra-{i}", namespace, resource_claims=(claim,))


def _selector(key: str, value: str) -> LabelSelector:
    return LabelSelector(match_labels=((key, value),))


def anti_affinity_pod(namespace: str) -> PodFactory:
    """templates/pod-with-pod-anti-affinity.yaml: no two green pods on one hostname."""
    term = PodAffinityTerm(HOSTNAME_LABEL, _selector("color", "green"), namespaces=("sched-1", "sched-0"))
    affinity = Affinity(pod_anti_affinity=PodAffinity(required=(term,)))
    return lambda i: _pod(f"anti-{i}", namespace, {"color": "green"}, affinity=affinity)


def preferred_affinity_pod(namespace: str) -> PodFactory:
    """templates/pod-with-preferred-pod-affinity.yaml: red pods prefer hosts with red pods."""
    term = PodAffinityTerm(HOSTNAME_LABEL, _selector("color", "red"), namespaces=("sched-1", "sched-0"))
    affinity = Affinity(pod_affinity=PodAffinity(preferred=(WeightedPodAffinityTerm(1, term),)))
    return lambda i: _pod(f"pref-{i}", namespace, {"color": "red"}, affinity=affinity)


def spread_pod(prefix: str) -> PodFactory:
    """Zone DoNotSchedule (templates/pod-with-topology-spreading.yaml) plus hostname ScheduleAnyway."""
    selector = _selector("color", "blue")
    constraints = (
        TopologySpreadConstraint(5, ZONE_LABEL, "DoNotSchedule", selector),
        TopologySpreadConstraint(1, HOSTNAME_LABEL, "ScheduleAnyway", selector),
    )
    return lambda i: _pod(f"{prefix}-{i}", labels={"color": "blue"}, topology_spread_constraints=constraints)


# ---- the catalogue --------------------------------------------------------------------------------


def catalogue() -> dict[str, Workload]:
    """The benchmark workloads by name, at full size."""
    workloads = [
        Workload(
            "basic-500",
            "default pods (100m/500Mi), 500 nodes",
            nodes=500,
            existing=500,
            measured=1000,
            existing_pod=default_pod("existing"),
            measured_pod=default_pod("pod"),
            upstream="SchedulingBasic/500Nodes",
        ),
        Workload(
            "basic-5000",
            "default pods (100m/500Mi), 5000 nodes",
            nodes=5000,
            existing=1000,
            measured=2000,
            existing_pod=default_pod("existing"),
            measured_pod=default_pod("pod"),
            upstream="SchedulingBasic/5000Nodes_10000Pods",
            upstream_threshold=270,
        ),
        Workload(
            "basic-5000-pct100",
            "default pods, 5000 nodes, percentageOfNodesToScore=100",
            nodes=5000,
            existing=1000,
            measured=1000,
            existing_pod=default_pod("existing"),
            measured_pod=default_pod("pod"),
            percentage_of_nodes_to_score=100,
        ),
        Workload(
            "unschedulable-5000",
            "pods that fit nowhere (9 cpu on 4-cpu nodes), 5000 nodes: one failed cycle each "
            "(every node filtered, FitError, PostFilter)",
            nodes=5000,
            existing=1000,
            measured=500,
            existing_pod=default_pod("existing"),
            measured_pod=oversized_pod("big"),
            fits_nowhere=True,
        ),
        Workload(
            "anti-affinity-5000",
            "required pod anti-affinity on hostname vs same-color pods; 5000 nodes, 10000 existing "
            "pods (1000 of them green with the same anti-affinity)",
            nodes=5000,
            existing=10000,
            measured=2000,
            existing_pod=default_pod("existing"),
            special=1000,
            special_pod=anti_affinity_pod("sched-0"),
            measured_pod=anti_affinity_pod("sched-1"),
            upstream="SchedulingPodAntiAffinity/5000Nodes_2000Pods",
            upstream_threshold=60,
        ),
        Workload(
            "topology-spread-5000",
            "spread: zone DoNotSchedule maxSkew 5 + hostname ScheduleAnyway maxSkew 1; 5000 nodes in "
            "3 zones, 10000 existing pods (5000 of them matching)",
            nodes=5000,
            existing=10000,
            measured=2000,
            existing_pod=default_pod("existing"),
            special=5000,
            special_pod=spread_pod("existing-blue"),
            measured_pod=spread_pod("pod"),
            zones=True,
            upstream="TopologySpreading/5000Nodes_5000Pods",
            upstream_threshold=85,
        ),
        Workload(
            "preferred-affinity-5000",
            "preferred pod affinity on hostname vs same-color pods; 5000 nodes, 5000 existing pods",
            nodes=5000,
            existing=5000,
            measured=1000,
            existing_pod=preferred_affinity_pod("sched-0"),
            measured_pod=preferred_affinity_pod("sched-1"),
            upstream="SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
            upstream_threshold=90,
        ),
        Workload(
            "dra-template-100",
            f"SchedulingWithResourceClaimTemplate: a ResourceSlice of {dra_objects.FREE_DEVICES_PER_NODE} "
            "devices per node, one DeviceClass; each pod gets its own claim from one template",
            nodes=100,
            existing=0,
            measured=100 * dra_objects.FREE_DEVICES_PER_NODE,
            existing_pod=default_pod("existing"),
            measured_pod=template_claim_pod(DRA_NAMESPACE),
            upstream="SchedulingWithResourceClaimTemplate/2000pods_100nodes",
            dra_namespace=DRA_NAMESPACE,
        ),
    ]
    return {w.name: w for w in workloads}


def quick(workload: Workload) -> Workload:
    """A small version for smoke tests: same shapes, tiny counts."""
    nodes = min(workload.nodes, 60)
    small = workload.scaled(nodes=nodes, existing=min(workload.existing, 2 * nodes), measured=20)
    return dataclasses.replace(small, special=workload.special * nodes // workload.nodes)


# ---- running ---------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class _MemoryBinder:
    """Binding succeeds at once and comes back as the watch event it would cause."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.bound = 0

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        pending = self.engine.unassigned.get(pod.key, dataclasses.replace(pod, node_name=""))
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))
        self.bound += 1


@dataclass(slots=True)
class Prepared:
    engine: Engine
    binder: _MemoryBinder
    clock: FakeClock
    setup_seconds: float


def prepare(workload: Workload, seed: int = 0, features: Features | None = None) -> Prepared:
    """Build the cluster and queue the measured pods (not timed); the profile decides as
    `features`' release (None: the newest)."""
    started = time.perf_counter()
    clock = FakeClock()
    binder = _MemoryBinder()
    nodes = [make_node(i, workload.zones) for i in range(workload.nodes)]
    measured = [workload.measured_pod(i) for i in range(workload.measured)]
    services = ClusterServices()
    if workload.dra_namespace:
        manifests = dra_objects.objects(workload.dra_namespace, [n.name for n in nodes])
        dra, measured = simulate_dra.prepare(manifests, measured)
        services = ClusterServices(dra=dra)
    engine = Engine(binder=binder, seed=seed, clock=clock, services=services)
    binder.engine = engine
    config = ProfileConfig(percentage_of_nodes_to_score=workload.percentage_of_nodes_to_score)
    engine.set_profiles([resolve_profile(config, implemented_plugin_names(), features=features)])
    for node in nodes:
        engine.node_added(node)
    for i in range(workload.existing):
        # Round robin over nodes: pod i and pod i + nodes share a node, so the first
        # `nodes` existing pods (the special ones, if any) land on distinct nodes.
        node_name = nodes[i % workload.nodes].name
        factory = (
            workload.special_pod if workload.special_pod and i < workload.special else workload.existing_pod
        )
        pod = factory(i)
        engine.pod_added(dataclasses.replace(pod, node_name=node_name))
    for pod in measured:
        clock.now += 0.001  # keeps FIFO order among equal priorities
        engine.pod_added(dataclasses.replace(pod, creation_timestamp=clock.now))
    return Prepared(engine, binder, clock, time.perf_counter() - started)


async def _drain(prepared: Prepared, limit: int) -> int:
    engine = prepared.engine
    attempts = 0
    while attempts < limit and engine.schedule_next():
        attempts += 1
        await engine.scheduler.drain_binding()
    return attempts


@dataclass(frozen=True, slots=True)
class Measurement:
    wall_seconds: float
    cpu_seconds: float  # this process only: steadier than wall time on a busy machine
    cycles: int  # scheduling cycles (= pods when each fits at its first attempt)
    bound: int


def run_measured(prepared: Prepared, limit: int) -> Measurement:
    """Schedule queued pods until the queue is empty (at most `limit` cycles)."""
    loop = asyncio.new_event_loop()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        cycles = loop.run_until_complete(_drain(prepared, limit))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        loop.close()
    return Measurement(wall, cpu, cycles, prepared.binder.bound)
