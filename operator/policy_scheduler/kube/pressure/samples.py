"""Live usage into the core model's inputs: each node's stats from its kubelet's Summary, else
its NodeMetrics; its pods' usage from the same source; its thresholds from the kubelet's
/configz, else from the EvictionPolicy that relieves it, else the kubelet's defaults.

A figure that cannot be real (negative, beyond the node's memory, more free than the
filesystem's size) leaves the node or the pod without data and says so, naming the field: the
model never ranks on it, and relief never acts on it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.usage import eviction_settings, memory_limit, usage_of_node, usage_of_pod
from policy_scheduler.kube.pressure.sources import KubeletReads
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.pressure.assess import NodeInput
from policy_scheduler.scheduler.pressure.manager import ManagerState
from policy_scheduler.scheduler.pressure.observations import NodeStats, PodUsage, make_signal_observations
from policy_scheduler.scheduler.pressure.pods import PodFacts, pod_facts
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_CONFIG,
    SOURCE_KUBELET_CONFIGZ,
    EvictionConfig,
    ThresholdError,
    eviction_config,
)

log = logging.getLogger(__name__)


def source_of(summary: us.Summary | None, metrics: us.NodeMetrics | None) -> str:
    if summary is not None:
        return f"Summary of node {summary.node.node_name}"
    if metrics is not None:
        return f"NodeMetrics {metrics.metadata.name}"
    return ""


def read_node_stats(
    node: Node, metrics: us.NodeMetrics | None, summary: us.Summary | None
) -> tuple[NodeStats | None, str | None]:
    """The node's stats, or None and why."""
    try:
        stats = usage_of_node(summary, metrics, node.memory_capacity)
    except ConversionError as exc:
        return None, f"{source_of(summary, metrics)}: {exc}"
    if stats is None:
        return None, f"no usage for node {node.name} (no NodeMetrics, no Summary)"
    if summary is None and stats.memory is None:
        return stats, f"node {node.name}: NodeMetrics without memory, or no status.capacity.memory"
    return stats, None


def sample_time(stats: NodeStats | None) -> float | None:
    """When the sample was taken: the oldest of its signals' times."""
    if stats is None:
        return None
    times = [o.time for o in make_signal_observations(stats).values() if o.time is not None]
    return min(times) if times else None


def sample_covers(pod: Pod, when: float | None) -> bool:
    """Whether a sample taken at `when` can include the pod (created before it)."""
    created = pod.creation_timestamp
    return when is None or not created or created <= when


def configz_config(node: str, config: us.KubeletConfiguration) -> tuple[EvictionConfig | None, str | None]:
    """The node's eviction config from its /configz, or None and why."""
    try:
        return eviction_config(eviction_settings(config), SOURCE_KUBELET_CONFIGZ), None
    except (ConversionError, ThresholdError) as exc:
        return None, f"node {node}: nodes/proxy/configz: {exc}"


@dataclass(slots=True)
class NodeRecord:
    """What is known of one node's usage and thresholds, kept between polls."""

    node: Node
    stats: NodeStats | None = None
    summary: us.Summary | None = None  # the kubelet's Summary behind `stats`, if any
    time: float | None = None  # unix time the sample was taken
    configz: EvictionConfig | None = None
    configz_read: float | None = None  # monotonic time of the last /configz read
    config: EvictionConfig = DEFAULT_CONFIG  # in force: /configz, the policy, else defaults
    state: ManagerState = field(default_factory=ManagerState)  # the kubelet's, as modelled
    previous: ManagerState = field(default_factory=ManagerState)  # before the last pass
    conditions: tuple[str, ...] = ()  # the kubelet's, as modelled
    under_pressure: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def age(self, now: float) -> float | None:
        return None if self.time is None else now - self.time

    def fresh(self, now: float, max_age: float) -> bool:
        age = self.age(now)
        return self.stats is not None and age is not None and age <= max_age

    def update(
        self,
        node: Node,
        metrics: Mapping[str, us.NodeMetrics] | None,
        reads: KubeletReads | None,
        policy: EvictionConfig | None,
        *,
        read_at: float,
        now: float,
    ) -> bool:
        """Take this poll's reads (None: that source was not read or failed). A sample is never
        replaced by nothing: without a new one the last one stays, and ages. True when the sample
        or the thresholds changed."""
        self.node = node
        problems = list(reads.problems) if reads is not None else []
        if reads is not None and reads.config is not None:
            self.configz, problem = configz_config(node.name, reads.config)
            self.configz_read = read_at
            problems += [problem] if problem else []
        summary = reads.summary if reads is not None else None
        stats, problem = (None, None)
        if summary is not None or metrics is not None:
            stats, problem = read_node_stats(
                node, metrics.get(node.name) if metrics is not None else None, summary
            )
        problems += [problem] if problem else []
        self.problems = tuple(problems)
        config = self.configz or policy or DEFAULT_CONFIG
        changed = config != self.config
        self.config = config
        if stats is not None:
            taken = sample_time(stats) or now
            if taken != self.time or stats != self.stats:
                self.stats, self.summary, self.time = stats, summary, taken
                changed = True
        return changed

    def input(self, config: EvictionConfig | None = None, state: ManagerState | None = None) -> NodeInput:
        return NodeInput(self.node.name, self.stats, config or self.config, state or self.previous)


@dataclass(slots=True)
class PodInputs:
    """A node's pods as the model ranks them."""

    pods: list[Pod] = field(default_factory=list)
    facts: list[PodFacts] = field(default_factory=list)
    usage: list[PodUsage | None] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def pod_inputs(record: NodeRecord, pods: Sequence[Pod], metrics: Mapping[str, us.PodMetrics]) -> PodInputs:
    """The node's pods with their usage (from its Summary, else their PodMetrics); a pod whose
    figures cannot be real has no usage, and a problem says why."""
    out = PodInputs()
    limit = memory_limit(record.stats, record.node.memory_capacity)
    for pod in pods:
        try:
            usage = usage_of_pod(pod, record.summary, metrics.get(pod.key), limit)
        except ConversionError as exc:
            usage = None
            where = f"Summary of node {record.node.name}" if record.summary else f"PodMetrics {pod.key}"
            out.problems.append(f"{where}: {exc}")
        out.pods.append(pod)
        out.facts.append(pod_facts(pod))
        out.usage.append(usage)
    return out
