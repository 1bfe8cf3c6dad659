"""What the informers tell the scheduler: the Engine's event ports, so that the adapters that
call them (kube/) and what stands between (observability's TimedEvents) name one protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from policy_scheduler.scheduler.framework.events import Resource
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.storage.lister import StorageObject


class ClusterSink(Protocol):
    """Pods, nodes, namespaces' labels and storage objects (the Engine)."""

    def pod_added(self, pod: Pod) -> None: ...

    def pod_updated(self, old: Pod, new: Pod) -> None: ...

    def node_added(self, node: Node) -> None: ...

    def node_updated(self, old: Node, new: Node) -> None: ...

    def node_deleted(self, node: Node) -> None: ...

    def set_namespace_labels(self, labels: Mapping[str, Mapping[str, str]]) -> None: ...

    def storage_changed(self, old: StorageObject | None, new: StorageObject | None) -> None: ...


class DraSink(Protocol):
    """ResourceSlices, DeviceClasses and ResourceClaims (the Engine)."""

    def dra_changed(self, resource: Resource, old: object | None, new: object | None) -> None: ...


class EngineEvents(ClusterSink, DraSink, Protocol):
    """Every event the informers deliver."""
