"""GatherPools (structured/internal/stable/pools_stable.go, v0.37.2) for the slices one node can see.

The caller decides which slices a node sees (`slice_targets_node`); this module groups them into
pools at their newest generation, checks completeness against every slice, and (with
DRAPartitionableDevices) collects the pool's counter sets and the slices of the pool the node does
not see, whose allocated devices still draw from those counters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from policy_scheduler.scheduler.dra.model import CounterSet, Device, ResourceSlice
from policy_scheduler.scheduler.model import Node, NodeSelectorTerm
from policy_scheduler.scheduler.selectors.node_matching import node_matches_terms

# NodeMatches for one node: (nodeName, allNodes, nodeSelector) -> does it select the node?
NodeMatcher = Callable[[str, bool, tuple[NodeSelectorTerm, ...] | None], bool]


def node_matcher(node: Node) -> NodeMatcher:
    """NodeMatches (pools_stable.go) bound to one node."""

    def matches(node_name: str, all_nodes: bool, selector: tuple[NodeSelectorTerm, ...] | None) -> bool:
        if node_name:
            return node.name == node_name
        if all_nodes:
            return True
        if selector is not None:
            return node_matches_terms(node, selector)
        return False

    return matches


def device_targets_node(device: Device, matches: NodeMatcher) -> bool:
    return matches(device.node_name, device.all_nodes, device.node_selector)


def slice_targets_node(s: ResourceSlice, matches: NodeMatcher, partitionable: bool) -> bool:
    """Whether GatherPools adds the slice for the node (counter slices go to every node)."""
    if s.shared_counters or s.per_device_node_selection:
        if not partitionable:
            return False
        if s.shared_counters:
            return True
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return matches(s.node_name, s.all_nodes, s.node_selector)
    if s.per_device_node_selection:
        return any(device_targets_node(d, matches) for d in s.devices)
    return False


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    # Device slices the node sees (DeviceSlicesTargetingNode), in the order they were added.
    slices: list[ResourceSlice] = field(default_factory=list)
    # Device slices of the pool the node does not see: their allocated devices consume counters.
    other_slices: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def gather_pools(
    visible: Iterable[ResourceSlice], all_slices: Sequence[ResourceSlice], partitionable: bool = False
) -> list[Pool]:
    """Pools of the visible slices at their newest generation; sorted by id (Go's map order is random)."""
    grouped: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in visible:
        key = (s.driver, s.pool.name)
        current = grouped.get(key)
        if current is None or s.pool.generation > current[0].pool.generation:
            grouped[key] = [s]
        elif s.pool.generation == current[0].pool.generation:
            current.append(s)
    result: list[Pool] = []
    for key in sorted(grouped):
        slices = grouped[key]
        head = slices[0].pool
        if len(slices) == head.resource_slice_count:
            result.append(_build_pool(key, slices, partitionable, None))
            continue
        obsolete, everything = _slices_in_pool(all_slices, key, head.generation)
        if obsolete:
            continue
        if len(everything) != head.resource_slice_count:
            result.append(Pool(key[0], key[1], incomplete=True))
            continue
        result.append(_build_pool(key, slices, partitionable, everything))
    return result


def _build_pool(
    key: tuple[str, str],
    slices: list[ResourceSlice],
    partitionable: bool,
    every_slice: list[ResourceSlice] | None,
) -> Pool:
    """buildPool."""
    driver, name = key
    if partitionable:
        device_slices = [s for s in slices if not s.shared_counters]
        counter_slices = [s for s in slices if s.shared_counters]
    else:
        device_slices, counter_slices = slices, []
    if reason := _duplicate_device(device_slices):
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    if not partitionable:
        return Pool(driver, name, device_slices)
    counter_sets: dict[str, CounterSet] = {}
    for s in counter_slices:
        for cs in s.shared_counters:
            if cs.name in counter_sets:
                return Pool(
                    driver, name, invalid=True, invalid_reason=f"duplicate counter set name {cs.name}"
                )
            counter_sets[cs.name] = cs
    if reason := _unknown_counters(counter_sets, slices):
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    if every_slice is None or len(slices) == len(every_slice):
        return Pool(driver, name, device_slices, counter_sets=counter_sets)
    seen = {s.name for s in slices}
    others = [s for s in every_slice if s.name not in seen]
    if reason := _unknown_counters(counter_sets, others):
        return Pool(driver, name, invalid=True, invalid_reason=reason)
    return Pool(driver, name, device_slices, others, counter_sets)


def _slices_in_pool(
    all_slices: Sequence[ResourceSlice], key: tuple[str, str], generation: int
) -> tuple[bool, list[ResourceSlice]]:
    """checkSlicesInPool: (a newer generation exists, the pool's slices at this generation)."""
    found: list[ResourceSlice] = []
    for s in all_slices:
        if (s.driver, s.pool.name) != key:
            continue
        if s.pool.generation == generation:
            found.append(s)
        elif s.pool.generation > generation:
            return True, []
    return False, found


def _duplicate_device(slices: Iterable[ResourceSlice]) -> str:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return ""


def _unknown_counters(counter_sets: dict[str, CounterSet], slices: Iterable[ResourceSlice]) -> str:
    """validateDeviceCounterConsumption."""
    for s in slices:
        for d in s.devices:
            for consumption in d.consumes_counters:
                cs = counter_sets.get(consumption.counter_set)
                if cs is None:
                    return f"counter set {consumption.counter_set} not found"
                for counter in consumption.counters:
                    if counter not in cs.counters:
                        return f"counter {counter} not found in counter set {cs.name}"
    return ""
