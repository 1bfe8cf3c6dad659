"""`policy-scheduler pressure --from-cluster`: the same assessment on a live cluster, read-only.

Nodes, pods and PriorityClasses are read as `simulate --from-cluster` reads them; usage from
metrics.k8s.io (NodeMetrics, and PodMetrics in one list) and, with --kubelet-proxy, each node's
kubelet Summary and /configz through nodes/proxy; thresholds as the operator takes them
(/configz, else the kubeletEvictionHard of the EvictionPolicy relieving the node, else the
kubelet's defaults). Nothing is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.kube.paths import NODES, PODS, PRIORITY_CLASSES
from policy_scheduler.kube.pressure.relief import relieving_policy
from policy_scheduler.kube.pressure.samples import NodeRecord, pod_inputs, sample_covers
from policy_scheduler.kube.pressure.sources import Get, KubeletReads, SourceUnavailable, UsageApi
from policy_scheduler.kube.pressure.standing import standing
from policy_scheduler.policy.constants import EVICTION_POLICY_PLURAL
from policy_scheduler.pressure.inputs import PressureInputs
from policy_scheduler.scheduler.model import Node
from policy_scheduler.scheduler.pressure.assess import assess
from policy_scheduler.scheduler.pressure.headroom import NodeUsage, NodeUsageStore
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig
from policy_scheduler.simulate.live_snapshot import SnapshotError, api_get, collections, read_snapshot
from policy_scheduler.simulate.policy_in_force import policy_in_force
from policy_scheduler.simulate.scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


class ClusterUnreadable(Exception):
    """The cluster could not be read (the message says why)."""


async def load_live(kubeconfig: str | None, only: Sequence[str], kubelet_proxy: bool) -> PressureInputs:
    """Everything `pressure` needs, from the cluster; ScenarioError for a --node it lacks,
    ClusterUnreadable when it cannot be read."""
    from kubernetes_asyncio.config import ConfigException

    from policy_scheduler.kube.client import CONNECTION_ERRORS, make_api_client

    unreadable: tuple[type[BaseException], ...] = (
        SnapshotError,
        ConfigException,
        OSError,
        *CONNECTION_ERRORS,
    )
    try:
        api = await make_api_client(kubeconfig)
    except unreadable as exc:
        raise ClusterUnreadable(str(exc)) from None
    try:
        return await _load(api, only, kubelet_proxy)
    except unreadable as exc:
        raise ClusterUnreadable(str(exc)) from None
    finally:
        await api.close()


async def _load(api: ApiClient, only: Sequence[str], kubelet_proxy: bool) -> PressureInputs:
    get = api_get(api)
    wanted = {NODES, PODS, PRIORITY_CLASSES}
    sources = [c for c in collections() if c.path in wanted or c.path.endswith(f"/{EVICTION_POLICY_PLURAL}")]
    scenario, _ = await read_snapshot(get, sources=sources)
    usage = UsageApi(get, kubelet_proxy=kubelet_proxy)
    out = PressureInputs()
    known = {n.name for n in scenario.nodes}
    for name in only:
        if name not in known:
            raise ScenarioError(f"--node {name}: no Node {name} in the cluster")
    nodes = [n for n in scenario.nodes if not only or n.name in only]
    node_metrics: dict[str, us.NodeMetrics] | None
    pod_metrics: dict[str, us.PodMetrics] = {}
    try:
        node_metrics = await usage.node_metrics()
        pod_metrics = await usage.all_pod_metrics()
    except SourceUnavailable as exc:
        node_metrics = None
        out.notes.append(str(exc))
    reads: list[KubeletReads | None] = [None] * len(nodes)
    if kubelet_proxy:
        reads = list(await asyncio.gather(*(usage.kubelet(n.name, config=True) for n in nodes)))
    kubelet_config = _policy_thresholds(scenario)
    now = time.time()
    for node, read in zip(nodes, reads, strict=True):
        record = NodeRecord(node)
        record.update(node, node_metrics, read, kubelet_config(node), read_at=now, now=now)
        out.notes += [p for p in record.problems if "no usage for node" not in p]
        pods = [p for p in scenario.pods if p.node_name == node.name]
        inputs = pod_inputs(record, pods, pod_metrics)
        out.notes += inputs.problems
        index = len(out.nodes)
        out.nodes.append(record.input())
        out.facts += inputs.facts
        out.usage += inputs.usage
        out.pod_node += [index] * len(inputs.facts)
    return out


def _policy_thresholds(scenario: Scenario) -> Callable[[Node], EvictionConfig | None]:
    """kubeletEvictionHard of the EvictionPolicy relieving each node, as the operator takes it."""
    relieving = policy_in_force([], scenario.eviction_policies).stores[1].relieving()

    def of(node: Node) -> EvictionConfig | None:
        settings = relieving_policy(relieving, node)
        return settings.relief.kubelet if settings is not None and settings.relief is not None else None

    return of


async def live_standing(get: Get, scenario: Scenario, namespace: str, name: str) -> dict[str, Any] | None:
    """`explain`'s recomputed answer for a pod on a node under pressure: where it stands in the
    node's eviction order now (metrics.k8s.io only); None when the node is not under pressure or
    its usage cannot be read."""
    pod = next((p for p in scenario.pods if (p.namespace, p.name) == (namespace, name)), None)
    node = next((n for n in scenario.nodes if pod is not None and n.name == pod.node_name), None)
    if pod is None or node is None:
        return None
    usage = UsageApi(get, kubelet_proxy=False)
    now = time.time()
    record = NodeRecord(node)
    try:
        record.update(
            node, await usage.node_metrics(), None, _policy_thresholds(scenario)(node), read_at=now, now=now
        )
        if record.stats is None:
            return None
        pods = [p for p in scenario.pods if p.node_name == node.name]
        inputs = pod_inputs(record, pods, await usage.pod_metrics((p.namespace, p.name) for p in pods))
    except SourceUnavailable:
        return None
    n = len(inputs.facts)
    assessment = assess([record.input()], inputs.facts, inputs.usage, [0] * n, now=now)[0]
    if not assessment.conditions:
        return None
    return standing(assessment, namespace, name)


async def live_usage(get: Get, scenario: Scenario) -> NodeUsageStore:
    """The nodes' usage as the operator keeps it for the scheduler (NodeMetrics; thresholds of
    the EvictionPolicy relieving the node, else the kubelet's defaults), for `explain`'s
    recomputed answer; empty when metrics.k8s.io cannot be read."""
    store = NodeUsageStore()
    try:
        metrics = await UsageApi(get, kubelet_proxy=False).node_metrics()
    except SourceUnavailable:
        return store
    thresholds = _policy_thresholds(scenario)
    now = time.time()
    for node in scenario.nodes:
        record = NodeRecord(node)
        record.update(node, metrics, None, thresholds(node), read_at=now, now=now)
        if record.stats is None:
            continue
        measured = [p for p in scenario.pods if p.node_name == node.name and sample_covers(p, record.time)]
        store.set(node.name, NodeUsage.of(record.stats, record.config, measured))
    return store
