"""Which slices each node sees, vectorized over rows, and rows grouped by what they see.

Nodes that see the same slices (no node-local slice, same network-attached slices) get the same
allocation, so the allocator runs once per group instead of once per node. With
DRAPartitionableDevices, slices of shared counters go to every node (GatherPools), and a slice
with per-device node selection is seen where any of its devices is: each device's node name,
all-nodes flag or selector counts like a slice's, so nodes of one group see the same devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.scheduler.dra.model import ResourceSlice
from policy_scheduler.scheduler.model import NodeSelectorTerm
from policy_scheduler.scheduler.nodetable import NodeTable, Rows
from policy_scheduler.scheduler.selectors.node_matching import match_node_selector_terms


@dataclass(frozen=True, slots=True)
class SliceIndex:
    by_node: dict[str, tuple[ResourceSlice, ...]]
    all_nodes: tuple[ResourceSlice, ...]
    # (slice, node selector): slices with a selector, or one entry per selector of a device.
    selected: tuple[tuple[ResourceSlice, tuple[NodeSelectorTerm, ...]], ...]
    # (node, which selector slices it matches) -> what it sees, for nodes with node-local slices:
    # the same tuple every cycle while the slices stay.
    local_seen: dict[tuple[str, bytes], tuple[ResourceSlice, ...]] = field(
        default_factory=dict, compare=False
    )

    @staticmethod
    def build(slices: Sequence[ResourceSlice], partitionable: bool = False) -> SliceIndex:
        by_node: dict[str, list[ResourceSlice]] = {}
        all_nodes: list[ResourceSlice] = []
        selected: list[tuple[ResourceSlice, tuple[NodeSelectorTerm, ...]]] = []
        seen: set[tuple[str, tuple[NodeSelectorTerm, ...]]] = set()
        for s in slices:
            if s.shared_counters or s.per_device_node_selection:
                if not partitionable:  # upstream skips these with DRAPartitionableDevices off
                    continue
                if s.shared_counters:
                    all_nodes.append(s)
                    continue
            if s.node_name:
                by_node.setdefault(s.node_name, []).append(s)
            elif s.all_nodes:
                all_nodes.append(s)
            elif s.node_selector is not None:
                selected.append((s, s.node_selector))
            elif s.per_device_node_selection:
                for d in s.devices:
                    if d.node_name:
                        by_node.setdefault(d.node_name, []).append(s)
                    elif d.all_nodes:
                        all_nodes.append(s)
                    elif d.node_selector is not None and (s.name, d.node_selector) not in seen:
                        # Devices of a slice often share a selector: one mask each is enough.
                        seen.add((s.name, d.node_selector))
                        selected.append((s, d.node_selector))
        return SliceIndex({k: tuple(v) for k, v in by_node.items()}, tuple(all_nodes), tuple(selected))


@dataclass(frozen=True, slots=True)
class Group:
    rows: list[int]  # positions into the `rows` array
    node_name: str  # a node of the group (the allocation's node-local pin, if any)
    slices: tuple[ResourceSlice, ...]


def group_rows(index: SliceIndex, table: NodeTable, rows: Rows) -> list[Group]:
    """Rows with node-local slices are groups of one; the others group by the selector slices they match."""
    masks = [match_node_selector_terms(table, rows, terms) for _, terms in index.selected]
    bits = np.stack(masks, axis=1) if masks else np.zeros((len(rows), 0), dtype=bool)
    local_rows = np.fromiter(
        (table.index[name] for name in index.by_node if name in table.index), dtype=np.intp
    )
    local = np.isin(rows, local_rows)
    groups: list[Group] = []
    seen = index.local_seen
    for p in np.flatnonzero(local).tolist():
        name = table.nodes[int(rows[p])].name
        key = (name, bits[p].tobytes())
        visible = seen.get(key)
        if visible is None:
            picked = [s for (s, _), on in zip(index.selected, bits[p], strict=True) if on]
            visible = seen[key] = _unique(*index.by_node[name], *index.all_nodes, *picked)
        groups.append(Group([p], name, visible))
    others = np.flatnonzero(~local)
    if len(others):
        patterns, inverse = np.unique(bits[others], axis=0, return_inverse=True)
        for k, pattern in enumerate(patterns):
            members = others[inverse.reshape(-1) == k]
            picked = [s for (s, _), on in zip(index.selected, pattern, strict=True) if on]
            name = table.nodes[int(rows[members[0]])].name
            groups.append(Group(members.tolist(), name, _unique(*index.all_nodes, *picked)))
    return groups


def _unique(*slices: ResourceSlice) -> tuple[ResourceSlice, ...]:
    """Each slice once (a per-device slice may be seen through several of its devices)."""
    seen: set[str] = set()
    out: list[ResourceSlice] = []
    for s in slices:
        if s.name not in seen:
            seen.add(s.name)
            out.append(s)
    return tuple(out)
