"""Why each pod is pending or where it went: the last attempt's diagnosis, in bounded memory.

ScheduleOne reports every attempt through the CycleObserver hooks. The recorder keeps, per
pending pod, how many nodes each (plugin, reason) rejected (nodes a PreFilterResult skipped
included) and, per recently scheduled pod, the scores of its node and of the runners-up. No
per-node dump is kept: a pending pod costs a handful of counters however many nodes rejected it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.framework.outcomes import ScoreOutcome
from policy_scheduler.scheduler.framework.status import Status
from policy_scheduler.scheduler.lru import BoundedLru
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable, Rows

TOP_SCORES = 5  # feasible nodes whose scores are kept
MAX_REJECTIONS = 24  # distinct (plugin, reason) rows kept; the rest are summed into one
MAX_PENDING = 10_000
MAX_SCHEDULED = 2_000
SKIPPED_BY_PREFILTER = "PreFilterResult"  # plugin column for nodes a PreFilterResult left out
OTHER_REASONS = "(other reasons)"

PENDING = "pending"
SCHEDULED = "scheduled"
RUNNING = "running"  # no attempt on record: the pod is bound, and only its node's pressure is told


class CycleObserver(Protocol):
    """What ScheduleOne tells observers about each attempt (the core's only explain hook).

    The hooks do nothing by default, so an observer that subclasses this states only those it uses.
    """

    def attempt_failed(
        self, pod: Pod, profile: str, reason: str, message: str, num_nodes: int, diagnosis: Diagnosis | None
    ) -> None:
        return None

    def node_chosen(
        self,
        pod: Pod,
        profile: str,
        node_name: str,
        table: NodeTable,
        feasible: Rows | None,
        scores: ScoreOutcome | None,
        evaluated: int,
    ) -> None:
        return None

    def bound(self, info: QueuedPodInfo, profile: str, node_name: str) -> None:
        return None

    def algorithm_finished(self, profile: str, seconds: float) -> None:
        """The cycle found its node (upstream's scheduling_algorithm_duration_seconds)."""
        return None

    def permit_waited(self, result: str, seconds: float) -> None:
        """A pod Permit made wait was let go or rejected (permit_wait_duration_seconds)."""
        return None


@dataclass(frozen=True, slots=True)
class Rejection:
    plugin: str
    reason: str
    nodes: int


@dataclass(frozen=True, slots=True)
class NodeScore:
    node: str
    total: int
    by_plugin: dict[str, int]


@dataclass(frozen=True, slots=True)
class Explanation:
    """The last attempt for one pod (JSON-ready through to_json / from_json)."""

    namespace: str
    name: str
    profile: str
    state: str  # PENDING | SCHEDULED
    reason: str = ""  # Unschedulable, SchedulerError ("" when scheduled)
    message: str = ""
    num_nodes: int = 0
    rejections: tuple[Rejection, ...] = ()
    node: str = ""  # the chosen node
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    scores: tuple[NodeScore, ...] = ()  # the chosen node first, then the best others
    at: float = 0.0  # wall clock of the attempt
    source: str = "operator"  # "operator" (last attempt) or "recomputed" (from a snapshot)
    # Where the pod stands in its node's eviction order when that node is under pressure
    # (JSON-ready, filled outside the core: kube/pressure/standing.py).
    pressure: Mapping[str, Any] | None = None
    # Whether adding the pod's requests pushes its node (placed, nominated or considered)
    # below an eviction threshold (JSON-ready, filled outside the recorder:
    # scheduler/pressure/placement.py).
    placement: Mapping[str, Any] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "profile": self.profile,
            "state": self.state,
            "reason": self.reason,
            "message": self.message,
            "numNodes": self.num_nodes,
            "rejections": [
                {"plugin": r.plugin, "reason": r.reason, "nodes": r.nodes} for r in self.rejections
            ],
            "node": self.node,
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
            "scores": [
                {"node": s.node, "total": s.total, "byPlugin": dict(s.by_plugin)} for s in self.scores
            ],
            "at": self.at,
            "source": self.source,
            **({"pressure": dict(self.pressure)} if self.pressure is not None else {}),
            **({"placementPressure": dict(self.placement)} if self.placement is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Explanation:
        return cls(
            namespace=str(data["namespace"]),
            name=str(data["name"]),
            profile=str(data.get("profile", "")),
            state=str(data["state"]),
            reason=str(data.get("reason", "")),
            message=str(data.get("message", "")),
            num_nodes=int(data.get("numNodes", 0)),
            rejections=tuple(
                Rejection(str(r["plugin"]), str(r["reason"]), int(r["nodes"]))
                for r in data.get("rejections", ())
            ),
            node=str(data.get("node", "")),
            evaluated_nodes=int(data.get("evaluatedNodes", 0)),
            feasible_nodes=int(data.get("feasibleNodes", 0)),
            scores=tuple(
                NodeScore(str(s["node"]), int(s["total"]), {str(k): int(v) for k, v in s["byPlugin"].items()})
                for s in data.get("scores", ())
            ),
            at=float(data.get("at", 0.0)),
            source=str(data.get("source", "operator")),
            pressure=data["pressure"] if isinstance(data.get("pressure"), dict) else None,
            placement=data["placementPressure"] if isinstance(data.get("placementPressure"), dict) else None,
        )


def rejection_counts(
    num_nodes: int, diagnosis: Diagnosis, cap: int = MAX_REJECTIONS
) -> tuple[Rejection, ...]:
    """Nodes per (plugin, reason), most nodes first; the counting of fit_error_message, by plugin.

    A node rejected with several reasons (Insufficient cpu and memory) counts under each.
    """
    counts: Counter[tuple[str, str]] = Counter()
    # Thousands of nodes share a handful of statuses: count the statuses, then their reasons.
    for status, nodes in diagnosis.status_counts():
        _add(counts, status, nodes)
    absent = num_nodes - len(diagnosis.node_to_status)
    if absent > 0:
        _add(counts, diagnosis.absent_nodes_status, absent)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    rows = [Rejection(plugin, reason, nodes) for (plugin, reason), nodes in ranked[:cap]]
    rest = sum(nodes for _, nodes in ranked[cap:])
    if rest:
        rows.append(Rejection("", OTHER_REASONS, rest))
    return tuple(rows)


def _add(counts: Counter[tuple[str, str]], status: Status, nodes: int) -> None:
    plugin = status.plugin or SKIPPED_BY_PREFILTER
    for reason in status.reasons:
        counts[(plugin, reason)] += nodes


def top_scores(
    table: NodeTable, chosen: str, feasible: Rows | None, scores: ScoreOutcome | None, k: int = TOP_SCORES
) -> tuple[NodeScore, ...]:
    """The chosen node's scores first, then the best other feasible nodes (at most k in all)."""
    if feasible is None or scores is None or len(feasible) == 0:
        return (NodeScore(chosen, 0, {}),)
    total = scores.total
    # Best first without sorting every feasible node: partition, then sort the few.
    take = min(k + 1, len(total))
    best = np.argpartition(-total, take - 1)[:take] if take < len(total) else np.arange(len(total))
    best = best[np.argsort(-total[best], kind="stable")]
    chosen_pos = int(np.argmax(feasible == table.row(chosen)))
    order = [chosen_pos, *[i for i in best.tolist() if i != chosen_pos][: k - 1]]
    rows = feasible[order].tolist()
    return tuple(
        NodeScore(table.nodes[row].name, score, by_plugin)
        for row, score, by_plugin in zip(
            rows, total[order].tolist(), scores.plugin_scores_at(order), strict=True
        )
    )


def pending_summary(explanation: Explanation, cap: int = 512) -> str:
    """A compact one-liner for an annotation: '3/10 nodes: Insufficient cpu; 7/10: ...'."""
    if not explanation.rejections:
        return explanation.message[:cap]
    parts: list[str] = []
    for i, rejection in enumerate(explanation.rejections):
        nodes = f"{rejection.nodes}/{explanation.num_nodes}" + (" nodes" if i == 0 else "")
        parts.append(f"{nodes}: {rejection.reason}")
    text = "; ".join(parts)
    return text if len(text) <= cap else text[: cap - 3] + "..."


class DiagnosisRecorder(CycleObserver):
    """A CycleObserver that keeps explanations: LRU-bounded, a few hundred bytes per pod."""

    def __init__(
        self,
        max_pending: int = MAX_PENDING,
        max_scheduled: int = MAX_SCHEDULED,
        clock: Callable[[], float] = time.time,
        top: int = TOP_SCORES,
    ) -> None:
        self._pending: BoundedLru[str, Explanation] = BoundedLru(max_pending)
        self._scheduled: BoundedLru[str, Explanation] = BoundedLru(max_scheduled)
        self._chosen: dict[str, Explanation] = {}  # node chosen, binding not finished
        self.clock = clock
        self.top = top

    def __len__(self) -> int:
        return len(self._pending) + len(self._scheduled) + len(self._chosen)

    def get(self, namespace: str, name: str) -> Explanation | None:
        key = f"{namespace}/{name}"
        return self._chosen.get(key) or self._pending.get(key) or self._scheduled.get(key)

    def pending(self) -> Iterable[Explanation]:
        return list(self._pending.values())

    def forget(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        self._pending.pop(key)
        self._scheduled.pop(key)
        self._chosen.pop(key, None)

    # ---- CycleObserver ---------------------------------------------------------------------------

    def attempt_failed(
        self, pod: Pod, profile: str, reason: str, message: str, num_nodes: int, diagnosis: Diagnosis | None
    ) -> None:
        key = pod.key
        chosen = self._chosen.pop(key, None)
        rejections: tuple[Rejection, ...] = ()
        if diagnosis is not None:
            rejections = rejection_counts(num_nodes, diagnosis)
        elif chosen is not None:
            num_nodes = 1  # Reserve, Permit or binding turned the chosen node down
            rejections = (Rejection("", message, 1),)
        self._scheduled.pop(key)
        self._pending.put(
            key,
            Explanation(
                namespace=pod.namespace,
                name=pod.name,
                profile=profile,
                state=PENDING,
                reason=reason,
                message=message,
                num_nodes=num_nodes,
                rejections=rejections,
                node=chosen.node if chosen is not None else "",
                scores=chosen.scores if chosen is not None else (),
                at=self.clock(),
            ),
        )

    def node_chosen(
        self,
        pod: Pod,
        profile: str,
        node_name: str,
        table: NodeTable,
        feasible: Rows | None,
        scores: ScoreOutcome | None,
        evaluated: int,
    ) -> None:
        self._chosen[pod.key] = Explanation(
            namespace=pod.namespace,
            name=pod.name,
            profile=profile,
            state=SCHEDULED,
            num_nodes=len(table),
            node=node_name,
            evaluated_nodes=evaluated,
            feasible_nodes=len(feasible) if feasible is not None else 1,
            scores=top_scores(table, node_name, feasible, scores, self.top),
            at=self.clock(),
        )
        if len(self._chosen) > self._scheduled.cap:  # bindings that never report back
            self._chosen.pop(next(iter(self._chosen)))

    def bound(self, info: QueuedPodInfo, profile: str, node_name: str) -> None:
        key = info.pod.key
        chosen = self._chosen.pop(key, None)
        self._pending.pop(key)
        if chosen is not None:
            self._scheduled.put(key, chosen)


class Observers:
    """Fan one cycle's reports out to several observers (recorder, metrics)."""

    def __init__(self, *observers: CycleObserver) -> None:
        self.observers = observers

    def attempt_failed(
        self, pod: Pod, profile: str, reason: str, message: str, num_nodes: int, diagnosis: Diagnosis | None
    ) -> None:
        for observer in self.observers:
            observer.attempt_failed(pod, profile, reason, message, num_nodes, diagnosis)

    def node_chosen(
        self,
        pod: Pod,
        profile: str,
        node_name: str,
        table: NodeTable,
        feasible: Rows | None,
        scores: ScoreOutcome | None,
        evaluated: int,
    ) -> None:
        for observer in self.observers:
            observer.node_chosen(pod, profile, node_name, table, feasible, scores, evaluated)

    def bound(self, info: QueuedPodInfo, profile: str, node_name: str) -> None:
        for observer in self.observers:
            observer.bound(info, profile, node_name)

    def algorithm_finished(self, profile: str, seconds: float) -> None:
        for observer in self.observers:
            observer.algorithm_finished(profile, seconds)

    def permit_waited(self, result: str, seconds: float) -> None:
        for observer in self.observers:
            observer.permit_waited(result, seconds)
