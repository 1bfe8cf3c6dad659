"""makeSignalObservations: helpers_test.go (v1.37.2) TestMakeSignalObservations."""

from __future__ import annotations

from policy_scheduler.scheduler.pressure.observations import (
    FsStats,
    MemoryStats,
    NodeStats,
    RlimitStats,
    SignalObservation,
    make_signal_observations,
)
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
)

GI = 1024**3
MI = 1024**2


def test_make_signal_observations() -> None:
    memory = MemoryStats(available_bytes=GI, working_set_bytes=GI)
    stats = NodeStats(
        memory=memory,
        allocatable_memory=memory,  # system container "pods"
        fs=FsStats(available_bytes=1024, capacity_bytes=2048, inodes_free=1024, inodes=1024 * 1024),
        image_fs=FsStats(available_bytes=MI, capacity_bytes=2 * MI, inodes_free=1024, inodes=1024 * 1024),
        container_fs=FsStats(available_bytes=2 * MI, capacity_bytes=8 * MI, inodes_free=2048, inodes=2048),
        rlimit=RlimitStats(max_pid=255816, running_processes=1000),
    )
    assert make_signal_observations(stats) == {
        MEMORY_AVAILABLE: SignalObservation(GI, 2 * GI),
        ALLOCATABLE_MEMORY_AVAILABLE: SignalObservation(GI, 2 * GI),
        NODEFS_AVAILABLE: SignalObservation(1024, 2048),
        NODEFS_INODES_FREE: SignalObservation(1024, 1024 * 1024),
        IMAGEFS_AVAILABLE: SignalObservation(MI, 2 * MI),
        IMAGEFS_INODES_FREE: SignalObservation(1024, 1024 * 1024),
        CONTAINERFS_AVAILABLE: SignalObservation(2 * MI, 8 * MI),
        CONTAINERFS_INODES_FREE: SignalObservation(2048, 2048),
        PID_AVAILABLE: SignalObservation(255816 - 1000, 255816),
    }


def test_partial_stats_give_no_observation() -> None:
    """A signal needs both of its numbers; a missing one is no data, never a guess."""
    stats = NodeStats(
        memory=MemoryStats(available_bytes=GI),
        fs=FsStats(available_bytes=1024, inodes_free=10, inodes=20),
        rlimit=RlimitStats(max_pid=100),
    )
    assert make_signal_observations(stats) == {NODEFS_INODES_FREE: SignalObservation(10, 20)}
    assert make_signal_observations(NodeStats()) == {}
