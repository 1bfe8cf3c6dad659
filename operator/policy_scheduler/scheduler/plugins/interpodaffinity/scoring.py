"""PreScore / Score / NormalizeScore of InterPodAffinity (scoring.go).

topologyScore is kept as topology key → int64 array over label value codes, so Score is a
gather-and-sum over the candidate rows per key. PreScore cost: the incoming pod's preferred
terms iterate only their candidate pods (see index.py); placed pods' terms are visited per
matching term group (anchored on the incoming pod's labels), then numpy over the group's rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.interpodaffinity.counts import TopologyCounts
from policy_scheduler.scheduler.plugins.interpodaffinity.index import AffinityIndex, TermGroups
from policy_scheduler.scheduler.plugins.interpodaffinity.terms import PodTerms, WeightedTerm


@dataclass(slots=True)
class PreScoreState:
    """preScoreState: topology key → score per value code. `touched` is upstream's
    "some node produced a topoScore entry" (an entry may sum to zero)."""

    scores: TopologyCounts = field(default_factory=TopologyCounts)
    touched: bool = False

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


def has_preferred_constraints(pod: Pod) -> bool:
    a = pod.affinity
    if a is None:
        return False
    return bool(
        (a.pod_affinity is not None and a.pod_affinity.preferred)
        or (a.pod_anti_affinity is not None and a.pod_anti_affinity.preferred)
    )


def build_topology_score(
    index: AffinityIndex,
    pod: Pod,
    terms: PodTerms,
    ns_labels: Mapping[str, str] | None,
    hard_weight: int,
) -> PreScoreState:
    """processExistingPod summed over all placed pods, term by term instead of pod by pod."""
    state = PreScoreState()
    table = index.table
    # The incoming pod's preferred terms against placed pods (+weight affinity, -weight anti).
    for weighted, sign in _signed(terms.preferred_affinity, terms.preferred_anti_affinity):
        t = weighted.term
        rows = index.matching_rows(t)
        if rows:
            amounts = np.full(len(rows), weighted.weight * sign, dtype=np.int64)
            _add(state, table, t.topology_key, np.asarray(rows, dtype=np.intp), amounts)
    # Placed pods' terms against the incoming pod.
    if hard_weight > 0:
        _add_groups(state, table, index.required_affinity, pod, ns_labels, 1, hard_weight)
    _add_groups(state, table, index.preferred_affinity, pod, ns_labels, 1, None)
    _add_groups(state, table, index.preferred_anti_affinity, pod, ns_labels, -1, None)
    return state


def _signed(
    affinity: tuple[WeightedTerm, ...], anti: tuple[WeightedTerm, ...]
) -> list[tuple[WeightedTerm, int]]:
    return [(w, 1) for w in affinity] + [(w, -1) for w in anti]


def _add(state: PreScoreState, table: NodeTable, key: str, rows: Rows, amounts: IntArray) -> None:
    if state.scores.add_rows(table, key, rows, amounts):
        state.touched = True


def _add_groups(
    state: PreScoreState,
    table: NodeTable,
    groups: TermGroups,
    pod: Pod,
    ns_labels: Mapping[str, str] | None,
    sign: int,
    weight: int | None,
) -> None:
    if not len(groups):
        return
    for group in groups.matching(pod, ns_labels):
        rows, counts = group.arrays()
        w = group.weight if weight is None else weight
        _add(state, table, group.term.topology_key, rows, counts * (w * sign))


def score_rows(table: NodeTable, state: PreScoreState, rows: Rows) -> IntArray:
    """Score: sum over topology keys of the score at the node's value."""
    total = np.zeros(len(rows), dtype=np.int64)
    for key in state.scores.by_key:
        total += state.scores.lookup(key, table.label_codes(key)[rows])
    return total


def normalize(state: PreScoreState, scores: IntArray) -> IntArray:
    """NormalizeScore: min-max scaling to 0..100, all zero when every node scores the same."""
    if not state.touched or len(scores) == 0:
        return scores
    low = int(scores.min())
    diff = int(scores.max()) - low
    if diff <= 0:
        return np.zeros_like(scores)
    scaled = float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(diff))
    return scaled.astype(np.int64)
