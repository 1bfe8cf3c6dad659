"""What the kubelet's eviction reads of a pod besides its usage: priority, requests, and the
marks that keep it from ever being evicted (pkg/kubelet/types/pod_update.go IsCriticalPod,
pkg/api/v1/resource GetResourceRequestQuantity)."""

from __future__ import annotations

from dataclasses import dataclass

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.resource_names import EPHEMERAL_STORAGE, MEMORY

CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
API_SERVER_SOURCE = "api"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority


@dataclass(frozen=True, slots=True)
class PodFacts:
    """A pod as the eviction manager ranks it. Requests follow GetResourceRequestQuantity:
    containers (sidecars and pod-level resources included) plus overhead, the overhead only
    when the rest is not zero."""

    namespace: str
    name: str
    uid: str = ""
    priority: int = 0
    memory_request: int = 0
    ephemeral_storage_request: int = 0
    qos: str = ""  # Guaranteed, Burstable, BestEffort; "" when unknown (display only)
    static: bool = False  # kubernetes.io/config.source other than "api"
    mirror: bool = False  # kubernetes.io/config.mirror

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def critical(self) -> bool:
        """IsCriticalPod: static, mirror, or priority at least system-cluster-critical's."""
        return self.static or self.mirror or self.priority >= SYSTEM_CRITICAL_PRIORITY

    @property
    def never_evicted(self) -> str | None:
        """Why the kubelet will not evict this pod (evictPod refuses critical pods), if so."""
        if self.static:
            return "static pod"
        if self.mirror:
            return "mirror pod"
        if self.priority >= SYSTEM_CRITICAL_PRIORITY:
            return f"critical pod (priority {self.priority} >= {SYSTEM_CRITICAL_PRIORITY})"
        return None


def kubelet_request(pod: Pod, resource: str) -> int:
    """GetResourceRequestQuantity: PodRequests without overhead, plus the overhead if non-zero."""
    total = pod.requests.get(resource, 0)
    return total if total - pod.overhead.get(resource, 0) != 0 else 0


def pod_facts(pod: Pod) -> PodFacts:
    annotations = pod.annotations
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    return PodFacts(
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid,
        priority=pod.priority,
        memory_request=kubelet_request(pod, MEMORY),
        ephemeral_storage_request=kubelet_request(pod, EPHEMERAL_STORAGE),
        qos=pod.qos_class,
        static=source is not None and source != API_SERVER_SOURCE,
        mirror=CONFIG_MIRROR_ANNOTATION in annotations,
    )


def local_volume_names(pod: Pod) -> frozenset[str]:
    """localVolumeNames: the volumes whose usage counts as the pod's local storage."""
    return frozenset(v.name for v in pod.volumes if v.local)
