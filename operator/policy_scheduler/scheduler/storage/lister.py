"""StorageLister: the lookups the volume plugins need; StorageObjects: its in-memory form.

The operator's informers and `simulate` feed a StorageObjects with upsert/delete; tests build
one directly. Lookups return None for a missing object (the plugins word the NotFound errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from policy_scheduler.scheduler.storage.types import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

StorageObject = (
    PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | VolumeAttachment
)


class StorageLister(Protocol):
    # Bumped on every change, so plugins can cache derived per-node arrays.
    @property
    def generation(self) -> int: ...

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...
    def get_pv(self, name: str) -> PersistentVolume | None: ...
    def list_pvs(self) -> Sequence[PersistentVolume]: ...
    def get_storage_class(self, name: str) -> StorageClass | None: ...
    def get_csi_node(self, name: str) -> CSINode | None: ...
    def get_csi_driver(self, name: str) -> CSIDriver | None: ...
    def list_csi_storage_capacities(self) -> Sequence[CSIStorageCapacity]: ...
    def list_volume_attachments(self) -> Sequence[VolumeAttachment]: ...


def _name(obj: StorageObject) -> str:
    if isinstance(obj, PersistentVolumeClaim | CSIStorageCapacity):
        return f"{obj.namespace}/{obj.name}"
    return obj.name


class StorageObjects:
    """Dict-backed StorageLister, one dict per kind; `generation` bumps on every change."""

    def __init__(self, objects: Sequence[StorageObject] = ()) -> None:
        self._pvs: dict[str, PersistentVolume] = {}
        self._pvcs: dict[str, PersistentVolumeClaim] = {}
        self._classes: dict[str, StorageClass] = {}
        self._csi_nodes: dict[str, CSINode] = {}
        self._csi_drivers: dict[str, CSIDriver] = {}
        self._capacities: dict[str, CSIStorageCapacity] = {}
        self._attachments: dict[str, VolumeAttachment] = {}
        self.generation = 0
        for obj in objects:
            self.upsert(obj)

    def _store(self, obj: StorageObject) -> dict[str, Any]:
        stores: dict[type, dict[str, Any]] = {
            PersistentVolume: self._pvs,
            PersistentVolumeClaim: self._pvcs,
            StorageClass: self._classes,
            CSINode: self._csi_nodes,
            CSIDriver: self._csi_drivers,
            CSIStorageCapacity: self._capacities,
            VolumeAttachment: self._attachments,
        }
        return stores[type(obj)]

    def upsert(self, obj: StorageObject) -> None:
        self._store(obj)[_name(obj)] = obj
        self.generation += 1

    def delete(self, obj: StorageObject) -> None:
        if self._store(obj).pop(_name(obj), None) is not None:
            self.generation += 1

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._pvcs.get(f"{namespace}/{name}")

    def get_pv(self, name: str) -> PersistentVolume | None:
        return self._pvs.get(name)

    def list_pvs(self) -> Sequence[PersistentVolume]:
        return list(self._pvs.values())

    def get_storage_class(self, name: str) -> StorageClass | None:
        return self._classes.get(name)

    def get_csi_node(self, name: str) -> CSINode | None:
        return self._csi_nodes.get(name)

    def get_csi_driver(self, name: str) -> CSIDriver | None:
        return self._csi_drivers.get(name)

    def list_csi_storage_capacities(self) -> Sequence[CSIStorageCapacity]:
        return list(self._capacities.values())

    def list_volume_attachments(self) -> Sequence[VolumeAttachment]:
        return list(self._attachments.values())
