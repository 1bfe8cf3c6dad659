"""explain's placement check: whether adding a pod's requests to the node it was placed on,
nominated to or (while it waits) considered for pushes that node below an eviction threshold,
by the check simulate reports (headroom.PlacementTracker), and what EvictionHeadroom says of
the node when the pod's profile scores with it. JSON-ready, as the operator serves it."""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.diagnosis_recorder import PENDING, SCHEDULED, Explanation
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.evictionheadroom import EvictionHeadroom
from policy_scheduler.scheduler.pressure.headroom import PlacementTracker
from policy_scheduler.scheduler.pressure.units import amount

CHOSEN = "chosen"
NOMINATED = "nominated"
CONSIDERED = "considered"


def placement_targets(explanation: Explanation, nominated: str) -> list[tuple[str, str]]:
    """(node, role): the node the pod was placed on, else the one it is nominated to or was
    chosen and then turned down on, else the best-scoring nodes it was considered for."""
    if explanation.state == SCHEDULED:
        return [(explanation.node, CHOSEN)] if explanation.node else []
    if explanation.state != PENDING:
        return []
    found = [(nominated, NOMINATED)] if nominated else []
    if explanation.node and explanation.node != nominated:
        found.append((explanation.node, CHOSEN))
    return found or [(s.node, CONSIDERED) for s in explanation.scores]


def _headroom_plugin(engine: Engine, pod: Pod) -> EvictionHeadroom | None:
    framework = engine.frameworks.get(pod.scheduler_name)
    if framework is None:
        return None
    return next((p for p, _ in framework.points.score if isinstance(p, EvictionHeadroom)), None)


def placement_pressure(engine: Engine, explanation: Explanation, pod: Pod) -> dict[str, Any] | None:
    """The check for each of the pod's target nodes; None when there is nothing to tell (no
    usage data at all and no EvictionHeadroom in the pod's profile, or no target node)."""
    store = engine.base_handle.services.node_usage
    plugin = _headroom_plugin(engine, pod)
    if not len(store) and plugin is None:
        return None
    nominated = pod.nominated_node_name or engine.queue.nominator.nominated_node_name(pod) or ""
    table = engine.table
    nodes: list[dict[str, Any]] = []
    for node, role in placement_targets(explanation, nominated):
        if node not in table:
            continue
        tracker = PlacementTracker(store)
        # The pod's own requests count once: they are added below, bound there or not.
        tracker.seed(node, [p for p in table.pods_on(table.row(node)) if p.key != pod.key])
        checks = tracker.check(node, pod)
        usage = store.get(node)
        entry: dict[str, Any] = {"node": node, "role": role, "usage": usage is not None}
        if usage is not None and checks is not None:
            entry |= {
                "usageSource": usage.source,
                "thresholdSource": usage.threshold_source,
                "sampleTime": usage.time,
                "checks": [
                    {
                        "signal": c.signal,
                        "availableBefore": c.available_before,
                        "availableAfter": c.available_after,
                        "threshold": c.level,
                        "crosses": c.crosses,
                        "shortBy": c.short_by,
                        "shortByText": amount(c.short_by, c.signal),
                        "text": c.describe(node),
                    }
                    for c in checks
                ],
            }
        if plugin is not None:
            entry["evictionHeadroom"] = plugin.reasons(pod, node)
        nodes.append(entry)
    if not nodes:
        return None
    crossing = any(c["crosses"] for n in nodes for c in n.get("checks", ()))
    return {"nodes": nodes, "crosses": crossing}
