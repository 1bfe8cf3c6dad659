"""`pressure`'s output: the JSON contract (`-o json`) and the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policy_scheduler.scheduler.framework.durations import go_duration
from policy_scheduler.scheduler.pressure.assess import (
    NodeAssessment,
    RankedPod,
    SignalAssessment,
    ThresholdCheck,
)
from policy_scheduler.scheduler.pressure.units import amount


def _check_json(check: ThresholdCheck) -> dict[str, Any]:
    t = check.threshold
    entry: dict[str, Any] = {
        "value": str(t.value),
        "kind": "hard" if t.hard else "soft",
        "quantity": check.level,
        "minReclaim": str(t.min_reclaim) if t.min_reclaim is not None else None,
        "target": check.target,
        "met": check.met,
    }
    if not t.hard:
        entry["gracePeriod"] = go_duration(t.grace_period)
        entry["graceRemainingSeconds"] = check.grace_remaining
    return entry


def _signal_json(s: SignalAssessment) -> dict[str, Any]:
    observed = s.observation
    return {
        "signal": s.signal,
        "condition": s.condition,
        "status": s.status,
        "available": observed.available if observed else None,
        "capacity": observed.capacity if observed else None,
        "thresholds": [_check_json(c) for c in s.checks],
    }


def _pod_json(r: RankedPod) -> dict[str, Any]:
    p = r.pod
    return {
        "namespace": p.namespace,
        "name": p.name,
        "position": r.position,
        "priority": p.priority,
        "qos": p.qos or None,
        "exceedsRequests": r.exceeds_requests,
        "usageAboveRequests": r.usage_above_requests,
        "frees": r.frees,
        "victim": r.victim,
        "neverEvicted": r.never_evicted,
    }


def node_json(n: NodeAssessment) -> dict[str, Any]:
    return {
        "name": n.name,
        "thresholdSource": n.threshold_source,
        "usageSource": n.usage_source,
        "conditions": list(n.conditions),
        "underPressure": list(n.under_pressure),
        "signals": [_signal_json(s) for s in n.signals],
        "noData": [s.signal for s in n.signals if s.observation is None and s.checks],
        "evictionSignal": n.eviction_signal,
        "evictionStartsInSeconds": n.eviction_starts_in,
        "killGracePeriodSeconds": n.kill_grace_period,
        "orderSignal": n.order_signal,
        "reclaimTarget": n.reclaim_target,
        "reclaimNeeded": n.reclaim_needed,
        "reclaimable": n.reclaimable,
        "evictionOrder": [_pod_json(r) for r in n.order],
        "notes": list(n.notes),
    }


def report_json(nodes: Sequence[NodeAssessment], notes: Sequence[str]) -> dict[str, Any]:
    """The public JSON contract: keep it stable."""
    return {"nodes": [node_json(n) for n in nodes], "notes": list(notes)}


def _threshold_text(s: SignalAssessment) -> str:
    parts = []
    for c in s.checks:
        t = c.threshold
        text = f"<{t.value}"
        if not t.hard:
            text += f" for {go_duration(t.grace_period)}"
        if t.min_reclaim is not None and (t.min_reclaim.quantity or t.min_reclaim.percentage):
            text += f" (+{t.min_reclaim})"
        parts.append(text)
    return ", ".join(parts) or "-"


def _status_text(s: SignalAssessment) -> str:
    met = [c for c in s.checks if c.met]
    if not met:
        return s.status
    if any(c.threshold.hard for c in met):
        return "PRESSURE (hard threshold met)"
    remaining = min(c.grace_remaining or 0.0 for c in met)
    return f"PRESSURE (soft threshold met; evicts in {go_duration(remaining)} if it holds)"


def _columns(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r))).rstrip() for r in rows]


def _order_heading(n: NodeAssessment) -> str:
    signal = n.order_signal
    if n.eviction_signal == signal and n.eviction_starts_in == 0:
        when = f"evicts now for {signal} (grace period {n.kill_grace_period}s)"
    elif n.eviction_signal == signal:
        starts = go_duration(n.eviction_starts_in or 0.0)
        when = f"evicts for {signal} in {starts} if the soft threshold holds"
        when += f" (grace period {n.kill_grace_period}s)"
    else:
        return f"eviction order if {signal} came under pressure:"
    if n.reclaim_target is not None:
        target, needed = amount(n.reclaim_target, signal), amount(n.reclaim_needed, signal)
        when += f", until {target} is available (must free {needed})"
    return when + ":"


def _mark(r: RankedPod) -> str:
    if r.never_evicted:
        return f"never evicted: {r.never_evicted}"
    return "EVICT" if r.victim else ""


def node_table(n: NodeAssessment) -> str:
    head = f"NODE {n.name}  thresholds: {n.threshold_source}  usage: {n.usage_source or 'none'}"
    head += f"  conditions: {', '.join(n.conditions) or 'none'}"
    lines = [head]
    rows: list[tuple[str, ...]] = [("SIGNAL", "AVAILABLE", "CAPACITY", "THRESHOLDS", "STATUS")]
    for s in n.signals:
        observed = s.observation
        rows.append(
            (
                s.signal,
                amount(observed.available if observed else None, s.signal),
                amount(observed.capacity if observed else None, s.signal),
                _threshold_text(s),
                _status_text(s),
            )
        )
    lines += _columns(rows)
    if n.order:
        lines.append("  " + _order_heading(n))
        signal = n.order_signal
        pods: list[tuple[str, ...]] = [("#", "POD", "PRIORITY", "QOS", "ABOVE REQUESTS", "FREES", "")]
        for r in n.order:
            pods.append(
                (
                    str(r.position),
                    r.pod.key,
                    str(r.pod.priority),
                    r.pod.qos or "-",
                    amount(r.usage_above_requests, signal),
                    amount(r.frees, signal),
                    _mark(r),
                )
            )
        lines += _columns(pods, "    ")
    lines += [f"  note: {note}" for note in n.notes]
    return "\n".join(lines) + "\n"


def report_table(nodes: Sequence[NodeAssessment]) -> str:
    return "\n".join(node_table(n) for n in nodes)
