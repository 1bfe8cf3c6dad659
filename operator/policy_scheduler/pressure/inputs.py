"""Read `pressure`'s input files into the model's plain data.

Nodes, Pods, NodeMetrics, PodMetrics and a KubeletConfiguration come from YAML files as
`kubectl get -o yaml` writes them (the simulate reader: `kind: List` accepted, terminal pods
left out, server-populated fields ignored, and here a key given twice is an error); the
kubelet's Summary API answers come from JSON files, one per node. A node's Summary wins over
its NodeMetrics, and then its pods' usage comes from the Summary too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.usage import (
    eviction_settings,
    kubelet_config_from_dict,
    node_metrics_from_dict,
    node_stats_from_metrics,
    node_stats_from_summary,
    pod_metrics_from_dict,
    pod_usage_from_metrics,
    pod_usage_from_summary,
    summary_from_dict,
)
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.pressure.assess import NodeInput
from policy_scheduler.scheduler.pressure.headroom import NodeUsage, NodeUsageStore
from policy_scheduler.scheduler.pressure.observations import NodeStats, PodUsage
from policy_scheduler.scheduler.pressure.pods import PodFacts, local_volume_names, pod_facts
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_CONFIG,
    SOURCE_KUBELET_CONFIG,
    EvictionConfig,
    ThresholdError,
    eviction_config,
)
from policy_scheduler.simulate.scenario import Document, Scenario, ScenarioError, load_scenario

NOTE_NO_CAPACITY = "node {node}: NodeMetrics but no status.capacity.memory, so memory.available has no data"


@dataclass(slots=True)
class PressureInputs:
    nodes: list[NodeInput] = field(default_factory=list)
    facts: list[PodFacts] = field(default_factory=list)
    usage: list[PodUsage | None] = field(default_factory=list)
    pod_node: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Summary:
    where: str
    summary: us.Summary


def _fail(where: str, exc: ConversionError) -> ScenarioError:
    field_path = f"{exc.path}: " if exc.path else ""
    return ScenarioError(f"{where}: {field_path}{exc.message}")


def _config_where(doc: Document) -> str:
    return f"{doc.file}: document {doc.index + 1}: KubeletConfiguration"


def _kubelet_config(scenario: Scenario) -> EvictionConfig:
    if not scenario.kubelet_configs:
        return DEFAULT_CONFIG
    first, *more = scenario.kubelet_configs
    if more:
        raise ScenarioError(
            f"{_config_where(more[0])}: a second KubeletConfiguration (the first is "
            f"{_config_where(first)}); one applies to every node"
        )
    where = _config_where(first)
    try:
        return eviction_config(eviction_settings(kubelet_config_from_dict(first.body)), SOURCE_KUBELET_CONFIG)
    except ConversionError as exc:
        raise _fail(where, exc) from None
    except ThresholdError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def read_summaries(paths: Iterable[str]) -> dict[str, _Summary]:
    """Summary API answers (`kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary`) by node."""
    found: dict[str, _Summary] = {}
    for path in paths:
        try:
            body: Any = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{path}: invalid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ScenarioError(f"{path}: expected the Summary API's JSON object")
        try:
            summary = summary_from_dict(body)
        except ConversionError as exc:
            raise _fail(f"{path}: Summary", exc) from None
        name = summary.node.node_name
        if not name:
            raise ScenarioError(f"{path}: Summary: node.nodeName: required")
        where = f"{path}: Summary of node {name}"
        if name in found:
            raise ScenarioError(f"{where}: a second Summary for the node (the first is {found[name].where})")
        found[name] = _Summary(where, summary)
    return found


def _metrics(
    scenario: Scenario,
) -> tuple[dict[str, tuple[Document, us.NodeMetrics]], dict[str, tuple[Document, us.PodMetrics]]]:
    nodes: dict[str, tuple[Document, us.NodeMetrics]] = {}
    pods: dict[str, tuple[Document, us.PodMetrics]] = {}
    for doc in scenario.usage_documents:
        try:
            if doc.body.get("kind") == "NodeMetrics":
                node = node_metrics_from_dict(doc.body)
                nodes[node.metadata.name] = (doc, node)
            else:
                pod = pod_metrics_from_dict(doc.body)
                pods[f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"] = (doc, pod)
        except ConversionError as exc:
            raise _fail(doc.where(), exc) from None
    return nodes, pods


def _summary_pod(summary: us.Summary, pod: Pod) -> tuple[int, us.SummaryPod] | None:
    """cachedStatsFunc matches stats to pods by UID; pods written without one match by name."""
    for i, stats in enumerate(summary.pods or ()):
        ref = stats.pod_ref
        if (ref.namespace or "default", ref.name) != (pod.namespace, pod.name):
            continue
        if pod.uid and ref.uid and ref.uid != pod.uid:
            return None  # stats of an earlier pod of that name
        return i, stats
    return None


def _node_stats(
    summary: _Summary | None, metrics: tuple[Document, us.NodeMetrics] | None, capacity: int | None
) -> NodeStats | None:
    if summary is not None:
        try:
            return node_stats_from_summary(summary.summary)
        except ConversionError as exc:
            raise _fail(summary.where, exc) from None
    if metrics is not None:
        try:
            return node_stats_from_metrics(metrics[1], capacity)
        except ConversionError as exc:
            raise _fail(metrics[0].where(), exc) from None
    return None


def _memory_capacity(stats: NodeStats | None, node_capacity: int | None) -> int | None:
    if stats is not None and stats.memory is not None:
        m = stats.memory
        if m.available_bytes is not None and m.working_set_bytes is not None:
            return m.available_bytes + m.working_set_bytes
    return node_capacity


@dataclass(slots=True)
class ScenarioUsage:
    """Usage of the scenario's nodes and of the running pods on them; None: no data."""

    config: EvictionConfig
    nodes: dict[str, NodeStats | None] = field(default_factory=dict)
    pods: dict[str, PodUsage | None] = field(default_factory=dict)  # by pod key, in input order
    notes: list[str] = field(default_factory=list)


def scenario_usage(
    scenario: Scenario, summaries: Mapping[str, _Summary] | None = None, only: Sequence[str] = ()
) -> ScenarioUsage:
    """Each node's NodeStats (its Summary, else its NodeMetrics and memory capacity) and each of
    its running pods' PodUsage (from the same source). ScenarioError on bad usage."""
    summaries = summaries or {}
    node_metrics, pod_metrics = _metrics(scenario)
    known = {node.name for node in scenario.nodes}
    out = ScenarioUsage(_kubelet_config(scenario))
    for name in sorted(set(summaries) - known):
        out.notes.append(f"{summaries[name].where}: no Node {name} in the input; left out")
    for name in sorted(set(node_metrics) - known):
        out.notes.append(f"{node_metrics[name][0].where()}: no Node {name} in the input; left out")
    for name in sorted(set(only) - known):
        raise ScenarioError(f"--node {name}: no Node {name} in the input")
    wanted = set(only) if only else known
    memory_limit: dict[str, int | None] = {}
    for node in scenario.nodes:
        if node.name not in wanted:
            continue
        capacity = scenario.node_memory_capacity.get(node.name)
        stats = _node_stats(summaries.get(node.name), node_metrics.get(node.name), capacity)
        if node.name not in summaries and node.name in node_metrics and capacity is None:
            out.notes.append(NOTE_NO_CAPACITY.format(node=node.name))
        out.nodes[node.name] = stats
        memory_limit[node.name] = _memory_capacity(stats, capacity)
    elsewhere = 0
    for pod in scenario.pods:
        if not pod.node_name:
            continue  # pending: on no node yet
        if pod.node_name not in out.nodes:
            elsewhere += pod.node_name not in known
            continue
        limit = memory_limit[pod.node_name]
        out.pods[pod.key] = _pod_usage(pod, summaries.get(pod.node_name), pod_metrics, limit)
    if elsewhere:
        out.notes.append(f"{elsewhere} pod(s) bound to nodes not in the input were left out")
    orphans = [] if only else [k for k in pod_metrics if k not in out.pods]
    if orphans:
        out.notes.append(f"{len(orphans)} PodMetrics of no running pod on a node in the input were left out")
    return out


def load(files: Sequence[str], summary_files: Sequence[str], only: Sequence[str] = ()) -> PressureInputs:
    """Everything `pressure` needs; ScenarioError (naming file, object and field) on bad input."""
    scenario = load_scenario(files, strict=True, admitted=True)
    usage = scenario_usage(scenario, read_summaries(summary_files), only)
    out = PressureInputs(notes=usage.notes)
    index: dict[str, int] = {}
    for name, stats in usage.nodes.items():
        index[name] = len(out.nodes)
        out.nodes.append(NodeInput(name, stats, usage.config))
    for pod in scenario.pods:
        if pod.key in usage.pods and pod.node_name in index:
            out.facts.append(pod_facts(pod))
            out.pod_node.append(index[pod.node_name])
            out.usage.append(usage.pods[pod.key])
    return out


def usage_store(scenario: Scenario) -> NodeUsageStore:
    """The scenario's usage for the scheduler (EvictionHeadroom, simulate's pressure notes): each
    node with data, its kubelet's thresholds, and the requests of the pods its sample covers."""
    usage = scenario_usage(scenario)
    measured: dict[str, list[Pod]] = {}
    for pod in scenario.pods:
        if usage.pods.get(pod.key) is not None:
            measured.setdefault(pod.node_name, []).append(pod)
    store = NodeUsageStore()
    for name, stats in usage.nodes.items():
        if stats is not None:
            store.set(name, NodeUsage.of(stats, usage.config, measured.get(name, [])))
    return store


def _pod_usage(
    pod: Pod,
    summary: _Summary | None,
    pod_metrics: dict[str, tuple[Document, us.PodMetrics]],
    memory_limit: int | None,
) -> PodUsage | None:
    if summary is not None:
        found = _summary_pod(summary.summary, pod)
        if found is None:
            return None
        i, stats = found
        try:
            return pod_usage_from_summary(stats, local_volume_names(pod), f"pods[{i}]", memory_limit)
        except ConversionError as exc:
            raise _fail(summary.where, exc) from None
    metrics = pod_metrics.get(pod.key)
    if metrics is None:
        return None
    doc, m = metrics
    try:
        return pod_usage_from_metrics(m, memory_limit)
    except ConversionError as exc:
        raise _fail(doc.where(), exc) from None
