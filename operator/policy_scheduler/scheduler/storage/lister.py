"""StorageLister: the lookups the volume plugins need; StorageObjects: its in-memory form.

The operator's informers and `simulate` feed a StorageObjects with upsert/delete; tests build
one directly. Lookups return None for a missing object (the plugins word the NotFound errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from policy_scheduler.scheduler.storage.types import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

StorageObject = (
    PersistentVolume | PersistentVolumeClaim | StorageClass | CSINode | CSIDriver | CSIStorageCapacity
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


def _key(obj: StorageObject) -> tuple[type, str]:
    if isinstance(obj, PersistentVolumeClaim | CSIStorageCapacity):
        return type(obj), f"{obj.namespace}/{obj.name}"
    return type(obj), obj.name


class StorageObjects:
    """Dict-backed StorageLister; `generation` bumps on every change."""

    def __init__(self, objects: Sequence[StorageObject] = ()) -> None:
        self._objects: dict[tuple[type, str], StorageObject] = {}
        self.generation = 0
        for obj in objects:
            self.upsert(obj)

    def upsert(self, obj: StorageObject) -> None:
        self._objects[_key(obj)] = obj
        self.generation += 1

    def delete(self, obj: StorageObject) -> None:
        if self._objects.pop(_key(obj), None) is not None:
            self.generation += 1

    def _get(self, kind: type, key: str) -> StorageObject | None:
        return self._objects.get((kind, key))

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        obj = self._get(PersistentVolumeClaim, f"{namespace}/{name}")
        return obj if isinstance(obj, PersistentVolumeClaim) else None

    def get_pv(self, name: str) -> PersistentVolume | None:
        obj = self._get(PersistentVolume, name)
        return obj if isinstance(obj, PersistentVolume) else None

    def list_pvs(self) -> Sequence[PersistentVolume]:
        return [o for o in self._objects.values() if isinstance(o, PersistentVolume)]

    def get_storage_class(self, name: str) -> StorageClass | None:
        obj = self._get(StorageClass, name)
        return obj if isinstance(obj, StorageClass) else None

    def get_csi_node(self, name: str) -> CSINode | None:
        obj = self._get(CSINode, name)
        return obj if isinstance(obj, CSINode) else None

    def get_csi_driver(self, name: str) -> CSIDriver | None:
        obj = self._get(CSIDriver, name)
        return obj if isinstance(obj, CSIDriver) else None

    def list_csi_storage_capacities(self) -> Sequence[CSIStorageCapacity]:
        return [o for o in self._objects.values() if isinstance(o, CSIStorageCapacity)]
