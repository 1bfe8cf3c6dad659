"""The kubelet's eviction signals (pkg/kubelet/eviction/api/types.go, helpers.go `init`).

Each signal names a resource the kubelet reclaims by evicting pods, and the node condition it
reports while a threshold on it is met. The filesystem signals also say which parts of a
pod's disk usage count for them, which depends on the node's disk layout
(`buildSignalToRankFunc`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE = "containerfs.available"
CONTAINERFS_INODES_FREE = "containerfs.inodesFree"
PID_AVAILABLE = "pid.available"

# The order the kubelet acts on signals met at once (`byEvictionPriority`: memory first; the
# others keep their order, which in the kubelet is Go map order, i.e. random: ours is fixed).
SIGNALS: tuple[str, ...] = (
    MEMORY_AVAILABLE,
    ALLOCATABLE_MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
SIGNAL_ORDER: dict[str, int] = {signal: i for i, signal in enumerate(SIGNALS)}

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
CONDITIONS: tuple[str, ...] = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)

# signalToNodeCondition
CONDITION_OF: dict[str, str] = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    CONTAINERFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}

Resource = Literal["memory", "ephemeral-storage", "inodes", "pids"]
MEMORY: Resource = "memory"
EPHEMERAL_STORAGE: Resource = "ephemeral-storage"
INODES: Resource = "inodes"
PIDS: Resource = "pids"

# signalToResource
RESOURCE_OF: dict[str, Resource] = {
    MEMORY_AVAILABLE: MEMORY,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY,
    IMAGEFS_AVAILABLE: EPHEMERAL_STORAGE,
    IMAGEFS_INODES_FREE: INODES,
    CONTAINERFS_AVAILABLE: EPHEMERAL_STORAGE,
    CONTAINERFS_INODES_FREE: INODES,
    NODEFS_AVAILABLE: EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: INODES,
    PID_AVAILABLE: PIDS,
}

# The signals a KubeletConfiguration may set (validSignal); allocatableMemory.available is
# valid there too, as upstream.
VALID_SIGNALS = frozenset(RESOURCE_OF)
# The signals users see first; containerfs.* and allocatableMemory.available are derived from
# these by the kubelet itself.
PRIMARY_SIGNALS: tuple[str, ...] = (
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    PID_AVAILABLE,
)


def valid_signal(signal: str) -> bool:
    return signal in RESOURCE_OF


def eviction_priority_key(signal: str) -> int:
    """byEvictionPriority as a sort key: memory signals first, then the fixed order above."""
    return SIGNAL_ORDER.get(signal, len(SIGNALS))


# fsStatsType: the parts of a pod's disk usage.
ROOT = "root"  # containers' writable layers
LOGS = "logs"  # containers' logs
LOCAL_VOLUMES = "localVolumeSource"  # emptyDir (not in memory), configMap, gitRepo, hostPath
IMAGES = "images"  # never reported per pod: counts as 0


@dataclass(frozen=True, slots=True)
class DiskLayout:
    """The node's filesystems as the kubelet sees them (DiskInfoProvider)."""

    # HasDedicatedImageFs: images (and, unless split, writable layers) on their own filesystem.
    dedicated_image_fs: bool = False
    # HasDedicatedContainerFs (KubeletSeparateDiskGC): writable layers on nodefs, images apart.
    split_container_fs: bool = False


SINGLE_DISK = DiskLayout()


@dataclass(frozen=True, slots=True)
class RankFunction:
    """How the kubelet orders pods for one signal: by whether usage exceeds requests (unless
    `priority_first`), then priority, then usage above requests; `fs_stats` are the parts of
    disk usage that count (disk signals only)."""

    resource: Resource
    fs_stats: frozenset[str] = frozenset()
    priority_first: bool = False  # rankPIDPressure: priority, then process count


_ALL_FS = frozenset({IMAGES, ROOT, LOGS, LOCAL_VOLUMES})


def rank_function(signal: str, layout: DiskLayout) -> RankFunction:
    """buildSignalToRankFunc(withImageFs, imageContainerSplitFs)[signal]."""
    resource = RESOURCE_OF[signal]
    if resource == MEMORY:
        return RankFunction(MEMORY)
    if resource == PIDS:
        return RankFunction(PIDS, priority_first=True)
    base = signal.split(".", 1)[0]  # nodefs, imagefs, containerfs
    if layout.dedicated_image_fs and not layout.split_container_fs:
        nodefs = frozenset({LOGS, LOCAL_VOLUMES})
        imagefs = frozenset({ROOT, IMAGES})
        containerfs = imagefs
    elif layout.dedicated_image_fs and layout.split_container_fs:
        nodefs = frozenset({LOGS, LOCAL_VOLUMES, ROOT})
        imagefs = frozenset({IMAGES})
        containerfs = nodefs
    else:
        nodefs = imagefs = containerfs = _ALL_FS
    parts = {"nodefs": nodefs, "imagefs": imagefs, "containerfs": containerfs}[base]
    return RankFunction(resource, parts)
