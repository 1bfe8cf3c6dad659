"""The operator's view of node pressure: usage polled from metrics.k8s.io (and the kubelets,
when allowed), each node's kubelet eviction modelled pass by pass, relief run after each poll.

Every `interval` seconds: read NodeMetrics (one list) and, with the kubelet proxy, each node's
Summary (and its /configz now and then); keep each node's last sample and the kubelet's
ManagerState between polls, so grace periods and the transition period apply as in the
kubelet; feed ClusterServices.node_usage (EvictionHeadroom); drop nodes that are gone. A sample
is never replaced by nothing: when a source fails, the last sample stays and ages, and relief
treats it as missing once it is older than the policy allows. Pod usage is read only for the
nodes that need an order (relief acting, `explain`), pod by pod. The work on nodes is done in
slices, yielding to the event loop between them, so scheduling cycles are not held up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.kube.pressure.options import DEFAULT_OPTIONS, PressureOptions
from policy_scheduler.kube.pressure.samples import NodeRecord, PodInputs, pod_inputs, sample_covers
from policy_scheduler.kube.pressure.sources import KubeletReads, SourceUnavailable, UsageApi
from policy_scheduler.kube.pressure.standing import standing
from policy_scheduler.observability import metrics as prom
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.pressure.assess import NodeAssessment, assess
from policy_scheduler.scheduler.pressure.headroom import NodeUsage, NodeUsageStore
from policy_scheduler.scheduler.pressure.signals import (
    DISK_PRESSURE,
    MEMORY_AVAILABLE,
    MEMORY_PRESSURE,
    NODEFS_AVAILABLE,
    PID_AVAILABLE,
    PID_PRESSURE,
)
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig
from policy_scheduler.scheduler.pressure.view import NodePressureView

log = logging.getLogger(__name__)

# The signal whose order `explain` shows for a node relief holds under a condition.
ORDER_SIGNAL_OF: Mapping[str, str] = MappingProxyType(
    {
        MEMORY_PRESSURE: MEMORY_AVAILABLE,
        DISK_PRESSURE: NODEFS_AVAILABLE,
        PID_PRESSURE: PID_AVAILABLE,
    }
)


class ClusterView(Protocol):
    """The scheduler's nodes and pods."""

    def nodes(self) -> Sequence[Node]: ...

    def running_pods(self, node: str) -> Sequence[Pod]: ...

    def find_pod(self, namespace: str, name: str) -> Pod | None: ...


class Relief(Protocol):
    """Pressure relief, run after each poll."""

    def prepare(self) -> None: ...

    def kubelet_config(self, node: Node) -> EvictionConfig | None: ...

    async def relieve(self, monitor: PressureMonitor, now: float) -> None: ...


class PressureMonitor:
    def __init__(
        self,
        usage: UsageApi,
        cluster: ClusterView,
        store: NodeUsageStore,
        view: NodePressureView,
        *,
        options: PressureOptions = DEFAULT_OPTIONS,
        relief: Relief | None = None,
        active: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.usage = usage
        self.cluster = cluster
        self.store = store
        self.view = view
        self.options = options
        self.relief = relief
        self.active = active  # only the leader polls: a standby starts afresh when it leads
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.records: dict[str, NodeRecord] = {}
        self.synced_at: float | None = None  # unix time of the last pass over the nodes
        self._problems: set[str] = set()  # logged once while they last
        self._noticed: set[str] = set()  # this pass's

    # ---- the loop ---------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            started = self.monotonic()
            try:
                if self.active():
                    await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception:  # one bad pass must not end node pressure for good
                log.exception("node pressure pass failed")
            await self.sleep(max(0.0, self.options.interval - (self.monotonic() - started)))

    async def poll(self) -> None:
        now = self.clock()
        if self.relief is not None:
            self.relief.prepare()
        nodes = {n.name: n for n in self.cluster.nodes()}
        for name in set(self.records) - set(nodes):
            del self.records[name]
            self.store.delete(name)
            self.view.set(name, None)
        problems: list[str] = []
        try:
            metrics: dict[str, us.NodeMetrics] | None = await self.usage.node_metrics()
        except SourceUnavailable as exc:
            metrics = None
            problems.append(str(exc))
        reads = await self._kubelet_reads(list(nodes))
        for i, node in enumerate(nodes.values()):
            problems += self._update(node, metrics, reads.get(node.name))
            if (i + 1) % self.options.slice == 0:
                await asyncio.sleep(0)
        await self._sync(now)
        self.synced_at = now
        self._report(problems)
        if self.relief is not None:
            await self.relief.relieve(self, now)
        self._end_pass()
        self._gauges(now)

    async def _kubelet_reads(self, names: list[str]) -> dict[str, KubeletReads]:
        if not self.usage.kubelet_proxy:
            return {}
        due = self.monotonic() - self.options.configz_interval

        def wants_config(name: str) -> bool:
            read = self.records[name].configz_read if name in self.records else None
            return read is None or read <= due

        found = await asyncio.gather(*(self.usage.kubelet(n, config=wants_config(n)) for n in names))
        return dict(zip(names, found, strict=True))

    def _update(
        self, node: Node, metrics: Mapping[str, us.NodeMetrics] | None, reads: KubeletReads | None
    ) -> list[str]:
        record = self.records.get(node.name)
        if record is None:
            record = self.records[node.name] = NodeRecord(node)
        policy = self.relief.kubelet_config(node) if self.relief is not None else None
        changed = record.update(node, metrics, reads, policy, read_at=self.monotonic(), now=self.clock())
        if changed and record.stats is not None:
            measured = [p for p in self.cluster.running_pods(node.name) if sample_covers(p, record.time)]
            self.store.set(node.name, NodeUsage.of(record.stats, record.config, measured))
        return list(record.problems)

    async def _sync(self, now: float) -> None:
        """One pass of each node's kubelet eviction manager, as modelled (signals only)."""
        records = [r for r in self.records.values() if r.stats is not None]
        for start in range(0, len(records), self.options.slice):
            part = records[start : start + self.options.slice]
            results = assess([r.input(state=r.state) for r in part], [], [], [], now=now)
            for record, result in zip(part, results, strict=True):
                record.previous, record.state = record.state, result.state
                record.conditions, record.under_pressure = result.conditions, result.under_pressure
            await asyncio.sleep(0)

    # ---- orders -----------------------------------------------------------------------------------

    async def pods_of(self, record: NodeRecord) -> PodInputs:
        """The node's running pods with their usage (its Summary, else their PodMetrics)."""
        pods = self.cluster.running_pods(record.node.name)
        metrics: dict[str, us.PodMetrics] = {}
        if record.summary is None:
            try:
                metrics = await self.usage.pod_metrics((p.namespace, p.name) for p in pods)
            except SourceUnavailable as exc:
                self._report([str(exc)])
        inputs = pod_inputs(record, pods, metrics)
        self._report(inputs.problems)
        return inputs

    def order(
        self, record: NodeRecord, inputs: PodInputs, config: EvictionConfig | None = None, **kwargs: Any
    ) -> NodeAssessment:
        """The node's assessment with its pods in order, as at the last pass."""
        node = record.input(config=config)
        n = len(inputs.facts)
        return assess(
            [node], inputs.facts, inputs.usage, [0] * n, now=self.synced_at or self.clock(), **kwargs
        )[0]

    async def standing(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Where the pod stands in its node's eviction order, if that node is under pressure."""
        pod = self.cluster.find_pod(namespace, name)
        record = self.records.get(pod.node_name) if pod is not None and pod.node_name else None
        if record is None or record.stats is None:
            return None
        mark = self.view.get(record.node.name)
        if not record.conditions and not record.under_pressure and mark is None:
            return None
        signal = None
        if not record.under_pressure and mark is not None and mark.conditions:
            signal = ORDER_SIGNAL_OF.get(mark.conditions[0])
        assessment = self.order(record, await self.pods_of(record), signal=signal)
        return standing(assessment, namespace, name, mark.policy if mark is not None else None)

    # ---- reporting --------------------------------------------------------------------------------

    def _report(self, problems: Iterable[str]) -> None:
        """Problems are logged when they appear, once while they last (a pass's are compared
        with the previous pass's)."""
        for problem in problems:
            if problem not in self._problems:
                log.warning("node usage unavailable", extra={"problem": problem})
            self._noticed.add(problem)

    def _end_pass(self) -> None:
        self._problems, self._noticed = self._noticed, set()

    def _gauges(self, now: float) -> None:
        counts: dict[str, int] = {}
        for record in self.records.values():
            for condition in record.conditions:
                counts[condition] = counts.get(condition, 0) + 1
        for condition in (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE):
            prom.nodes_under_pressure.labels(condition).set(counts.get(condition, 0))
        ages = [r.age(now) for r in self.records.values()]
        prom.node_usage_age.set(max((a for a in ages if a is not None), default=0.0))
        prom.nodes_without_usage.set(sum(1 for a in ages if a is None))
