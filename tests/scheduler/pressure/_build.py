"""Builders mirroring helpers_test.go's (newPod, newContainer, newResourceList, newPod*Stats)
so the ported tables read like the Go originals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.pressure.observations import PodUsage
from policy_scheduler.scheduler.pressure.pods import PodFacts, local_volume_names, pod_facts
from policy_scheduler.scheduler.pressure.ranking import PodColumns
from policy_scheduler.scheduler.resources import canonical
from policy_scheduler.scheduler.storage.volumes import Volume

LOW_PRIORITY = -1
DEFAULT_PRIORITY = 0
HIGH_PRIORITY = 1


def q(text: str) -> int:
    """resource.MustParse(text).Value()."""
    return canonical("", text)


def new_resource_list(cpu: str = "", memory: str = "", disk: str = "") -> dict[str, int]:
    """newResourceList: only the non-empty quantities."""
    wanted = {"cpu": cpu, "memory": memory, "ephemeral-storage": disk}
    return {name: canonical(name, value) for name, value in wanted.items() if value}


def new_container(name: str, requests: Mapping[str, int] | None = None) -> Container:
    """newContainer (limits do not take part in eviction ranking)."""
    return Container(name, requests=dict(requests or {}))


def local_volume(name: str = "local-volume") -> Volume:
    """newVolume with an EmptyDir source (a local ephemeral volume)."""
    return Volume(name, local=True)


def new_pod(
    name: str,
    priority: int,
    containers: Sequence[Container] = (),
    volumes: Sequence[Volume] = (),
    *,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
) -> Pod:
    """newPod: the uid is the name."""
    return Pod(
        name,
        namespace=namespace,
        uid=name,
        priority=priority,
        containers=tuple(containers),
        volumes=tuple(volumes),
        annotations=dict(annotations or {}),
    )


def memory_stats(working_set: str) -> PodUsage:
    """newPodMemoryStats (its disk stats do not matter for memory ranking)."""
    ws = q(working_set)
    return PodUsage(memory_working_set=ws, rootfs_bytes=ws, logs_bytes=ws, local_volume_bytes=ws)


def disk_stats(pod: Pod, rootfs: str, logs: str, per_local_volume: str) -> PodUsage:
    """newPodDiskStats: rootfs and logs per container, the volume amount per local volume."""
    containers = len(pod.containers)
    volumes = len(local_volume_names(pod))
    return PodUsage(
        rootfs_bytes=containers * q(rootfs),
        logs_bytes=containers * q(logs),
        local_volume_bytes=volumes * q(per_local_volume),
    )


def inode_stats(pod: Pod, rootfs: str, logs: str, per_local_volume: str) -> PodUsage:
    """newPodInodeStats."""
    containers = len(pod.containers)
    volumes = len(local_volume_names(pod))
    return PodUsage(
        rootfs_inodes=containers * q(rootfs),
        logs_inodes=containers * q(logs),
        local_volume_inodes=volumes * q(per_local_volume),
    )


def process_stats(count: int) -> PodUsage:
    """newPodProcessStats."""
    return PodUsage(processes=count)


def columns(pods: Sequence[Pod], stats: Mapping[str, PodUsage | None], node: int = 0) -> PodColumns:
    """The pods on one node, with the stats of those named in `stats` (others: not found)."""
    facts: list[PodFacts] = [pod_facts(p) for p in pods]
    return PodColumns.build(facts, [stats.get(p.name) for p in pods], [node] * len(pods))


def names(cols: PodColumns, order: Iterable[int]) -> list[str]:
    return [cols.facts[int(i)].name for i in order]
