"""Which slices each node sees, vectorized over rows, and rows grouped by what they see.

Nodes that see the same slices (no node-local slice, same network-attached slices) get the same
allocation, so the allocator runs once per group instead of once per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from policy_scheduler.scheduler.dra.model import ResourceSlice
from policy_scheduler.scheduler.nodetable import NodeTable, Rows
from policy_scheduler.scheduler.selectors.node_matching import match_node_selector_terms


@dataclass(frozen=True, slots=True)
class SliceIndex:
    by_node: dict[str, tuple[ResourceSlice, ...]]
    all_nodes: tuple[ResourceSlice, ...]
    selected: tuple[ResourceSlice, ...]  # slices with a node selector

    @staticmethod
    def build(slices: Sequence[ResourceSlice]) -> SliceIndex:
        by_node: dict[str, list[ResourceSlice]] = {}
        all_nodes: list[ResourceSlice] = []
        selected: list[ResourceSlice] = []
        for s in slices:
            if s.per_device_node_selection:  # DRAPartitionableDevices is off: upstream skips these
                continue
            if s.node_name:
                by_node.setdefault(s.node_name, []).append(s)
            elif s.all_nodes:
                all_nodes.append(s)
            elif s.node_selector is not None:
                selected.append(s)
        return SliceIndex({k: tuple(v) for k, v in by_node.items()}, tuple(all_nodes), tuple(selected))


@dataclass(frozen=True, slots=True)
class Group:
    rows: list[int]  # positions into the `rows` array
    node_name: str  # a node of the group (the allocation's node-local pin, if any)
    slices: tuple[ResourceSlice, ...]


def group_rows(index: SliceIndex, table: NodeTable, rows: Rows) -> list[Group]:
    """Rows with node-local slices are groups of one; the others group by the selector slices they match."""
    masks = [match_node_selector_terms(table, rows, s.node_selector or ()) for s in index.selected]
    bits = np.stack(masks, axis=1) if masks else np.zeros((len(rows), 0), dtype=bool)
    local_rows = np.fromiter(
        (table.index[name] for name in index.by_node if name in table.index), dtype=np.intp
    )
    local = np.isin(rows, local_rows)
    groups: list[Group] = []
    for p in np.flatnonzero(local).tolist():
        name = table.nodes[int(rows[p])].name
        picked = tuple(s for s, on in zip(index.selected, bits[p], strict=True) if on)
        groups.append(Group([p], name, (*index.by_node[name], *index.all_nodes, *picked)))
    others = np.flatnonzero(~local)
    if len(others):
        patterns, inverse = np.unique(bits[others], axis=0, return_inverse=True)
        for k, pattern in enumerate(patterns):
            members = others[inverse.reshape(-1) == k]
            picked = tuple(s for s, on in zip(index.selected, pattern, strict=True) if on)
            name = table.nodes[int(rows[members[0]])].name
            groups.append(Group(members.tolist(), name, (*index.all_nodes, *picked)))
    return groups
