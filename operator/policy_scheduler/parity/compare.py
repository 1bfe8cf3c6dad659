"""Judge our decision for one pod against kube-scheduler's, independent of tie-break seeds.

The decision agrees when both bind and the reference's node is one of our top-scoring
nodes, both leave the pod pending, or both preempt with the same victims on a node we rank
as good as any. Feasible sets, score vectors and failure messages are checked too, as
stricter secondary criteria.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from policy_scheduler.parity.ours import Decision

# A successful preemption's message names the node it chose (from v1.37).
_PLACEMENT = re.compile(r"found a potential placement for pod on node \S+, preempting \d+ victims$")


@dataclass(slots=True)
class Reference:
    """What kube-scheduler did with one pod, from its log."""

    outcome: str  # bound | unschedulable | preempt | gated | error | timeout
    node: str = ""
    feasible: int = 0
    scores: dict[str, int] = field(default_factory=dict)
    plugin_scores: dict[str, dict[str, int]] = field(default_factory=dict)
    message: str = ""
    victims: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Verdict:
    decision: bool | None  # None: the reference gave no usable answer
    feasible: bool | None = None
    scores: bool | None = None
    message: bool | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return bool(self.decision) and all(v is not False for v in (self.feasible, self.scores, self.message))


def judge(ref: Reference, ours: Decision) -> Verdict:
    if ref.outcome in ("error", "timeout"):
        return Verdict(None, notes=[f"reference {ref.outcome}: {ref.message}"])
    if ref.outcome == "gated" or ours.outcome == "gated":
        return Verdict(ref.outcome == ours.outcome, notes=_outcomes(ref, ours))
    if ref.outcome == "bound":
        return _judge_bound(ref, ours)
    if ref.outcome == "preempt":
        return _judge_preempt(ref, ours)
    verdict = Verdict(ours.outcome == "unschedulable", notes=_outcomes(ref, ours))
    if ours.outcome in ("unschedulable", "preempt"):
        verdict.message = ours.message == ref.message
        if not verdict.message:
            verdict.notes.append(f"message:\n  kube: {ref.message}\n  ours: {ours.message}")
    return verdict


def _outcomes(ref: Reference, ours: Decision) -> list[str]:
    if ref.outcome == ours.outcome:
        return []
    detail = ref.node or ref.message
    return [f"outcome: kube {ref.outcome} {detail}; ours {ours.outcome} {sorted(ours.best) or ours.message}"]


def _judge_bound(ref: Reference, ours: Decision) -> Verdict:
    if ours.outcome != "bound":
        return Verdict(False, notes=_outcomes(ref, ours))
    verdict = Verdict(ref.node in ours.best)
    if not verdict.decision:
        verdict.notes.append(f"node: kube {ref.node}; ours best {sorted(ours.best)}")
    if ref.scores:
        verdict.feasible = set(ref.scores) == set(ours.feasible)
        verdict.scores = ref.scores == ours.scores
    else:
        verdict.feasible = ref.feasible == len(ours.feasible)
    if verdict.feasible is False:
        verdict.notes.append(
            f"feasible: kube {sorted(ref.scores) or ref.feasible}; ours {sorted(ours.feasible)}"
        )
    if verdict.scores is False:
        verdict.notes.extend(_score_diff(ref, ours))
    return verdict


def _score_diff(ref: Reference, ours: Decision) -> list[str]:
    notes = []
    for node in sorted(set(ref.scores) | set(ours.scores)):
        kube_total, our_total = ref.scores.get(node), ours.scores.get(node)
        if kube_total == our_total:
            continue
        kube_plugins = ref.plugin_scores.get(node, {})
        our_plugins = ours.plugin_scores.get(node, {})
        diffs = [
            f"{p} kube={kube_plugins.get(p)} ours={our_plugins.get(p)}"
            for p in sorted(set(kube_plugins) | set(our_plugins))
            if kube_plugins.get(p, 0) != our_plugins.get(p, 0)
        ]
        notes.append(f"score {node}: kube={kube_total} ours={our_total} ({'; '.join(diffs)})")
    return notes


def _judge_preempt(ref: Reference, ours: Decision) -> Verdict:
    if ours.outcome != "preempt":
        return Verdict(False, notes=_outcomes(ref, ours))
    verdict = Verdict(ref.node in ours.nominees)
    if not verdict.decision:
        verdict.notes.append(f"nominated: kube {ref.node}; ours any of {sorted(ours.nominees)}")
    ours_victims = sorted(ours.victims.get(ref.node, []))
    if sorted(ref.victims) != ours_victims:
        verdict.decision = False
        verdict.notes.append(f"victims on {ref.node}: kube {sorted(ref.victims)}; ours {ours_victims}")
    message = _nominating(ours, ref.node) if verdict.decision else ours.message
    verdict.message = message == ref.message
    if not verdict.message:
        verdict.notes.append(f"message:\n  kube: {ref.message}\n  ours: {ours.message}")
    return verdict


def _nominating(ours: Decision, node: str) -> str:
    """Our message had we nominated `node`, one of the nodes we tie for (which one is cache
    order, docs/parity.md): a successful preemption's message names the node and its victims."""
    victims = len(ours.victims.get(node, []))
    placement = f"found a potential placement for pod on node {node}, preempting {victims} victims"
    return _PLACEMENT.sub(placement, ours.message)
