"""One measured run: a workload, at one cluster size, against one contender.

Pods first (init pods already bound, measured pods pending), then the contender's process;
binds are counted from a watch on the measured pods. Everything of the run lives in a fresh
namespace with its own schedulerName and is deleted afterwards, so contenders never share
capacity or see each other's pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.apiobjects.podgroup_crd import podgroup_crd
from policy_scheduler.bench_e2e import contenders, dra, gang
from policy_scheduler.bench_e2e.affinity import on_cpu
from policy_scheduler.bench_e2e.api import JSON, ApiError, Client
from policy_scheduler.bench_e2e.procstat import MachineCpu, busy_fraction, cpu_by_name, machine_cpu, usage
from policy_scheduler.bench_e2e.rates import slice_rates, throughput
from policy_scheduler.bench_e2e.workloads import MEASURED, ROLE_LABEL, Workload, pod, priority_classes
from policy_scheduler.devcluster.nodes import DEFAULT_ZONES, NodeShape, node_manifest
from policy_scheduler.devcluster.procs import Component, log_tail, spawn, terminate
from policy_scheduler.policy.crdgen import render_crds

log = logging.getLogger(__name__)

CREATE_CONCURRENCY = 32
CHURN_INTERVAL = 0.1
# Creating a run's pods keeps the control plane busy for seconds after the last create returns
# (kwok and the API server digest them). The contender starts once the control plane's CPU rate,
# read over windows of SETTLE_WINDOW seconds, is back within SETTLE_MARGIN (cores, plus 10%) of
# its rate before the run created anything, or after SETTLE_LIMIT seconds.
SETTLE_WINDOW = 1.0
# Throughput per slice of this many binds (scheduler_perf's largest runs report 10,000-pod
# slices): a cost per pod that grows with the cluster shows as falling rates.
SLICE_PODS = 10_000
HTTP_GATEWAY_TIMEOUT = 504
SETTLE_MARGIN = 0.1
SETTLE_LIMIT = 30.0
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass
class RunResult:
    workload: str
    nodes: int
    contender: str
    measured: int
    bound: int = 0
    seconds_to_first_bind: float | None = None
    seconds_to_last_bind: float | None = None
    pods_per_second: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    samples: list[int] = field(default_factory=list)
    slice_rates: list[float] = field(default_factory=list)  # pods/s per SLICE_PODS binds
    cpu_seconds: float = 0.0
    cpu_ms_per_pod: float = 0.0
    peak_rss_mb: float = 0.0
    # The control plane's processes (API server, etcd, kwok, controller manager): CPU seconds
    # from the contender's start to the last bind; the cores they kept busy before the run created
    # anything (kwok's node lease renewals: 500 per second at 5000 nodes); and per bound pod, what
    # the run added over that background: the binds' cost on the other side of the API.
    cluster_cpu_seconds: dict[str, float] = field(default_factory=dict)
    cluster_background_cores: float = 0.0
    cluster_cpu_ms_per_pod: float = 0.0
    window_seconds: float = 0.0
    # The share of the machine's CPUs busy over that window (everything: contender, control
    # plane, this harness): near 1.0 the machine's CPU, not one process, sets the pace.
    machine_busy: float = 0.0
    # The same share over the last window before the contender starts, its pods created and the
    # control plane settled (kwok's node lease renewals load it at 5000 nodes); and how long the
    # harness waited for the control plane to settle.
    machine_busy_before: float = 0.0
    settle_seconds: float = 0.0
    contender_cpu: int | None = None  # the CPU the contender had to itself (--contender-cpu)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def gather_limited(jobs: Iterable[Awaitable[None]], limit: int = CREATE_CONCURRENCY) -> None:
    slots = asyncio.Semaphore(limit)

    async def one(job: Awaitable[None]) -> None:
        async with slots:
            await job

    await asyncio.gather(*(one(j) for j in jobs))


async def create_pods(client: Client, pods: Sequence[JSON]) -> None:
    await gather_limited(
        client.create(f"/api/v1/namespaces/{p['metadata']['namespace']}/pods", p) for p in pods
    )


async def install_cluster_objects(client: Client) -> None:
    """CRDs (ours for the SchedulingProfile, the PodGroup's for the gang workloads) and the
    PriorityClasses of PreemptionBasic, once."""
    crds = [*(yaml.safe_load(text) for text in render_crds().values()), podgroup_crd()]
    for crd in crds:
        await client.create(CRDS, crd, exist_ok=True)
    for pc in priority_classes():
        await client.create("/apis/scheduling.k8s.io/v1/priorityclasses", pc, exist_ok=True)
    deadline = time.monotonic() + 60
    for crd in crds:
        name = crd["metadata"]["name"]
        while not _established(await client.get(f"{CRDS}/{name}")):
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {name} not Established after 60s")
            await asyncio.sleep(0.2)


def _established(crd: JSON) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


class BindWatch:
    """Records when each measured pod of a namespace is first seen bound."""

    def __init__(self, client: Client, namespace: str, expected: int) -> None:
        self.client = client
        self.namespace = namespace
        self.expected = expected
        self.bound: dict[str, float] = {}
        self.done = asyncio.Event()

    async def run(self, resource_version: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        selector = f"{ROLE_LABEL}={MEASURED}"
        while True:
            async for event in self.client.watch(path, resource_version, labelSelector=selector):
                obj = event["object"]
                if event["type"] == "ERROR":
                    break  # e.g. 410 Gone: list again below
                resource_version = obj["metadata"]["resourceVersion"]
                self._see(obj)
            listing = await self.client.get(path, labelSelector=selector)
            for item in listing["items"]:
                self._see(item)
            resource_version = listing["metadata"]["resourceVersion"]

    def _see(self, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if obj.get("spec", {}).get("nodeName") and name not in self.bound:
            self.bound[name] = time.monotonic()
            if len(self.bound) >= self.expected:
                self.done.set()


class Churn:
    """scheduler_perf's churn op in "recreate" mode: a node and a bound pod, created and deleted
    every CHURN_INTERVAL, so the scheduler handles cluster events while it works."""

    def __init__(self, client: Client, namespace: str, nodes: Sequence[str]) -> None:
        self.client = client
        self.namespace = namespace
        self.nodes = nodes

    async def run(self) -> None:
        shape = NodeShape(cpu="4", memory="32Gi")
        for i in itertools.count():
            node = f"churn-node-{i}"
            victim = pod(
                f"churn-{i}", self.namespace, "churn", role="churn", node=self.nodes[i % len(self.nodes)]
            )
            started = time.monotonic()
            await self.client.create("/api/v1/nodes", node_manifest(node, DEFAULT_ZONES[i % 3], shape))
            await self.client.create(f"/api/v1/namespaces/{self.namespace}/pods", victim)
            await self.client.delete(f"/api/v1/nodes/{node}")
            await self.client.delete(
                f"/api/v1/namespaces/{self.namespace}/pods/churn-{i}", gracePeriodSeconds="0"
            )
            await asyncio.sleep(max(CHURN_INTERVAL - (time.monotonic() - started), 0))


async def delete_namespace(client: Client, namespace: str, limit_seconds: float = 900) -> None:
    """Delete every pod at once (grace 0), wait until they are gone, then the namespace, and wait
    until it is gone too: the namespace controller deletes what is left (a run's thousands of
    events), which would otherwise load the machine while the next contender runs (about 5 s)."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    deadline = time.monotonic() + limit_seconds
    await _delete_collection(client, path, deadline)
    while (await client.get(path, limit="1"))["items"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"pods of {namespace} not deleted after {limit_seconds:.0f}s")
        await asyncio.sleep(0.5)
    await client.delete(f"/api/v1/namespaces/{namespace}")
    while await _exists(client, f"/api/v1/namespaces/{namespace}"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {namespace} not deleted after {limit_seconds:.0f}s")
        await asyncio.sleep(0.5)


async def _delete_collection(client: Client, path: str, deadline: float) -> None:
    """DELETE a collection (grace 0). The API server gives up on a request after a minute (504)
    while deleting tens of thousands of pods; what it deleted stays deleted, so ask again."""
    while True:
        try:
            await client.delete(path, gracePeriodSeconds="0")
            return
        except ApiError as exc:
            if exc.status != HTTP_GATEWAY_TIMEOUT or time.monotonic() > deadline:
                raise


async def _exists(client: Client, path: str) -> bool:
    try:
        await client.get(path)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True


@dataclass
class RunSpec:
    workload: Workload
    contender: str
    nodes: Sequence[str]
    pods: int
    kubeconfig: Path
    workdir: Path
    timeout: float
    index: int  # distinguishes the namespaces of successive runs
    cluster_pids: Mapping[str, int] = field(default_factory=dict)  # control plane, by name
    contender_cpu: int | None = None  # the contender's own CPU (affinity), or shared CPUs


async def run_one(client: Client, spec: RunSpec) -> RunResult:
    w = spec.workload
    count = max(min(spec.pods, w.max_measured(len(spec.nodes))), 1)
    name = f"bench-{spec.index}-{spec.contender}"  # namespace and schedulerName
    result = RunResult(w.name, len(spec.nodes), spec.contender, count, contender_cpu=spec.contender_cpu)
    await client.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    try:
        await _measure(client, spec, name, count, result)
    finally:
        await delete_namespace(client, name)
        if w.objects is not None:
            for path, params in dra.cluster_scoped(name):
                with contextlib.suppress(ApiError):
                    await client.delete(path, **params)
    return result


async def _measure(client: Client, spec: RunSpec, name: str, count: int, result: RunResult) -> None:
    w = spec.workload
    background = await control_plane_rate(spec.cluster_pids)  # before this run created anything
    if w.objects is not None:
        await gather_limited(client.create(dra.collection(obj), obj) for obj in w.objects(name, spec.nodes))
    await create_pods(client, w.init(name, name, spec.nodes))
    pods = [w.measured(f"pod-{i}", name, name) for i in range(count)]
    if w.groups is not None:  # PodGroups before their pods, as a job controller creates them
        groups = w.groups(name, pods, len(spec.nodes))
        await gather_limited(client.create(gang.collection(name), g) for g in groups)
    await create_pods(client, pods)
    if w.claims:
        await _claims_created(client, name, count, spec.timeout)
    listing = await client.get(f"/api/v1/namespaces/{name}/pods", limit="1")
    watch = BindWatch(client, name, count)
    tasks = [asyncio.create_task(watch.run(listing["metadata"]["resourceVersion"]))]
    await contenders.prepare(spec.contender, client, name, w.profile)
    launch = contenders.launch(spec.contender, spec.kubeconfig, name, spec.workdir)
    quiet = await settle(spec.cluster_pids, background.cores)
    result.settle_seconds = quiet.waited
    result.machine_busy_before = round(quiet.machine_busy, 3)
    result.cluster_background_cores = round(background.cores, 3)
    cluster_before, machine_before = quiet.cluster, quiet.machine
    if w.churn:  # from the contender's start: its control-plane cost is the run's
        tasks.append(asyncio.create_task(Churn(client, name, spec.nodes).run()))
    started = time.monotonic()
    argv = launch.argv if spec.contender_cpu is None else on_cpu(launch.argv, spec.contender_cpu)
    process = spawn(spec.contender, argv, spec.workdir / f"{name}.log", env=launch.env)
    try:
        await _wait(watch, process, spec.timeout, result)
        result.window_seconds = round(time.monotonic() - started, 2)
        result.machine_busy = round(busy_fraction(machine_before, machine_cpu()), 3)
        result.cluster_cpu_seconds = {
            component: round(seconds - cluster_before[component], 2)
            for component, seconds in cpu_by_name(spec.cluster_pids).items()
        }
        if process.alive():
            measured = usage(process.pid)
            result.cpu_seconds = round(measured.cpu_seconds, 2)
            result.peak_rss_mb = round(measured.peak_rss_mb, 1)
    finally:
        terminate(process, 10.0)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ApiError):
                await task
        await contenders.cleanup(spec.contender, client, name)
    summarize(result, sorted(watch.bound.values()), started)


@dataclass(frozen=True)
class Quiet:
    """The control plane over a window: its CPU rate (cores), the machine's busy share, the
    readings at the window's end (a run's starting point), and the seconds waited for it."""

    cores: float
    machine_busy: float
    cluster: dict[str, float]
    machine: MachineCpu
    waited: float


async def control_plane_rate(pids: Mapping[str, int], window: float = SETTLE_WINDOW) -> Quiet:
    """The control plane's CPU rate over one window from now."""
    cluster, machine, at = cpu_by_name(pids), machine_cpu(), time.monotonic()
    await asyncio.sleep(window)
    now_cluster, now_machine, now = cpu_by_name(pids), machine_cpu(), time.monotonic()
    cores = (sum(now_cluster.values()) - sum(cluster.values())) / (now - at)
    return Quiet(cores, busy_fraction(machine, now_machine), now_cluster, now_machine, round(now - at, 2))


RateReader = Callable[[Mapping[str, int], float], Awaitable[Quiet]]


async def settle(
    pids: Mapping[str, int],
    baseline: float,
    window: float = SETTLE_WINDOW,
    limit: float = SETTLE_LIMIT,
    read: RateReader = control_plane_rate,
    clock: Callable[[], float] = time.monotonic,
) -> Quiet:
    """Read the control plane's CPU rate window after window until it is back near `baseline`
    (cores; see SETTLE_MARGIN) or `limit` seconds have passed; the last window's reading."""
    began = clock()
    while True:
        quiet = await read(pids, window)
        waited = clock() - began
        if quiet.cores <= baseline * 1.1 + SETTLE_MARGIN or waited >= limit:
            return replace(quiet, waited=round(waited, 2))


async def _claims_created(client: Client, namespace: str, count: int, limit_seconds: float) -> None:
    """The resource-claim controller creates a claim per measured pod; the scheduler starts
    once all exist, so no contender is timed on the controller's pace."""
    deadline = time.monotonic() + limit_seconds
    while len((await client.get(dra.claims_path(namespace)))["items"]) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"claims of {namespace} not created after {limit_seconds:.0f}s")
        await asyncio.sleep(0.5)


async def _wait(watch: BindWatch, process: Component, limit_seconds: float, result: RunResult) -> None:
    deadline = time.monotonic() + limit_seconds
    while not watch.done.is_set():
        if not process.alive():
            result.error = (
                f"{process.name} exited early (code {process.exit_code()}):\n{log_tail(process.log_path)}"
            )
            return
        if time.monotonic() > deadline:
            result.error = (
                f"timeout after {limit_seconds:.0f}s with {len(watch.bound)}/{watch.expected} bound"
            )
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.done.wait(), 0.5)


def summarize(result: RunResult, times: list[float], started: float) -> None:
    result.bound = len(times)
    if not times:
        return
    rates = throughput(times)
    result.seconds_to_first_bind = round(times[0] - started, 2)
    result.seconds_to_last_bind = round(times[-1] - started, 2)
    result.pods_per_second = round(rates.average, 1)
    result.p50, result.p90, result.p99 = (round(p, 1) for p in (rates.p50, rates.p90, rates.p99))
    result.samples = rates.samples
    result.slice_rates = [round(rate, 1) for rate in slice_rates(times, SLICE_PODS)]
    result.cpu_ms_per_pod = round(result.cpu_seconds * 1000 / len(times), 2)
    added = sum(result.cluster_cpu_seconds.values()) - result.cluster_background_cores * result.window_seconds
    result.cluster_cpu_ms_per_pod = round(max(added, 0.0) * 1000 / len(times), 2)
