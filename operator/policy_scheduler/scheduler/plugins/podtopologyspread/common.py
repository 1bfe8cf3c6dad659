"""Shared parts of PodTopologySpread (upstream common.go): parsed constraints, default
constraints, node inclusion policies and per-row counts of matching pods.

Counting uses a per-table index (PodIndex) kept current through the table's PodListener hook:
pods by namespace, so a selector is only evaluated against pods of the incoming pod's namespace,
and per (namespace, selector) the matching pods per row, adjusted incrementally afterwards.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import (
    LabelSelector,
    Pod,
    Requirement,
    TopologySpreadConstraint,
)
from policy_scheduler.scheduler.nodetable import (
    ABSENT,
    HOSTNAME_LABEL,
    ZONE_LABEL,
    BoolArray,
    IntArray,
    NodeTable,
    PodListener,
    Rows,
)
from policy_scheduler.scheduler.plugins.podtopologyspread.matching import (
    Selector,
    is_empty,
    merge_label_set,
    tolerated_mask,
)
from policy_scheduler.scheduler.selectors import (
    MATCH_EVERYTHING,
    SelectorError,
    compile_label_selector,
    match_required_node_affinity,
)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
_MAX_CACHED_SELECTORS = 256  # (namespace, selector) count arrays kept up to date

# A pod -> the merged selector of the Services, ReplicationController, ReplicaSet and
# StatefulSet selecting it (helper.DefaultSelector); None when there are none.
OwnerSelectors = Callable[[Pod], LabelSelector | None]

SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME_LABEL, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE_LABEL, when_unsatisfiable=SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """topologySpreadConstraint: a v1 constraint with its selector parsed and defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def filter_constraints(
    constraints: Iterable[TopologySpreadConstraint], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """filterTopologySpreadConstraints: the constraints with `action`, matchLabelKeys merged in."""
    result: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = compile_label_selector(c.label_selector)
        match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
        if match_labels:
            selector = merge_label_set(match_labels, selector)
        result.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=1 if c.min_domains is None else c.min_domains,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return result


def node_has_keys(table: NodeTable, constraints: Sequence[Constraint], rows: Rows) -> BoolArray:
    """nodeLabelsMatchSpreadConstraints per row: every topology key is present."""
    mask = np.ones(len(rows), dtype=np.bool_)
    for c in constraints:
        mask &= table.label_codes(c.topology_key)[rows] != ABSENT
    return mask


class InclusionMasks:
    """matchNodeInclusionPolicies per row; the affinity and taint masks are computed at most once."""

    def __init__(self, table: NodeTable, pod: Pod, rows: Rows) -> None:
        self._table, self._pod, self._rows = table, pod, rows
        self._affinity: BoolArray | None = None
        self._tolerated: BoolArray | None = None

    def of(self, constraint: Constraint) -> BoolArray:
        mask = np.ones(len(self._rows), dtype=np.bool_)
        if constraint.node_affinity_policy == HONOR:
            if self._affinity is None:
                self._affinity = match_required_node_affinity(self._table, self._rows, self._pod)
            mask &= self._affinity
        if constraint.node_taints_policy == HONOR:
            if self._tolerated is None:
                self._tolerated = tolerated_mask(self._table, self._pod, self._rows)
            mask &= self._tolerated
        return mask


# ---- plugin args and default constraints -----------------------------------------------------------


def owner_selector(services: ClusterServices, pod: Pod) -> Selector:
    """helper.DefaultSelector through ClusterServices.owner_selectors; empty when unknown."""
    merged = services.owner_selectors(pod)
    if merged is None:
        return MATCH_EVERYTHING
    try:
        return compile_label_selector(merged)
    except SelectorError:
        return MATCH_EVERYTHING  # DefaultSelector drops selectors that do not parse


def default_selector(
    pod: Pod,
    services: Iterable[tuple[str, Mapping[str, str] | None]],
    replication_controllers: Mapping[tuple[str, str], Mapping[str, str]],
    replica_sets: Mapping[tuple[str, str], LabelSelector],
    stateful_sets: Mapping[tuple[str, str], LabelSelector],
) -> LabelSelector | None:
    """A reference `owner_selectors` implementation: helper.DefaultSelector over plain data.

    `services` are (namespace, spec.selector); the controller maps are keyed (namespace, name).
    The controller is found by kind only (the model's OwnerReference has no apiVersion).
    """
    labels: dict[str, str] = {}
    for namespace, service_selector in services:
        if namespace != pod.namespace or service_selector is None:
            continue  # a Service with a nil selector matches nothing
        if all(pod.labels.get(k) == v for k, v in service_selector.items()):
            labels.update(service_selector)
    expressions: tuple[Requirement, ...] = ()
    owner = next((ref for ref in pod.owner_references if ref.controller), None)
    if owner is not None:
        key = (pod.namespace, owner.name)
        if owner.kind == "ReplicationController" and key in replication_controllers:
            labels.update(replication_controllers[key])
        elif owner.kind in ("ReplicaSet", "StatefulSet"):
            source = replica_sets if owner.kind == "ReplicaSet" else stateful_sets
            selector = source.get(key)
            if selector is not None:
                try:
                    parsed = compile_label_selector(selector)
                except SelectorError:
                    parsed = MATCH_EVERYTHING
                expressions = tuple(Requirement(k, op, tuple(sorted(v))) for k, op, v in parsed.requirements)
    if not labels and not expressions:
        return None
    return LabelSelector(match_labels=tuple(sorted(labels.items())), match_expressions=expressions)


# ---- matching pods per row ---------------------------------------------------------------------


class PodIndex:
    """Pods on the table by namespace, and per (namespace, selector) the matching pods per row.

    Both follow the table through its PodListener hook: a selector's counts are computed once,
    then adjusted as pods come and go, so a scheduling cycle only pays for new selectors.
    """

    def __init__(self, table: NodeTable) -> None:
        self.by_namespace: dict[str, dict[str, tuple[Pod, int]]] = {}
        # (namespace, selector) -> non-terminating matching pods per row, least recently used first
        self._counts: OrderedDict[tuple[str, Selector], IntArray] = OrderedDict()
        self._selectors_of: dict[str, set[Selector]] = {}  # namespace -> selectors in _counts
        for row in range(table.n):
            for pod in table.pods_on(row):
                self._on_add(pod, row)
        table.listeners.append(PodListener(self._on_add, self._on_remove, reader="PodTopologySpread"))

    def _on_add(self, pod: Pod, row: int) -> None:
        pods = self.by_namespace.setdefault(pod.namespace, {})
        previous = pods.get(pod.key)
        if previous is not None:  # replaced without a removal: take the old one out first
            self._account(*previous, -1)
        pods[pod.key] = (pod, row)
        self._account(pod, row, 1)

    def _on_remove(self, pod: Pod, row: int) -> None:
        pods = self.by_namespace.get(pod.namespace)
        entry = pods.get(pod.key) if pods is not None else None
        if pods is None or entry is None or entry[1] != row:
            return
        del pods[pod.key]
        if not pods:
            del self.by_namespace[pod.namespace]
        self._account(*entry, -1)

    def _account(self, pod: Pod, row: int, delta: int) -> None:
        if pod.terminating:
            return  # countPodsMatchSelector bypasses terminating pods
        for selector in self._selectors_of.get(pod.namespace, ()):
            if selector.matches(pod.labels):
                counts = self._counts[(pod.namespace, selector)]
                if row >= len(counts):
                    counts = np.concatenate([counts, np.zeros(row + 1 - len(counts), dtype=np.int64)])
                    self._counts[(pod.namespace, selector)] = counts
                counts[row] += delta

    def match_counts(self, table: NodeTable, selector: Selector, namespace: str) -> IntArray:
        """countPodsMatchSelector for every row (a read-only view)."""
        if is_empty(selector):
            return np.zeros(table.n, dtype=np.int64)  # upstream counts nothing for an empty selector
        key = (namespace, selector)
        counts = self._counts.get(key)
        if counts is None:
            counts = self._count(table, selector, namespace)
            self._counts[key] = counts
            self._selectors_of.setdefault(namespace, set()).add(selector)
            if len(self._counts) > _MAX_CACHED_SELECTORS:
                (old_namespace, old_selector), _ = self._counts.popitem(last=False)
                self._selectors_of[old_namespace].discard(old_selector)
        else:
            self._counts.move_to_end(key)
        if len(counts) < table.n:
            counts = np.concatenate([counts, np.zeros(table.n - len(counts), dtype=np.int64)])
            self._counts[key] = counts
        view = counts[: table.n]
        view.flags.writeable = False
        return view

    def _count(self, table: NodeTable, selector: Selector, namespace: str) -> IntArray:
        rows = [
            row
            for pod, row in self.by_namespace.get(namespace, {}).values()
            if not pod.terminating and selector.matches(pod.labels)
        ]
        return np.bincount(np.asarray(rows, dtype=np.intp), minlength=table.n).astype(np.int64)


def pod_index(table: NodeTable) -> PodIndex:
    """One index per table, shared by every profile's plugin instance."""
    return table.shared_index(PodIndex)
