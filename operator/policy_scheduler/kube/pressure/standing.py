"""Where a pod stands in its node's eviction order: what `explain` says about a pod on a node
under pressure (the operator's answer and the recomputed one alike)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from policy_scheduler.scheduler.pressure.assess import NodeAssessment
from policy_scheduler.scheduler.pressure.units import amount

AHEAD_SHOWN = 5  # pods ahead of it named in the answer


def standing(
    assessment: NodeAssessment, namespace: str, name: str, relief: str | None = None
) -> dict[str, Any] | None:
    """The pod's place in the order of its node's assessment, JSON-ready; None when the pod is
    not in it. `relief`: the EvictionPolicy relieving the node, if one does."""
    order = assessment.order
    found = next((r for r in order if (r.pod.namespace, r.pod.name) == (namespace, name)), None)
    if found is None:
        return None
    signal = assessment.order_signal
    ahead = [r for r in order if r.position < found.position]
    return {
        "node": assessment.name,
        "conditions": list(assessment.conditions),
        "underPressure": list(assessment.under_pressure),
        "thresholdSource": assessment.threshold_source,
        "usageSource": assessment.usage_source,
        "signal": signal,
        "evicting": assessment.eviction_signal == signal,
        "position": found.position,
        "of": len(order),
        "victim": found.victim,
        "neverEvicted": found.never_evicted,
        "frees": found.frees,
        "freesText": amount(found.frees, signal),
        "usageAboveRequests": found.usage_above_requests,
        "reclaimNeeded": assessment.reclaim_needed,
        "reclaimNeededText": amount(assessment.reclaim_needed, signal),
        "ahead": [f"{r.pod.namespace}/{r.pod.name}" for r in ahead[:AHEAD_SHOWN]],
        "relief": relief,
    }


def standing_lines(s: dict[str, Any]) -> list[str]:
    """The standing as explain's table shows it."""
    head = f"Pressure: node {s['node']}"
    conditions = ", ".join(s.get("conditions") or []) or "none"
    head += (
        f" (conditions: {conditions}; thresholds: {s.get('thresholdSource')}; usage: {s.get('usageSource')})"
    )
    place = f"{s['position']} of {s['of']} in the order the kubelet evicts pods for {s['signal']}"
    if s.get("neverEvicted"):
        verdict = f"never evicted: {s['neverEvicted']}"
    elif s.get("victim"):
        verdict = f"among the pods the kubelet would evict now (must free {s.get('reclaimNeededText')})"
    else:
        verdict = "not among the pods the kubelet would evict now"
    lines = [head, f"          {place}; {verdict}; evicting it frees {s.get('freesText')}"]
    if s.get("ahead"):
        lines.append(f"          ahead of it: {', '.join(s['ahead'])}")
    if s.get("relief"):
        lines.append(f"          relieved under EvictionPolicy {s['relief']}")
    return lines


ROLES: Mapping[str, str] = MappingProxyType(
    {"chosen": "placed on", "nominated": "nominated to", "considered": "considered for"}
)


def placement_lines(p: dict[str, Any]) -> list[str]:
    """The placement check (scheduler/pressure/placement.py) as explain's table shows it."""
    lines: list[str] = []
    for entry in p.get("nodes") or []:
        node = entry.get("node", "")
        head = f"Headroom: {ROLES.get(entry.get('role', ''), entry.get('role', ''))} {node}"
        body: list[str] = []
        if not entry.get("usage"):
            body.append(
                f"no usage data for node {node}: whether its requests push it below a threshold is unknown"
            )
        else:
            usage, thresholds = entry.get("usageSource") or "-", entry.get("thresholdSource") or "-"
            head += f" (usage: {usage}; thresholds: {thresholds})"
            checks = entry.get("checks") or []
            if not checks:
                body.append(
                    "its requests draw on no signal with a threshold (no memory or ephemeral-storage request)"
                )
            for check in checks:
                text = str(check.get("text", ""))
                if check.get("crosses"):
                    text += f": {check.get('shortByText')} short"
                body.append(text)
        body += [f"EvictionHeadroom: {reason}" for reason in entry.get("evictionHeadroom") or []]
        lines.append(head)
        lines += [f"          {line}" for line in body]
    return lines
