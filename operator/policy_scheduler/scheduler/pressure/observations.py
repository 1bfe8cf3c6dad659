"""Node and pod usage as plain data, and the signal observations the kubelet derives from them.

The fields mirror the parts of the kubelet's Summary API (stats/v1alpha1) that eviction reads;
converters outside the core fill them from the Summary API, from metrics.k8s.io (NodeMetrics,
PodMetrics: memory only) or from anything else. A field left None has no data: the signals
that need it are reported as such, never as healthy.

`make_signal_observations` is makeSignalObservations (helpers.go, helpers_others.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.scheduler.pressure.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    SINGLE_DISK,
    DiskLayout,
)

# Where usage came from, as the `pressure` command reports it.
SOURCE_SUMMARY = "Summary API"
SOURCE_METRICS = "metrics.k8s.io"


@dataclass(frozen=True, slots=True)
class MemoryStats:
    available_bytes: int | None = None
    working_set_bytes: int | None = None
    time: float | None = None  # unix seconds of the sample; None: unknown


@dataclass(frozen=True, slots=True)
class FsStats:
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None
    time: float | None = None


@dataclass(frozen=True, slots=True)
class RlimitStats:
    max_pid: int | None = None
    running_processes: int | None = None
    time: float | None = None


@dataclass(frozen=True, slots=True)
class NodeStats:
    """A node's usage. `allocatable_memory` is the pods' cgroup (system container "pods")."""

    memory: MemoryStats | None = None
    allocatable_memory: MemoryStats | None = None
    fs: FsStats | None = None
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None
    rlimit: RlimitStats | None = None
    layout: DiskLayout = SINGLE_DISK
    source: str = SOURCE_SUMMARY


@dataclass(frozen=True, slots=True)
class PodUsage:
    """One pod's usage, as the kubelet's PodStats sums it: container writable layers (rootfs)
    and logs summed over containers, local volumes (see Volume.local) summed over volumes.
    None: not reported (the kubelet counts such a part as 0, and so does the ranking)."""

    memory_working_set: int | None = None
    rootfs_bytes: int | None = None
    rootfs_inodes: int | None = None
    logs_bytes: int | None = None
    logs_inodes: int | None = None
    local_volume_bytes: int | None = None
    local_volume_inodes: int | None = None
    processes: int | None = None
    time: float | None = None
    source: str = field(default=SOURCE_SUMMARY, compare=False)


@dataclass(frozen=True, slots=True)
class SignalObservation:
    """signalObservation: what is available of a signal's resource, out of its capacity."""

    available: int
    capacity: int
    time: float | None = None


Observations = dict[str, SignalObservation]


def _memory(stats: MemoryStats | None) -> SignalObservation | None:
    if stats is None or stats.available_bytes is None or stats.working_set_bytes is None:
        return None
    return SignalObservation(
        stats.available_bytes, stats.available_bytes + stats.working_set_bytes, stats.time
    )


def _fs(into: Observations, stats: FsStats | None, available_signal: str, inodes_signal: str) -> None:
    if stats is None:
        return
    if stats.available_bytes is not None and stats.capacity_bytes is not None:
        into[available_signal] = SignalObservation(stats.available_bytes, stats.capacity_bytes, stats.time)
    if stats.inodes_free is not None and stats.inodes is not None:
        into[inodes_signal] = SignalObservation(stats.inodes_free, stats.inodes, stats.time)


def make_signal_observations(stats: NodeStats) -> Observations:
    """makeSignalObservations: memory.available's capacity is available + working set; PIDs
    available are maxpid - curproc."""
    result: Observations = {}
    memory = _memory(stats.memory)
    if memory is not None:
        result[MEMORY_AVAILABLE] = memory
    allocatable = _memory(stats.allocatable_memory)
    if allocatable is not None:
        result[ALLOCATABLE_MEMORY_AVAILABLE] = allocatable
    _fs(result, stats.fs, NODEFS_AVAILABLE, NODEFS_INODES_FREE)
    _fs(result, stats.image_fs, IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE)
    _fs(result, stats.container_fs, CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
    rlimit = stats.rlimit
    if rlimit is not None and rlimit.max_pid is not None and rlimit.running_processes is not None:
        result[PID_AVAILABLE] = SignalObservation(
            rlimit.max_pid - rlimit.running_processes, rlimit.max_pid, rlimit.time
        )
    return result
