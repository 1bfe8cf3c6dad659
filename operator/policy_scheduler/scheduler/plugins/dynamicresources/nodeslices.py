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
    masks = [match_node_selector_terms(table, rows, s.node_selector or ()) for s in index.selected]
    bits = np.stack(masks, axis=1) if masks else np.zeros((len(rows), 0), dtype=bool)
    groups: dict[object, tuple[list[int], str, tuple[ResourceSlice, ...]]] = {}
    for i, row in enumerate(rows.tolist()):
        name = table.nodes[row].name
        local = index.by_node.get(name, ())
        key: object = name if local else bits[i].tobytes()
        g = groups.get(key)
        if g is None:
            picked = tuple(s for s, on in zip(index.selected, bits[i], strict=True) if on)
            groups[key] = ([i], name, (*local, *index.all_nodes, *picked))
        else:
            g[0].append(i)
    return [Group(r, n, s) for r, n, s in groups.values()]
