"""Scoring extended resources backed by DRA (DRAExtendedResource; resource_allocation.go's
draPreScoreState, calculateDRAResourceTotals): on a node that does not list such a resource in
allocatable, its allocatable is the number of devices of the serving DeviceClass the node can
use, and its use the number of those already allocated.

Only when a scoring strategy names such a resource (the defaults, cpu and memory, never do).
Upstream counts devices in every slice the node sees, whatever the pool's generation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policy_scheduler.scheduler.dra.extended import is_dra_extended_resource_name
from policy_scheduler.scheduler.dra.model import Device, DeviceClass, DeviceId, ResourceSlice, SelectorError
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.dynamicresources.nodeslices import SliceIndex, group_rows
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import ResourceSpec
from policy_scheduler.scheduler.versioning.gates import DRA_EXTENDED_RESOURCE


class DraDeviceCounts:
    """getDRAPreScoredParams: the devices and allocations of one scoring pass."""

    def __init__(self, handle: Handle, dra: DraServices) -> None:
        self.handle = handle
        self.dra = dra
        self.allocated = dra.store.allocated_devices()
        self.index = SliceIndex.build(dra.store.slices())
        self._matches: dict[tuple[str, DeviceId], bool] = {}

    @staticmethod
    def for_resources(handle: Handle, resources: Sequence[ResourceSpec]) -> DraDeviceCounts | None:
        """None unless the gate is on and a class serves one of `resources`."""
        if not handle.features.enabled(DRA_EXTENDED_RESOURCE):
            return None
        dra: DraServices = handle.services.dra
        resolver = dra.store.extended_resources
        if not any(
            is_dra_extended_resource_name(r.name) and resolver.device_class(r.name) for r in resources
        ):
            return None
        return DraDeviceCounts(handle, dra)

    def capacity_and_allocated(self, name: str, rows: Rows) -> tuple[IntArray, IntArray] | None:
        """calculateDRAExtendedResourceAllocatableRequest at every row: (devices, allocated)."""
        device_class = self.dra.store.extended_resources.device_class(name)
        if device_class is None:
            return None
        capacity = np.zeros(len(rows), dtype=np.int64)
        allocated = np.zeros(len(rows), dtype=np.int64)
        for group in group_rows(self.index, self.handle.table, rows):
            counted = self._count(device_class, group.slices)
            if counted is not None:
                capacity[group.rows], allocated[group.rows] = counted
        return capacity, allocated

    def _count(self, device_class: DeviceClass, slices: Sequence[ResourceSlice]) -> tuple[int, int] | None:
        """calculateDRAResourceTotals; None where a selector fails (upstream logs it, scores 0)."""
        total = used = 0
        for s in slices:
            for device in s.devices:
                did = DeviceId(s.driver, s.pool.name, device.name)
                try:
                    if not self._matches_class(device_class, did, s, device):
                        continue
                except SelectorError:
                    return None
                total += 1
                used += did in self.allocated
        return total, used

    def _matches_class(
        self, device_class: DeviceClass, did: DeviceId, s: ResourceSlice, device: Device
    ) -> bool:
        for expression in device_class.selectors:
            if not expression:  # not a CEL selector: skipped, as upstream does
                continue
            key = (expression, did)
            hit = self._matches.get(key)
            if hit is None:
                hit = self.dra.compile_selector(expression)(s.driver, device)
                self._matches[key] = hit
            if not hit:
                return False
        return True
