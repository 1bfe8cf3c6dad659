"""Indexes of placed pods kept in step with the NodeTable (via a PodListener).

Two structures, so that a scheduling cycle touches only pods that can matter:

* Pod lookup (`candidates`): pods per namespace, and per namespace → label key → label value.
  The incoming pod's terms pick the cheapest `In`/`Exists` requirement of their selector and
  iterate only the pods carrying those labels (falling back to the namespace's pods when the
  selector has neither). Cost per term: O(candidate pods), not O(all pods).

* Existing pods' terms (`TermGroups`): the terms of placed pods, grouped by identity (a
  Deployment's replicas share one group), each group holding a row → count map. A group is
  filed under one `In` requirement of its selector (an "anchor"), so finding the groups whose
  term may match the incoming pod looks up the pod's own labels: O(pod labels + anchored
  candidates + unanchored groups), then numpy over the rows of the groups that match.
  Rows (not topology values) are stored, so node label changes are seen at query time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, PodListener, Rows
from policy_scheduler.scheduler.plugins.interpodaffinity.selectors import EXISTS, IN, Req
from policy_scheduler.scheduler.plugins.interpodaffinity.terms import (
    AffinityTerm,
    PodTerms,
    parse_pod_terms,
)

EntryKey = tuple[str, int]  # (pod key, row)
Entries = dict[EntryKey, Pod]


@dataclass(slots=True)
class Group:
    """All placed instances of one term (with one weight): row → number of instances."""

    term: AffinityTerm
    weight: int
    anchor: tuple[str, frozenset[str]] | None
    rows: dict[int, int] = field(default_factory=dict)

    def arrays(self) -> tuple[Rows, IntArray]:
        n = len(self.rows)
        rows = np.fromiter(self.rows.keys(), dtype=np.intp, count=n)
        counts = np.fromiter(self.rows.values(), dtype=np.int64, count=n)
        return rows, counts


def _anchor(term: AffinityTerm) -> tuple[str, frozenset[str]] | None:
    """The `In` requirement with the fewest values: a pod must carry one of them to match."""
    best: Req | None = None
    for req in term.selector.requirements:
        if req.op == IN and (best is None or len(req.values) < len(best.values)):
            best = req
    return None if best is None else (best.key, best.values)


class TermGroups:
    """One kind of existing-pod term (e.g. required anti-affinity), grouped and anchored."""

    def __init__(self) -> None:
        self.groups: dict[tuple[AffinityTerm, int], Group] = {}
        self._anchored: dict[tuple[str, str], dict[tuple[AffinityTerm, int], Group]] = {}
        self._unanchored: dict[tuple[AffinityTerm, int], Group] = {}

    def __len__(self) -> int:
        return len(self.groups)

    def add(self, term: AffinityTerm, weight: int, row: int, delta: int) -> None:
        if term.selector.nothing:
            return  # a nil label selector matches no pod: it can never count
        gkey = (term, weight)
        group = self.groups.get(gkey)
        if group is None:
            if delta < 0:
                return
            group = Group(term, weight, _anchor(term))
            self.groups[gkey] = group
            if group.anchor is None:
                self._unanchored[gkey] = group
            else:
                key, values = group.anchor
                for value in values:
                    self._anchored.setdefault((key, value), {})[gkey] = group
        count = group.rows.get(row, 0) + delta
        if count > 0:
            group.rows[row] = count
        else:
            group.rows.pop(row, None)
        if not group.rows:
            self._drop(gkey, group)

    def _drop(self, gkey: tuple[AffinityTerm, int], group: Group) -> None:
        del self.groups[gkey]
        if group.anchor is None:
            del self._unanchored[gkey]
            return
        key, values = group.anchor
        for value in values:
            bucket = self._anchored[(key, value)]
            del bucket[gkey]
            if not bucket:
                del self._anchored[(key, value)]

    def matching(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> Iterator[Group]:
        """Groups whose term matches `pod` (AffinityTerm.Matches with `ns_labels`)."""
        for group in self._unanchored.values():
            if group.term.matches(pod, ns_labels):
                yield group
        if not self._anchored:
            return
        # A pod has one value per key, so a group (filed under one key) is reached at most once.
        for item in pod.labels.items():
            bucket = self._anchored.get(item)
            if bucket is None:
                continue
            for group in bucket.values():
                if group.term.matches(pod, ns_labels):
                    yield group


class AffinityIndex:
    """Placed pods by namespace and label, and placed pods' affinity terms by kind."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.by_namespace: dict[str, Entries] = {}
        self.by_label: dict[str, dict[str, dict[str, Entries]]] = {}  # ns → key → value → pods
        self.terms_of: dict[EntryKey, PodTerms] = {}
        self.required_affinity = TermGroups()
        self.required_anti_affinity = TermGroups()
        self.preferred_affinity = TermGroups()
        self.preferred_anti_affinity = TermGroups()
        self.listener = PodListener(self.on_add, self.on_remove, reader="InterPodAffinity")
        table.listeners.append(self.listener)
        for row in range(table.n):
            for pod in table.pods_on(row):
                self.on_add(pod, row)

    @staticmethod
    def of(table: NodeTable) -> AffinityIndex:
        """The table's index, created (and subscribed) on first use; shared by every profile."""
        return table.shared_index(AffinityIndex)

    # ---- maintenance -------------------------------------------------------------------------

    def on_add(self, pod: Pod, row: int) -> None:
        ekey = (pod.key, row)
        ns_pods = self.by_namespace.setdefault(pod.namespace, {})
        if ekey in ns_pods:
            self.on_remove(ns_pods[ekey], row)
            ns_pods = self.by_namespace.setdefault(pod.namespace, {})
        ns_pods[ekey] = pod
        ns_labels = self.by_label.setdefault(pod.namespace, {})
        for key, value in pod.labels.items():
            ns_labels.setdefault(key, {}).setdefault(value, {})[ekey] = pod
        terms, _ = parse_pod_terms(pod)  # existing pods with unparsable terms: those lists are empty
        if not terms.empty:
            self.terms_of[ekey] = terms
            self._account(terms, row, 1)

    def on_remove(self, pod: Pod, row: int) -> None:
        ekey = (pod.key, row)
        ns_pods = self.by_namespace.get(pod.namespace)
        if ns_pods is None:
            return
        stored = ns_pods.pop(ekey, None)
        if stored is None:
            return
        if not ns_pods:
            del self.by_namespace[pod.namespace]
        # Unlabelled pods have no label buckets, and the namespace's entry may be gone already.
        ns_labels = self.by_label.get(pod.namespace)
        if ns_labels is not None:
            for key, value in stored.labels.items():
                values = ns_labels[key]
                bucket = values[value]
                del bucket[ekey]
                if not bucket:
                    del values[value]
                    if not values:
                        del ns_labels[key]
            if not ns_labels:
                del self.by_label[pod.namespace]
        terms = self.terms_of.pop(ekey, None)
        if terms is not None:
            self._account(terms, row, -1)

    def _account(self, terms: PodTerms, row: int, delta: int) -> None:
        for t in terms.required_affinity:
            self.required_affinity.add(t, 1, row, delta)
        for t in terms.required_anti_affinity:
            self.required_anti_affinity.add(t, 1, row, delta)
        for w in terms.preferred_affinity:
            self.preferred_affinity.add(w.term, w.weight, row, delta)
        for w in terms.preferred_anti_affinity:
            self.preferred_anti_affinity.add(w.term, w.weight, row, delta)

    # ---- queries -----------------------------------------------------------------------------

    def _namespaces(self, term: AffinityTerm) -> list[str]:
        if term.selector.nothing:
            return []
        if term.namespace_selector.everything:
            return list(self.by_namespace)
        return [ns for ns in term.namespaces if ns in self.by_namespace]

    def candidates(self, term: AffinityTerm) -> Iterator[tuple[EntryKey, Pod]]:
        """Placed pods that may match `term` of the incoming pod (namespaces unrolled): every pod
        in the term's namespaces that carries its cheapest In/Exists label. Callers still check
        the term (its other requirements)."""
        for ns in self._namespaces(term):
            buckets, _ = self._buckets(ns, term)
            for bucket in buckets:
                yield from bucket.items()

    def matching_rows(self, term: AffinityTerm) -> list[int]:
        """Rows of the placed pods matching `term` of the incoming pod, one entry per pod."""
        rows: list[int] = []
        selector = term.selector
        for ns in self._namespaces(term):
            buckets, exact = self._buckets(ns, term)
            for bucket in buckets:
                if exact:  # the bucket is the selector: no per-pod check needed
                    rows.extend(row for _, row in bucket)
                else:
                    rows.extend(row for (_, row), pod in bucket.items() if selector.matches(pod.labels))
        return rows

    def _buckets(self, ns: str, term: AffinityTerm) -> tuple[list[Entries], bool]:
        """The pods of `ns` carrying the cheapest In/Exists requirement of the selector, and
        whether that requirement is the whole selector."""
        labels = self.by_label.get(ns, {})
        requirements = term.selector.requirements
        best: list[Entries] | None = None
        best_size = len(self.by_namespace[ns])
        for req in requirements:
            if req.op not in (IN, EXISTS):
                continue
            values = labels.get(req.key)
            if values is None:
                return [], True  # no pod in this namespace has the key: none can match
            if req.op == IN:
                buckets = [values[v] for v in req.values if v in values]
            else:
                buckets = list(values.values())
            size = sum(len(b) for b in buckets)
            if best is None or size < best_size:
                best, best_size = buckets, size
        if best is None:
            return [self.by_namespace[ns]], not requirements
        return best, len(requirements) == 1
