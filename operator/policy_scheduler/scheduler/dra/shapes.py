"""Node shapes: when two nodes are bound to get the same answer from the allocator.

The search (allocator.py) walks a node's pools, slices and devices in order and asks of each device
only what it is (attributes, capacity, taints, ... but not its name), whether it is allocated, and
which driver it belongs to. Two nodes whose visible devices agree on all of that, position by
position, get the same answer up to the devices' names: the same requests satisfied by the devices
at the same positions, the same config, or no allocation at all. So the allocator searches once
per shape in a cycle and re-targets the answer to the other nodes of that shape.

A node is given no shape (and is always searched) when its answer may depend on more: pools that
share counters or have slices the node does not see (what other nodes' devices consume), slices
with per-device node selection (the node's labels), devices that allow multiple allocations (each
share gets its own id), and devices some share of which is allocated.

`PoolCache` keeps, per set of visible slices, the gathered pools and the node's static shape while
the slices stay the same (the caller drops it when they change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from policy_scheduler.scheduler.dra.model import (
    Device,
    DeviceId,
    DeviceRequestAllocationResult,
    DeviceToleration,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.pools import Pool, gather_pools
from policy_scheduler.scheduler.model import NodeSelectorTerm

# One claim's results in a shape's answer: (request, device position, admin access, tolerations).
PlacedResults = tuple[tuple[str, int, bool | None, tuple[DeviceToleration, ...]], ...]
# Those results on one node's devices, with the node selector they give.
Retargeted = tuple[tuple[DeviceRequestAllocationResult, ...], tuple[NodeSelectorTerm, ...] | None]


@dataclass(frozen=True, slots=True)
class NodePools:
    """What a node sees, gathered once per set of visible slices."""

    visible: tuple[ResourceSlice, ...]  # held so that the cache's identity key stays valid
    pools: list[Pool]
    # Which shape the node's pools and devices have (None: the node is always searched).
    shape: int | None
    # The devices of its usable pools in search order (with their slices), and where each is.
    devices: tuple[tuple[DeviceId, Device, ResourceSlice], ...]
    position: Mapping[DeviceId, int]
    dids: tuple[DeviceId, ...]
    # Answers re-targeted to these devices, by the answer (see allocator._retarget).
    retargeted: dict[PlacedResults, Retargeted] = field(default_factory=dict)


class PoolCache:
    """GatherPools and node shapes per set of visible slices, valid for one list of all slices."""

    def __init__(self, partitionable: bool) -> None:
        self.partitionable = partitionable
        self._by_visible: dict[tuple[int, ...], NodePools] = {}
        self._shapes: dict[tuple[object, ...], int] = {}
        # Device content (everything but the name) -> a small number standing for it.
        self._contents: dict[str, int] = {}

    def node_pools(self, visible: Sequence[ResourceSlice], all_slices: Sequence[ResourceSlice]) -> NodePools:
        key = tuple(map(id, visible))
        found = self._by_visible.get(key)
        if found is None:
            pools = gather_pools(visible, all_slices, self.partitionable)
            found = self._build(tuple(visible), pools)
            self._by_visible[key] = found
        return found

    def _build(self, visible: tuple[ResourceSlice, ...], pools: list[Pool]) -> NodePools:
        devices: list[tuple[DeviceId, Device, ResourceSlice]] = []
        shape: list[object] | None = []
        for pool in pools:
            if pool.counter_sets or pool.other_slices:
                shape = None
            slices: list[object] = []
            for s in pool.slices:
                if s.per_device_node_selection:
                    shape = None
                contents: list[int] = []
                for device in s.devices:
                    devices.append((DeviceId(pool.driver, pool.pool, device.name), device, s))
                    if device.consumes_counters or device.allow_multiple_allocations:
                        shape = None
                    if shape is not None:
                        contents.append(self._content(device))
                slices.append(tuple(contents))
            if shape is not None:
                shape.append((pool.driver, pool.incomplete, pool.invalid, tuple(slices)))
        shape_id = None
        if shape is not None:
            shape_id = self._shapes.setdefault(tuple(shape), len(self._shapes))
        position = {did: k for k, (did, _, _) in enumerate(devices)}
        return NodePools(visible, pools, shape_id, tuple(devices), position, tuple(position))

    def _content(self, device: Device) -> int:
        # The dataclass repr names every field and value exactly: equal text, equal device.
        text = repr(replace(device, name=""))
        return self._contents.setdefault(text, len(self._contents))
