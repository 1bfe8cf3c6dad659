"""Builders for the InterPodAffinity tests, shaped like upstream's st.MakePod() helpers."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.model import (
    Affinity,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Requirement,
    WeightedPodAffinityTerm,
)
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity

NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
# scoring_test.go `namespaces` (also used by the single-node filter tests).
NAMESPACES: dict[str, dict[str, str]] = {
    "subteam1.team1": NS_LABEL_T1,
    "subteam2.team1": NS_LABEL_T1,
    "subteam1.team2": NS_LABEL_T2,
    "subteam2.team2": NS_LABEL_T2,
}

_names = itertools.count()


def sel_in(key: str, values: Sequence[str]) -> LabelSelector:
    return LabelSelector(match_expressions=(Requirement(key, "In", tuple(values)),))


def sel_not_in(key: str, values: Sequence[str]) -> LabelSelector:
    return LabelSelector(match_expressions=(Requirement(key, "NotIn", tuple(values)),))


def sel_exists(key: str) -> LabelSelector:
    return LabelSelector(match_expressions=(Requirement(key, "Exists"),))


def exprs(*reqs: tuple[str, str, Sequence[str]]) -> LabelSelector:
    return LabelSelector(match_expressions=tuple(Requirement(k, op, tuple(v)) for k, op, v in reqs))


def term(
    selector: LabelSelector | None,
    topology_key: str,
    namespaces: Sequence[str] = (),
    namespace_selector: LabelSelector | None = None,
    match_label_keys: Sequence[str] = (),
    mismatch_label_keys: Sequence[str] = (),
) -> PodAffinityTerm:
    return PodAffinityTerm(
        topology_key,
        selector,
        tuple(namespaces),
        namespace_selector,
        tuple(match_label_keys),
        tuple(mismatch_label_keys),
    )


def weighted(weight: int, t: PodAffinityTerm) -> WeightedPodAffinityTerm:
    return WeightedPodAffinityTerm(weight, t)


def affinity(
    required: Sequence[PodAffinityTerm] | None = None,
    anti_required: Sequence[PodAffinityTerm] | None = None,
    preferred: Sequence[WeightedPodAffinityTerm] | None = None,
    anti_preferred: Sequence[WeightedPodAffinityTerm] | None = None,
) -> Affinity:
    """None leaves PodAffinity / PodAntiAffinity nil, as the Go structs do."""
    pa = None
    if required is not None or preferred is not None:
        pa = PodAffinity(tuple(required or ()), tuple(preferred or ()))
    paa = None
    if anti_required is not None or anti_preferred is not None:
        paa = PodAffinity(tuple(anti_required or ()), tuple(anti_preferred or ()))
    return Affinity(pod_affinity=pa, pod_anti_affinity=paa)


def pod(
    name: str = "",
    namespace: str = "",
    node: str = "",
    labels: Mapping[str, str] | None = None,
    aff: Affinity | None = None,
) -> Pod:
    """Upstream tests leave names empty; the table keys pods by namespace/name, so make them unique."""
    return Pod(
        name=name or f"pod-{next(_names)}",
        namespace=namespace,
        node_name=node,
        labels=dict(labels or {}),
        affinity=aff,
        uid=name or "",
    )


def node(name: str, labels: Mapping[str, str] | None = None) -> Node:
    return Node(name=name, labels=dict(labels or {}))


def build(
    nodes: Sequence[Node],
    pods: Sequence[Pod] = (),
    args: Mapping[str, Any] | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[NodeTable, InterPodAffinity]:
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    for p in pods:
        if p.node_name not in table:
            table.set_node(Node(name=p.node_name))  # cache.NewSnapshot makes a NodeInfo for it too
        table.add_pod(p, table.row(p.node_name))
    handle = Handle(table=table, namespace_labels=dict(namespace_labels or {}))
    return table, InterPodAffinity.from_profile(handle, dict(args or {}))


def all_rows(table: NodeTable) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.arange(table.n, dtype=np.intp)


def rows_of(table: NodeTable, names: Sequence[str]) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.asarray([table.row(n) for n in names], dtype=np.intp)


def new_state() -> CycleState:
    return CycleState()
