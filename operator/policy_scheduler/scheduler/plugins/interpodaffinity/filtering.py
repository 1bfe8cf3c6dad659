"""PreFilter / Filter / PreFilterExtensions of InterPodAffinity (filtering.go).

Complexity per cycle (P = placed pods, N = rows):
* existing pods' required anti-affinity: O(incoming pod labels + anchored term groups that may
  match + unanchored groups) Python, then numpy over the rows of the matching groups;
* incoming pod's required terms: Python over the candidate pods of each term only (pods in
  the term's namespaces carrying its cheapest In/Exists label), never over all P;
* Filter: numpy over `rows`, one label-code gather per topology key involved.
With neither the pod nor any placed pod having required terms, PreFilter returns Skip after
O(1) work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from policy_scheduler.scheduler.framework.interfaces import FilterResult
from policy_scheduler.scheduler.framework.status import Status, unresolvable, unschedulable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import ABSENT, NodeTable, Rows
from policy_scheduler.scheduler.plugins.interpodaffinity.counts import Codes, TopologyCounts
from policy_scheduler.scheduler.plugins.interpodaffinity.index import AffinityIndex
from policy_scheduler.scheduler.plugins.interpodaffinity.terms import (
    PodTerms,
    matches_all,
    parse_pod_terms,
)

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_STATUSES: tuple[Status, ...] = (
    unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH),
    unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
    unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH),
)


@dataclass(slots=True)
class PreFilterState:
    """preFilterState: the three topology-pair counts plus the incoming pod's resolved terms."""

    pod: Pod
    terms: PodTerms  # incoming pod, namespace selectors unrolled
    namespace_labels: Mapping[str, str] | None
    existing_anti_affinity: TopologyCounts
    affinity: TopologyCounts
    anti_affinity: TopologyCounts

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.terms,
            self.namespace_labels,
            self.existing_anti_affinity.clone(),
            self.affinity.clone(),
            self.anti_affinity.clone(),
        )

    def update_with_pod(self, table: NodeTable, other: Pod, row: int, multiplier: int) -> None:
        """preFilterState.updateWithPod: account `other` placed on (or removed from) `row`."""
        other_terms, _ = parse_pod_terms(other)
        for t in other_terms.required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                self.existing_anti_affinity.add_row(table, t.topology_key, row, multiplier)
        if matches_all(self.terms.required_affinity, other):
            for t in self.terms.required_affinity:
                self.affinity.add_row(table, t.topology_key, row, multiplier)
        for t in self.terms.required_anti_affinity:
            if t.matches(other, None):
                self.anti_affinity.add_row(table, t.topology_key, row, multiplier)


def existing_anti_affinity_counts(
    index: AffinityIndex, pod: Pod, ns_labels: Mapping[str, str] | None
) -> TopologyCounts:
    """getExistingAntiAffinityCounts: placed pods' required anti-affinity terms matching `pod`."""
    counts = TopologyCounts()
    for group in index.required_anti_affinity.matching(pod, ns_labels):
        rows, amounts = group.arrays()
        counts.add_rows(index.table, group.term.topology_key, rows, amounts)
    return counts


def incoming_counts(index: AffinityIndex, terms: PodTerms) -> tuple[TopologyCounts, TopologyCounts]:
    """getIncomingAffinityAntiAffinityCounts over candidate pods only."""
    table = index.table
    affinity = TopologyCounts()
    anti = TopologyCounts()
    required = terms.required_affinity
    if required:
        # A pod must match every term: iterate the candidates of the narrowest-keyed term.
        rows = [row for (_, row), pod in index.candidates(required[0]) if matches_all(required, pod)]
        if rows:
            row_array = np.asarray(rows, dtype=np.intp)
            ones = np.ones(len(rows), dtype=np.int64)
            for t in required:
                affinity.add_rows(table, t.topology_key, row_array, ones)
    for t in terms.required_anti_affinity:
        rows = index.matching_rows(t)
        if rows:
            anti.add_rows(
                table, t.topology_key, np.asarray(rows, dtype=np.intp), np.ones(len(rows), dtype=np.int64)
            )
    return affinity, anti


def filter_rows(table: NodeTable, state: PreFilterState, rows: Rows) -> FilterResult:
    """Filter over many nodes: affinity, then the pod's anti-affinity, then existing pods' terms."""
    n = len(rows)
    status_index = np.full(n, -1, dtype=np.int32)
    codes_of: dict[str, Codes] = {}

    def codes(key: str) -> Codes:
        c = codes_of.get(key)
        if c is None:
            c = table.label_codes(key)[rows]
            codes_of[key] = c
        return c

    required = state.terms.required_affinity
    if required:
        all_keys = np.ones(n, dtype=np.bool_)
        pods_exist = np.ones(n, dtype=np.bool_)
        for t in required:
            all_keys &= codes(t.topology_key) != ABSENT
            pods_exist &= state.affinity.lookup(t.topology_key, codes(t.topology_key)) > 0
        if state.affinity.empty() and matches_all(required, state.pod):
            pods_exist[:] = True  # the first pod of a group that has affinity to itself
        status_index[~(all_keys & pods_exist)] = 0

    anti_failed = np.zeros(n, dtype=np.bool_)
    for t in state.terms.required_anti_affinity:
        anti_failed |= state.anti_affinity.lookup(t.topology_key, codes(t.topology_key)) > 0
    status_index[anti_failed & (status_index < 0)] = 1

    existing_failed = np.zeros(n, dtype=np.bool_)
    for key in state.existing_anti_affinity.keys_with_positive():
        existing_failed |= state.existing_anti_affinity.lookup(key, codes(key)) > 0
    status_index[existing_failed & (status_index < 0)] = 2

    passed = status_index < 0
    status_index[passed] = 0
    return FilterResult(passed, status_index, _STATUSES)
