"""PreScore / Score / NormalizeScore of PodTopologySpread (upstream scoring.go), over rows.

Domains are label value codes. Upstream reads `node.Labels[key]`, which is "" for a node
without the key; with system defaulting such nodes are not ignored, so they form the "" domain
(shared with nodes labelled key="") — `domain_codes` reproduces that.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import ABSENT, HOSTNAME_LABEL, BoolArray, IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.podtopologyspread.common import (
    Constraint,
    InclusionMasks,
    PodIndex,
    node_has_keys,
)

FloatArray = npt.NDArray[np.float64]


def domain_codes(table: NodeTable, key: str) -> tuple[npt.NDArray[np.intp], int]:
    """Per-row domain of `key` for every row, a missing label mapping to the "" domain."""
    codes = table.label_codes(key).astype(np.intp)
    size = len(table.label_values(key))
    empty = table.label_value_code(key, "")
    codes[codes == ABSENT] = size if empty is None else empty
    return codes, size + 1


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


@dataclass(slots=True)
class PreScoreState:
    constraints: Sequence[Constraint]
    require_all_topologies: bool
    # per constraint: matching pods by domain code (None for hostname: counted per node in Score)
    counts: list[IntArray | None]
    present: list[BoolArray | None]  # which domain codes the candidate nodes span
    weights: list[float]
    ignored_rows: Rows  # IgnoredNodes: candidate rows lacking a topology key (sorted)
    # set by score(): which of the rows it scored are ignored, for normalize_score
    ignored: BoolArray | None = None

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream

    def domain_counts(self, i: int, table: NodeTable) -> dict[str, int]:
        """TopologyValueToPodCounts[i] keyed by label value ("" for nodes without the key)."""
        counts, present = self.counts[i], self.present[i]
        if counts is None or present is None:
            return {}
        values = table.label_values(self.constraints[i].topology_key)
        return {(values[c] if c < len(values) else ""): int(counts[c]) for c in np.flatnonzero(present)}


def compute_pre_score_state(
    table: NodeTable,
    index: PodIndex,
    pod: Pod,
    constraints: Sequence[Constraint],
    rows: Rows,
    require_all_topologies: bool,
) -> PreScoreState:
    """initPreScoreState over the filtered `rows`, then the counts over every node."""
    candidates, ignored_rows = rows, rows[:0]
    if require_all_topologies:
        has_keys = node_has_keys(table, constraints, rows)
        candidates, ignored_rows = rows[has_keys], np.sort(rows[~has_keys])
    all_rows = np.arange(table.n, dtype=np.intp)
    all_eligible = (
        node_has_keys(table, constraints, all_rows)
        if require_all_topologies
        else np.ones(table.n, dtype=np.bool_)
    )
    inclusion = InclusionMasks(table, pod, all_rows)
    counts: list[IntArray | None] = []
    present: list[BoolArray | None] = []
    weights: list[float] = []
    for c in constraints:
        if c.topology_key == HOSTNAME_LABEL:
            counts.append(None)
            present.append(None)
            weights.append(topology_normalizing_weight(len(candidates)))
            continue
        codes, size = domain_codes(table, c.topology_key)
        domains = np.bincount(codes[candidates], minlength=size) > 0
        # Only nodes in a domain of some candidate contribute (upstream skips the others).
        contributing = all_eligible & inclusion.of(c) & domains[codes]
        per_row = index.match_counts(table, c.selector, pod.namespace)[contributing]
        counts.append(np.bincount(codes[contributing], weights=per_row, minlength=size).astype(np.int64))
        present.append(domains)
        weights.append(topology_normalizing_weight(int(np.count_nonzero(domains))))
    return PreScoreState(constraints, require_all_topologies, counts, present, weights, ignored_rows)


def _round_half_away(values: FloatArray) -> IntArray:
    """math.Round for non-negative values (not banker's rounding)."""
    whole = np.trunc(values)
    return (whole + (values - whole >= 0.5)).astype(np.int64)


def score_rows(table: NodeTable, index: PodIndex, state: PreScoreState, pod: Pod, rows: Rows) -> IntArray:
    """Score: per node, the sum over constraints of count*weight + (maxSkew-1), rounded."""
    ignored = np.isin(rows, state.ignored_rows)
    state.ignored = ignored
    total = np.zeros(len(rows), dtype=np.float64)
    for i, c in enumerate(state.constraints):
        labelled = table.label_codes(c.topology_key)[rows] != ABSENT
        counts = state.counts[i]
        if counts is None:
            cnt = index.match_counts(table, c.selector, pod.namespace)[rows]
        else:
            codes = domain_codes(table, c.topology_key)[0][rows]
            known = codes < len(counts)  # a value that appeared after PreScore is no domain
            cnt = np.where(known, counts[np.where(known, codes, 0)], 0)
        part = cnt.astype(np.float64) * state.weights[i] + float(c.max_skew - 1)
        total = np.where(labelled, total + part, total)
    return np.where(ignored, 0, _round_half_away(total))


def normalize(state: PreScoreState, scores: IntArray) -> IntArray:
    """NormalizeScore: reversed against max and min; ignored nodes get 0."""
    ignored = state.ignored
    if ignored is None or len(ignored) != len(scores):
        ignored = np.zeros(len(scores), dtype=np.bool_)
    valid = ~ignored
    if not valid.any():
        return np.zeros(len(scores), dtype=np.int64)
    max_score = max(int(scores[valid].max()), 0)
    min_score = int(scores[valid].min())
    if max_score == 0:
        return np.where(valid, MAX_NODE_SCORE, 0).astype(np.int64)
    normalized = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
    return np.where(valid, normalized, 0).astype(np.int64)
