"""Builders for the NodeResources* and ImageLocality plugin tests (NodeTable + model objects)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterResult, Handle, Plugin
from policy_scheduler.scheduler.framework.status import Status
from policy_scheduler.scheduler.model import Container, ContainerImage, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.resources import canonical_list
from policy_scheduler.scheduler.versioning.features import Features

_names = itertools.count()


def q(values: Mapping[str, str | int]) -> dict[str, int]:
    """Quantities as written in upstream tests ("cpu": "4000" is 4000 cores) → canonical ints."""
    return canonical_list(dict(values))


def make_pod(
    *containers: Mapping[str, int],
    init: Iterable[Mapping[str, int]] = (),
    sidecars: Iterable[Mapping[str, int]] = (),
    overhead: Mapping[str, int] | None = None,
    pod_requests: Mapping[str, int] | None = None,
    node_name: str = "",
    name: str = "",
    uid: str = "",
    images: Iterable[str] = (),
    init_images: Iterable[str] = (),
) -> Pod:
    """A pod with one container per requests mapping (canonical ints), like st.MakePod().Req()."""
    regular = [Container(f"con{i}", requests=dict(r)) for i, r in enumerate(containers)]
    regular += [Container(f"img{i}", image=image) for i, image in enumerate(images)]
    inits = [Container(f"init{i}", requests=dict(r)) for i, r in enumerate(init)]
    inits += [
        Container(f"sidecar{i}", requests=dict(r), restart_policy="Always") for i, r in enumerate(sidecars)
    ]
    inits += [Container(f"initimg{i}", image=image) for i, image in enumerate(init_images)]
    return Pod(
        name=name or f"pod-{next(_names)}",
        uid=uid,
        containers=tuple(regular),
        init_containers=tuple(inits),
        overhead=dict(overhead or {}),
        pod_requests=dict(pod_requests) if pod_requests is not None else None,
        node_name=node_name,
    )


def make_node(
    name: str,
    allocatable: Mapping[str, int] | None = None,
    images: Iterable[tuple[tuple[str, ...], int]] = (),
) -> Node:
    return Node(
        name=name,
        allocatable=dict(allocatable or {}),
        images=tuple(ContainerImage(names, size) for names, size in images),
    )


def make_table(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> NodeTable:
    """Nodes in order (row i is the i-th node) with every pod that names a node placed on it."""
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    for pod in pods:
        if pod.node_name:
            table.add_pod(pod, table.row(pod.node_name))
    return table


def plugin(
    cls: type[Plugin],
    table: NodeTable,
    args: Mapping[str, Any] | None = None,
    features: Features | None = None,
) -> Any:
    """The plugin as a profile of `features`' release builds it (None: the default release)."""
    handle = Handle(table) if features is None else Handle(table, features=features)
    return cls.from_profile(handle, dict(args or {}))


def all_rows(table: NodeTable) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.arange(len(table), dtype=np.intp)


def statuses(result: FilterResult) -> list[Status | None]:
    """Per-row status, None for rows that passed."""
    return [None if result.passed[i] else result.status_of(i) for i in range(len(result.passed))]


def score_all(p: Any, pod: Pod, table: NodeTable, pre_score: bool = True) -> list[int]:
    state = CycleState()
    rows = all_rows(table)
    if pre_score:
        status = p.pre_score(state, pod, rows)
        assert status.is_success, status
    return [int(s) for s in p.score(state, pod, rows)]
