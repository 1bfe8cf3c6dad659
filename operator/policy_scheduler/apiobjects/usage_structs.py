"""msgspec views of the usage and kubelet-configuration objects node-pressure reads.

- NodeMetrics and PodMetrics (metrics.k8s.io/v1beta1) as `kubectl get nodemetrics -o yaml` and
  the metrics API write them: memory is the working set; no disk, inode or PID figures.
- The kubelet's Summary API (stats/v1alpha1, `GET /api/v1/nodes/NAME/proxy/stats/summary`):
  the fields eviction reads, with the kubelet's JSON names.
- KubeletConfiguration (kubelet.config.k8s.io/v1beta1): the eviction fields, as in the kubelet's
  config file or `/configz` (which wraps it as {"kubeletconfig": {...}}).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from policy_scheduler.apiobjects.structs import ObjectMeta, Quantity, _Base

METRICS_API_VERSION = "metrics.k8s.io/v1beta1"
KUBELET_CONFIG_API_VERSION = "kubelet.config.k8s.io/v1beta1"


class NodeMetrics(_Base):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    timestamp: datetime | None = None
    window: str = ""
    usage: dict[str, Quantity] | None = None


class ContainerMetrics(_Base):
    name: str = ""
    usage: dict[str, Quantity] | None = None


class PodMetrics(_Base):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    timestamp: datetime | None = None
    window: str = ""
    containers: list[ContainerMetrics] | None = None


# --- the Summary API -----------------------------------------------------------------------------


class FsStats(_Base):
    time: datetime | None = None
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None


class MemoryStats(_Base):
    time: datetime | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None


class ContainerStats(_Base):
    name: str = ""
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None


class RuntimeStats(_Base):
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None


class RlimitStats(_Base):
    time: datetime | None = None
    maxpid: int | None = None
    curproc: int | None = None


class SummaryNode(_Base):
    node_name: str = ""
    system_containers: list[ContainerStats] | None = None
    memory: MemoryStats | None = None
    fs: FsStats | None = None
    runtime: RuntimeStats | None = None
    rlimit: RlimitStats | None = None


class PodReference(_Base):
    name: str = ""
    namespace: str = ""
    uid: str = ""


class VolumeStats(FsStats):
    name: str = ""


class ProcessStats(_Base):
    process_count: int | None = msgspec.field(default=None, name="process_count")


class SummaryPod(_Base):
    pod_ref: PodReference = msgspec.field(default_factory=PodReference)
    containers: list[ContainerStats] | None = None
    memory: MemoryStats | None = None
    volume: list[VolumeStats] | None = None
    ephemeral_storage: FsStats | None = msgspec.field(default=None, name="ephemeral-storage")
    process_stats: ProcessStats | None = msgspec.field(default=None, name="process_stats")


class Summary(_Base):
    node: SummaryNode = msgspec.field(default_factory=SummaryNode)
    pods: list[SummaryPod] | None = None


# --- KubeletConfiguration ----------------------------------------------------------------------


class KubeletConfiguration(_Base):
    api_version: str = ""
    kind: str = ""
    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] | None = None
    eviction_soft_grace_period: dict[str, str] | None = None
    eviction_minimum_reclaim: dict[str, str] | None = None
    eviction_pressure_transition_period: str | None = None
    eviction_max_pod_grace_period: int | None = None
    merge_default_eviction_settings: bool | None = None
    enforce_node_allocatable: list[str] | None = None
