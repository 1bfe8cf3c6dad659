"""The order in which the kubelet evicts pods for a signal, and the pods it has to evict.

rankMemoryPressure, rankDiskPressureFunc and rankPIDPressure (helpers.go) compare pods
pairwise with these functions, in turn:
- exceedMemoryRequests / exceedDiskRequests: pods whose usage exceeds their request first;
- priority: lower priority first;
- memory / disk: larger usage minus request first (disk subtracts the ephemeral-storage
  request even when ranking inodes, as upstream does);
- process: more processes first (after priority: PID pressure ranks by priority first).
A pod without any stats goes first in every comparison but priority. Here the comparisons are
sort keys over numpy columns, so pods of all nodes are ranked in one lexsort; ties (which the
kubelet leaves to Go's unstable sort) are broken by namespace/name.

`evictions` then walks each node's order as the kubelet's loop does, one pod per pass,
skipping the pods it never evicts (evictPod refuses critical pods), until the signal is back
at its threshold plus the minimum reclaim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.pressure.observations import PodUsage
from policy_scheduler.scheduler.pressure.pods import PodFacts
from policy_scheduler.scheduler.pressure.signals import (
    IMAGES,
    INODES,
    LOCAL_VOLUMES,
    LOGS,
    MEMORY,
    PIDS,
    ROOT,
    RankFunction,
)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# The comparison functions, by name.
EXCEEDS_REQUESTS = "exceedsRequests"
PRIORITY = "priority"
USAGE = "usageAboveRequests"


def criteria_of(rank: RankFunction) -> tuple[str, ...]:
    return (PRIORITY, USAGE) if rank.priority_first else (EXCEEDS_REQUESTS, PRIORITY, USAGE)


def _column(values: Sequence[int | None]) -> tuple[IntArray, BoolArray]:
    known = np.fromiter((v is not None for v in values), dtype=np.bool_, count=len(values))
    data = np.fromiter((v or 0 for v in values), dtype=np.int64, count=len(values))
    return data, known


@dataclass(slots=True)
class PodColumns:
    """Pods (of any number of nodes) as columns; `node[i]` is pod i's node index.
    `found[i]` is False when pod i has no usage at all (the kubelet's statsFunc finds none)."""

    facts: Sequence[PodFacts]
    node: IntArray
    priority: IntArray
    memory_request: IntArray
    storage_request: IntArray
    evictable: BoolArray
    tiebreak: IntArray
    found: BoolArray
    # usage parts (0 where not reported) and whether each was reported
    parts: dict[str, IntArray]
    known: dict[str, BoolArray]

    @classmethod
    def build(
        cls, facts: Sequence[PodFacts], usage: Sequence[PodUsage | None], node: Sequence[int] | IntArray
    ) -> PodColumns:
        n = len(facts)
        keys = [f.key for f in facts]
        tiebreak = np.empty(n, dtype=np.int64)
        tiebreak[sorted(range(n), key=keys.__getitem__)] = np.arange(n, dtype=np.int64)
        parts: dict[str, IntArray] = {}
        known: dict[str, BoolArray] = {}
        for name in _PART_FIELDS:
            parts[name], known[name] = _column([getattr(u, name) if u is not None else None for u in usage])
        return cls(
            facts=facts,
            node=np.asarray(node, dtype=np.int64).reshape(n),
            priority=np.fromiter((f.priority for f in facts), dtype=np.int64, count=n),
            memory_request=np.fromiter((f.memory_request for f in facts), dtype=np.int64, count=n),
            storage_request=np.fromiter(
                (f.ephemeral_storage_request for f in facts), dtype=np.int64, count=n
            ),
            evictable=np.fromiter((not f.critical for f in facts), dtype=np.bool_, count=n),
            tiebreak=tiebreak,
            found=np.fromiter((u is not None for u in usage), dtype=np.bool_, count=n),
            parts=parts,
            known=known,
        )

    def __len__(self) -> int:
        return len(self.facts)


_PART_FIELDS = (
    "memory_working_set",
    "rootfs_bytes",
    "rootfs_inodes",
    "logs_bytes",
    "logs_inodes",
    "local_volume_bytes",
    "local_volume_inodes",
    "processes",
)
# fsStatsType -> the PodUsage fields it sums, for bytes and for inodes (images: none per pod).
_FS_FIELDS: dict[str, tuple[str, str] | None] = {
    ROOT: ("rootfs_bytes", "rootfs_inodes"),
    LOGS: ("logs_bytes", "logs_inodes"),
    LOCAL_VOLUMES: ("local_volume_bytes", "local_volume_inodes"),
    IMAGES: None,
}


@dataclass(frozen=True, slots=True)
class Measured:
    """Per pod, for one rank function: the usage that counts (and frees on eviction), the
    request `exceeds` compares it with, the request subtracted before comparing usage, and
    whether any of the usage was reported."""

    usage: IntArray
    exceeds_request: IntArray
    above_request: IntArray
    known: BoolArray


def measure(columns: PodColumns, rank: RankFunction) -> Measured:
    """podDiskUsage / memoryUsage / processUsage and the requests they are compared with."""
    n = len(columns)
    if rank.resource == MEMORY:
        usage, known = columns.parts["memory_working_set"], columns.known["memory_working_set"]
        return Measured(usage, columns.memory_request, columns.memory_request, known)
    if rank.resource == PIDS:
        zero = np.zeros(n, dtype=np.int64)
        return Measured(columns.parts["processes"], zero, zero, columns.known["processes"])
    which = 1 if rank.resource == INODES else 0
    usage = np.zeros(n, dtype=np.int64)
    known = np.zeros(n, dtype=np.bool_)
    for part in sorted(rank.fs_stats):
        fields = _FS_FIELDS[part]
        if fields is None:
            continue
        usage = usage + columns.parts[fields[which]]
        known = known | columns.known[fields[which]]
    # exceedDiskRequests compares with the request of the resource ranked ("inodes" is never
    # requested); disk subtracts the ephemeral-storage request for bytes and inodes alike.
    exceeds = np.zeros(n, dtype=np.int64) if rank.resource == INODES else columns.storage_request
    return Measured(usage, exceeds, columns.storage_request, known)


def merge_measured(parts: Sequence[tuple[BoolArray, Measured]], n: int) -> Measured:
    """Per-pod measures where pods on different nodes use different rank functions (disks)."""
    usage = np.zeros(n, dtype=np.int64)
    exceeds = np.zeros(n, dtype=np.int64)
    above = np.zeros(n, dtype=np.int64)
    known = np.zeros(n, dtype=np.bool_)
    for mask, m in parts:
        usage[mask], exceeds[mask], above[mask], known[mask] = (
            m.usage[mask],
            m.exceeds_request[mask],
            m.above_request[mask],
            m.known[mask],
        )
    return Measured(usage, exceeds, above, known)


def _sort_keys(columns: PodColumns, m: Measured, criteria: Sequence[str], pods: IntArray) -> list[IntArray]:
    """The comparison functions as keys, most significant first."""
    found = columns.found[pods]
    missing_first = found.astype(np.int64)  # 0 (no stats) sorts before 1
    keys: list[IntArray] = [columns.node[pods]]
    for criterion in criteria:
        if criterion == PRIORITY:
            keys.append(columns.priority[pods])
            continue
        keys.append(missing_first)
        if criterion == EXCEEDS_REQUESTS:
            exceeds = (m.usage[pods] > m.exceeds_request[pods]) & found
            keys.append((~exceeds).astype(np.int64))
        else:
            above = np.where(found, m.usage[pods] - m.above_request[pods], 0)
            keys.append(-above)
    keys.append(columns.tiebreak[pods])
    return keys


def rank(columns: PodColumns, m: Measured, criteria: Sequence[str], pods: IntArray | None = None) -> IntArray:
    """The given pods (default: all), grouped by node and in the kubelet's eviction order."""
    if pods is None:
        pods = np.arange(len(columns), dtype=np.int64)
    if len(pods) == 0:
        return pods
    keys = _sort_keys(columns, m, criteria, pods)
    order = np.lexsort(keys[::-1])
    return pods[order]


@dataclass(frozen=True, slots=True)
class Evictions:
    """`order` (pod indices grouped by node, each node's pods in eviction order), and aligned
    with it: position within the node (1-based), whether the kubelet would have to evict the pod,
    what evicting it frees, whether the usage was exceeding the request."""

    order: IntArray
    position: IntArray
    victim: BoolArray
    frees: IntArray
    frees_known: BoolArray
    exceeds: BoolArray
    above: IntArray


def evictions(columns: PodColumns, m: Measured, order: IntArray, needed: IntArray) -> Evictions:
    """Mark the pods the kubelet evicts, in `order`, until what they free reaches `needed[node]`
    (threshold + minimum reclaim - available; nothing when <= 0). Critical pods are passed over;
    a pod without usage data counts as freeing nothing (the kubelet evicts it first regardless)."""
    node = columns.node[order]
    evictable = columns.evictable[order]
    frees = m.usage[order]
    counted = np.where(evictable, frees, 0)
    cumulative = np.cumsum(counted)
    n = len(order)
    starts = np.flatnonzero(np.r_[True, node[1:] != node[:-1]]) if n else np.zeros(0, dtype=np.int64)
    lengths = np.diff(np.r_[starts, n])
    before_segment = np.repeat((cumulative - counted)[starts], lengths)
    freed_before = cumulative - counted - before_segment
    victim = evictable & (freed_before < needed[node])
    position = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths) + 1
    found = columns.found[order]
    exceeds = (frees > m.exceeds_request[order]) & found
    above = m.usage[order] - m.above_request[order]
    return Evictions(order, position, victim, frees, m.known[order] & found, exceeds, above)
