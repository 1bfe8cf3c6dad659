"""PodDisruptionBudgets whose status is current: kube-scheduler's preemption reads the status
the disruption controller wrote, so a pod is only judged once that status is settled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

JSON = dict[str, Any]


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _selects(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    if pod["metadata"]["namespace"] != pdb["metadata"]["namespace"]:
        return False
    wanted = pdb["spec"]["selector"].get("matchLabels") or {}
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def settled(pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> bool:
    """The controller has counted the current pods (integer minAvailable budgets only)."""
    status = pdb.get("status") or {}
    if status.get("observedGeneration") != pdb["metadata"].get("generation"):
        return False
    healthy = sum(
        1 for p in pods if _selects(pdb, p) and not p["metadata"].get("deletionTimestamp") and _ready(p)
    )
    allowed = max(0, healthy - int(pdb["spec"]["minAvailable"]))
    return bool(status.get("currentHealthy", 0) == healthy and status.get("disruptionsAllowed", 0) == allowed)
