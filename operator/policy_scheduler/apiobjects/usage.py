"""Node-pressure inputs from API shapes into the core's plain data (scheduler/pressure).

Usage is checked on the way in: a negative figure, one beyond int64, more available than the
capacity, or a pod or node using more memory than the node has, is refused with a
ConversionError naming the field (the model must never rank on numbers that cannot be real).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.apiobjects.convert_common import canonical_quantity, epoch, struct_from_dict
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.scheduler.framework.durations import parse_go_duration
from policy_scheduler.scheduler.pressure.observations import (
    SOURCE_METRICS,
    SOURCE_SUMMARY,
    FsStats,
    MemoryStats,
    NodeStats,
    PodUsage,
    RlimitStats,
)
from policy_scheduler.scheduler.pressure.signals import DiskLayout
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_ENFORCE_NODE_ALLOCATABLE,
    DEFAULT_PRESSURE_TRANSITION_PERIOD,
    KubeletEvictionSettings,
)
from policy_scheduler.scheduler.resource_names import MEMORY
from policy_scheduler.scheduler.resources import MAX_QUANTITY, QuantityError

SYSTEM_CONTAINER_PODS = "pods"


def _count(value: int | None, path: str) -> int | None:
    """A Summary API figure (uint64 in the API): never negative, never beyond int64."""
    if value is None:
        return None
    if value < 0:
        raise ConversionError(path, f"{value}: must not be negative")
    if value > MAX_QUANTITY:
        raise ConversionError(path, f"{value}: larger than any real figure (the limit is {MAX_QUANTITY})")
    return value


def _memory_quantity(usage: Mapping[str, Any] | None, path: str) -> int | None:
    if not usage or MEMORY not in usage:
        return None
    raw = usage[MEMORY]
    try:
        value = canonical_quantity(MEMORY, raw)
    except (QuantityError, TypeError):
        raise ConversionError(f"{path}.memory", f'invalid quantity "{raw}"') from None
    if value < 0:
        raise ConversionError(f"{path}.memory", f'"{raw}": must not be negative')
    return value


def _at_most(value: int | None, limit: int | None, path: str, what: str) -> None:
    if value is not None and limit is not None and value > limit:
        raise ConversionError(path, f"{value} is more than {what} ({limit})")


def _time(value: datetime | None) -> float | None:
    return epoch(value)


def memory_capacity_from_dict(node: Mapping[str, Any]) -> int | None:
    """A Node's status.capacity.memory (what memory.available is counted against)."""
    status = node.get("status")
    capacity = status.get("capacity") if isinstance(status, Mapping) else None
    if not isinstance(capacity, Mapping) or MEMORY not in capacity:
        return None
    return _memory_quantity(capacity, "status.capacity")


# --- metrics.k8s.io ------------------------------------------------------------------------------


def node_metrics_from_dict(d: Mapping[str, Any]) -> us.NodeMetrics:
    return struct_from_dict(d, us.NodeMetrics, "NodeMetrics")


def pod_metrics_from_dict(d: Mapping[str, Any]) -> us.PodMetrics:
    return struct_from_dict(d, us.PodMetrics, "PodMetrics")


def node_stats_from_metrics(m: us.NodeMetrics, memory_capacity: int | None) -> NodeStats:
    """memory.available = the node's memory capacity - its working set (NodeMetrics' memory).
    NodeMetrics have no disk, inode or PID figures: those signals have no data."""
    working_set = _memory_quantity(m.usage, "usage")
    if working_set is None or memory_capacity is None:
        return NodeStats(source=SOURCE_METRICS)
    _at_most(working_set, memory_capacity, "usage.memory", "the node's memory capacity")
    memory = MemoryStats(memory_capacity - working_set, working_set, _time(m.timestamp))
    return NodeStats(memory=memory, source=SOURCE_METRICS)


def pod_usage_from_metrics(m: us.PodMetrics, memory_limit: int | None = None) -> PodUsage:
    """The pod's memory: its containers' working sets summed (the kubelet ranks on the pod's
    cgroup, which adds the pause container's few hundred KiB)."""
    total: int | None = None
    for i, container in enumerate(m.containers or ()):
        value = _memory_quantity(container.usage, f"containers[{i}].usage")
        if value is not None:
            total = (total or 0) + value
    _at_most(total, memory_limit, "containers[*].usage.memory", "its node's memory capacity")
    return PodUsage(memory_working_set=total, time=_time(m.timestamp), source=SOURCE_METRICS)


# --- the kubelet's Summary API -------------------------------------------------------------------


def summary_from_dict(d: Mapping[str, Any]) -> us.Summary:
    return struct_from_dict(d, us.Summary, "Summary")


def _fs(stats: us.FsStats | None, path: str) -> FsStats | None:
    if stats is None:
        return None
    out = FsStats(
        _count(stats.available_bytes, f"{path}.availableBytes"),
        _count(stats.capacity_bytes, f"{path}.capacityBytes"),
        _count(stats.used_bytes, f"{path}.usedBytes"),
        _count(stats.inodes_free, f"{path}.inodesFree"),
        _count(stats.inodes, f"{path}.inodes"),
        _count(stats.inodes_used, f"{path}.inodesUsed"),
        _time(stats.time),
    )
    _at_most(out.available_bytes, out.capacity_bytes, f"{path}.availableBytes", "capacityBytes")
    _at_most(out.inodes_free, out.inodes, f"{path}.inodesFree", "inodes")
    return out


def _memory(stats: us.MemoryStats | None, path: str) -> MemoryStats | None:
    if stats is None:
        return None
    return MemoryStats(
        _count(stats.available_bytes, f"{path}.availableBytes"),
        _count(stats.working_set_bytes, f"{path}.workingSetBytes"),
        _time(stats.time),
    )


def _same_fs(a: FsStats | None, b: FsStats | None) -> bool:
    return a is not None and b is not None and (a.capacity_bytes, a.inodes) == (b.capacity_bytes, b.inodes)


def disk_layout(fs: FsStats | None, image_fs: FsStats | None, container_fs: FsStats | None) -> DiskLayout:
    """HasDedicatedImageFs / HasDedicatedContainerFs, from what the Summary reports: the kubelet
    reports the node's own filesystem as imageFs when images share it, and imageFs as
    containerFs unless writable layers are split from images; a filesystem of another size
    is another filesystem."""
    dedicated = image_fs is not None and fs is not None and not _same_fs(fs, image_fs)
    split = dedicated and container_fs is not None and not _same_fs(image_fs, container_fs)
    return DiskLayout(dedicated, split)


def node_stats_from_summary(s: us.Summary) -> NodeStats:
    node = s.node
    pods_cgroup = next((c for c in node.system_containers or () if c.name == SYSTEM_CONTAINER_PODS), None)
    fs = _fs(node.fs, "node.fs")
    runtime = node.runtime or us.RuntimeStats()
    image_fs = _fs(runtime.image_fs, "node.runtime.imageFs")
    container_fs = _fs(runtime.container_fs, "node.runtime.containerFs")
    rlimit = None
    if node.rlimit is not None:
        rlimit = RlimitStats(
            _count(node.rlimit.maxpid, "node.rlimit.maxpid"),
            _count(node.rlimit.curproc, "node.rlimit.curproc"),
            _time(node.rlimit.time),
        )
        _at_most(rlimit.running_processes, rlimit.max_pid, "node.rlimit.curproc", "node.rlimit.maxpid")
    return NodeStats(
        memory=_memory(node.memory, "node.memory"),
        allocatable_memory=_memory(pods_cgroup.memory, "node.systemContainers[pods].memory")
        if pods_cgroup is not None
        else None,
        fs=fs,
        image_fs=image_fs,
        container_fs=container_fs,
        rlimit=rlimit,
        layout=disk_layout(fs, image_fs, container_fs),
        source=SOURCE_SUMMARY,
    )


def _sum(values: list[int | None]) -> int | None:
    """diskUsage/inodeUsage summed: a missing part counts 0; None only when every part is missing."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def pod_usage_from_summary(
    p: us.SummaryPod, local_volumes: frozenset[str], path: str, memory_limit: int | None = None
) -> PodUsage:
    """containerUsage and podLocalVolumeUsage: writable layers and logs over containers, the
    pod's local volumes (`local_volumes`, see Volume.local) over its volume stats."""
    containers = p.containers or []
    rootfs = [_fs(c.rootfs, f"{path}.containers[{i}].rootfs") for i, c in enumerate(containers)]
    logs = [_fs(c.logs, f"{path}.containers[{i}].logs") for i, c in enumerate(containers)]
    volumes = [_fs(v, f"{path}.volume[{i}]") for i, v in enumerate(p.volume or ()) if v.name in local_volumes]
    memory = _memory(p.memory, f"{path}.memory")
    working_set = memory.working_set_bytes if memory is not None else None
    _at_most(working_set, memory_limit, f"{path}.memory.workingSetBytes", "its node's memory capacity")
    processes = None
    if p.process_stats is not None:
        processes = _count(p.process_stats.process_count, f"{path}.process_stats.process_count")
    return PodUsage(
        memory_working_set=working_set,
        rootfs_bytes=_sum([f.used_bytes if f else None for f in rootfs]),
        rootfs_inodes=_sum([f.inodes_used if f else None for f in rootfs]),
        logs_bytes=_sum([f.used_bytes if f else None for f in logs]),
        logs_inodes=_sum([f.inodes_used if f else None for f in logs]),
        local_volume_bytes=_sum([f.used_bytes if f else None for f in volumes]),
        local_volume_inodes=_sum([f.inodes_used if f else None for f in volumes]),
        processes=processes,
        time=memory.time if memory is not None else None,
        source=SOURCE_SUMMARY,
    )


# --- KubeletConfiguration ------------------------------------------------------------------------


def kubelet_config_from_dict(d: Mapping[str, Any]) -> us.KubeletConfiguration:
    """A KubeletConfiguration document, or `/configz`'s {"kubeletconfig": {...}}."""
    body = d.get("kubeletconfig") if "kubeletconfig" in d and "kind" not in d else d
    if not isinstance(body, Mapping):
        raise ConversionError("kubeletconfig", "expected an object", "KubeletConfiguration")
    config = struct_from_dict(body, us.KubeletConfiguration, "KubeletConfiguration")
    if config.api_version and config.api_version != us.KUBELET_CONFIG_API_VERSION:
        raise ConversionError(
            "apiVersion",
            f"expected {us.KUBELET_CONFIG_API_VERSION}, got {config.api_version!r}",
            "KubeletConfiguration",
        )
    return config


def eviction_settings(c: us.KubeletConfiguration) -> KubeletEvictionSettings:
    """The eviction fields with the kubelet's v1beta1 defaults (a zero transition period is 5m)."""
    period = DEFAULT_PRESSURE_TRANSITION_PERIOD
    if c.eviction_pressure_transition_period:
        try:
            period = parse_go_duration(c.eviction_pressure_transition_period)
        except ValueError as exc:
            raise ConversionError(
                "evictionPressureTransitionPeriod", str(exc), "KubeletConfiguration"
            ) from None
        if period < 0:
            raise ConversionError(
                "evictionPressureTransitionPeriod", "must not be negative", "KubeletConfiguration"
            )
        period = period or DEFAULT_PRESSURE_TRANSITION_PERIOD
    enforce = DEFAULT_ENFORCE_NODE_ALLOCATABLE
    if c.enforce_node_allocatable is not None:
        enforce = tuple(c.enforce_node_allocatable)
    return KubeletEvictionSettings(
        eviction_hard=c.eviction_hard,
        eviction_soft=c.eviction_soft,
        eviction_soft_grace_period=c.eviction_soft_grace_period,
        eviction_minimum_reclaim=c.eviction_minimum_reclaim,
        eviction_pressure_transition_period=period,
        eviction_max_pod_grace_period=c.eviction_max_pod_grace_period or 0,
        merge_default_eviction_settings=bool(c.merge_default_eviction_settings),
        enforce_node_allocatable=enforce,
    )
