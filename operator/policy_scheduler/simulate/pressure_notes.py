"""simulate's node-pressure note: placements that leave a node below an eviction threshold.

Only with usage data in the snapshot (NodeMetrics and PodMetrics): a pod placed on a node is
taken to use what it requests, on top of the node's usage sample and the requests of the pods
on it that the sample does not cover (docs/pressure.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore, PlacementTracker


def pressure_notes(
    store: NodeUsageStore, bound: Sequence[Pod], placements: Sequence[tuple[Pod, str]]
) -> dict[str, list[str]]:
    """Pod key -> the thresholds its placement crosses, for `placements` in the order they were
    made; `bound` are the pods already on nodes before the simulation."""
    if not len(store):
        return {}
    tracker = PlacementTracker(store)
    on_node: dict[str, list[Pod]] = {}
    for pod in bound:
        on_node.setdefault(pod.node_name, []).append(pod)
    for node, pods in on_node.items():
        tracker.seed(node, pods)
    notes: dict[str, list[str]] = {}
    for pod, node in placements:
        found = tracker.place(node, pod)
        if found:
            notes[pod.key] = [c.describe(node) for c in found]
    return notes
