"""VolumeBinding Score (StorageCapacityScoring): storage utilization per class through `shape`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from policy_scheduler.scheduler.nodetable import IntArray
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    broken_linear,
    go_round,
)
from policy_scheduler.scheduler.plugins.volumebinding.matching import FindResult

MAX_UTILIZATION = 100


def capacity_scores(result: FindResult, shape: Sequence[tuple[int, int]]) -> IntArray:
    """Per row: the mean over storage classes of shape(requested*100/capacity), rounded."""
    count = len(result.reasons)
    requested: dict[str, IntArray] = {}
    capacity: dict[str, IntArray] = {}
    present: dict[str, IntArray] = {}

    def column(store: dict[str, IntArray], name: str) -> IntArray:
        return store.setdefault(name, np.zeros(count, dtype=np.int64))

    has_static = (result.chosen >= 0).any(axis=0) if len(result.to_match) else np.zeros(count, dtype=np.bool_)
    for c, pvc in enumerate(result.to_match):
        for p, pv in enumerate(result.candidates[c]):
            rows = result.chosen[c] == p
            if rows.any():
                column(requested, pv.storage_class_name)[rows] += pvc.request or 0
                column(capacity, pv.storage_class_name)[rows] += pv.capacity
                column(present, pv.storage_class_name)[rows] = 1
    for c, pvc in enumerate(result.to_provision):
        cap_index = result.capacity_of[c]
        for k, node_capacity in enumerate(result.capacities):
            rows = result.provisioned[c] & (cap_index == k) & ~has_static
            if rows.any():
                name = pvc.class_name
                column(capacity, name)[rows] = node_capacity.capacity or 0
                column(requested, name)[rows] += pvc.request or 0
                column(present, name)[rows] = 1
    total = np.zeros(count, dtype=np.int64)
    classes = np.zeros(count, dtype=np.int64)
    for name, mask in present.items():
        req, cap = requested[name], capacity[name]
        over = (cap == 0) | (req > cap)
        utilization = np.where(over, MAX_UTILIZATION, req * MAX_UTILIZATION // np.maximum(cap, 1))
        total += np.where(mask == 1, broken_linear(shape, utilization), 0)
        classes += mask
    out: IntArray = np.where(classes > 0, go_round(total / np.maximum(classes, 1)), 0)
    return out
