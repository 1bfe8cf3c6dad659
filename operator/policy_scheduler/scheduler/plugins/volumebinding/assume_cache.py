"""The PV/PVC assume cache: in-memory bindings the scheduler decided but the API has not yet seen.

Port of volumebinding's passive assume cache over a StorageLister. An assumed object hides the
informer's until the informer delivers a newer resourceVersion (the API write came back) or the
assumption is restored. One cache per StorageLister and node table, shared by every profile, so
two profiles cannot assume the same PV twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.storage.lister import StorageLister
from policy_scheduler.scheduler.storage.types import (
    PersistentVolume,
    PersistentVolumeClaim,
    version_int,
)


class AssumeError(Exception):
    pass


class _Versioned(Protocol):
    @property
    def resource_version(self) -> str: ...


_Object = TypeVar("_Object", bound=_Versioned)


def _newer(stored: _Object | None, assumed: dict[str, _Object], key: str) -> _Object | None:
    """The assumed object of `key` until the API's is newer (the informer caught up: the
    assumption is dropped); the API's when nothing is assumed or the object is gone."""
    mine = assumed.get(key)
    if mine is None or stored is None:
        return stored
    if version_int(stored.resource_version) > version_int(mine.resource_version):
        del assumed[key]
        return stored
    return mine


def _assume(
    assumed: dict[str, _Object], key: str, obj: _Object, stored: _Object | None, not_found: str
) -> None:
    """Assume `obj` unless the API has no such object or a newer version of it."""
    if stored is None:
        raise AssumeError(not_found)
    if version_int(obj.resource_version) < version_int(stored.resource_version):
        raise AssumeError(
            f"{key!r} is out of sync (stored: {stored.resource_version}, assume: {obj.resource_version})"
        )
    assumed[key] = obj


class AssumeCache:
    def __init__(self, lister: StorageLister) -> None:
        self.lister = lister
        self._pvs: dict[str, PersistentVolume] = {}
        self._pvcs: dict[str, PersistentVolumeClaim] = {}

    # ---- PVs --------------------------------------------------------------------------------

    def get_pv(self, name: str) -> PersistentVolume | None:
        return _newer(self.lister.get_pv(name), self._pvs, name)

    def list_pvs(self, class_name: str) -> list[PersistentVolume]:
        """PVs of one storage class in name order (upstream's order is map order)."""
        pvs = [self.get_pv(pv.name) for pv in self.lister.list_pvs() if pv.storage_class_name == class_name]
        return sorted((pv for pv in pvs if pv is not None), key=lambda pv: pv.name)

    def assume_pv(self, pv: PersistentVolume) -> None:
        stored = self.lister.get_pv(pv.name)
        _assume(self._pvs, pv.name, pv, stored, f'persistentvolumes "{pv.name}" not found')

    def restore_pv(self, name: str) -> None:
        self._pvs.pop(name, None)

    # ---- PVCs -------------------------------------------------------------------------------

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return _newer(self.lister.get_pvc(namespace, name), self._pvcs, f"{namespace}/{name}")

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        stored = self.lister.get_pvc(pvc.namespace, pvc.name)
        _assume(self._pvcs, pvc.key, pvc, stored, f'persistentvolumeclaims "{pvc.name}" not found')

    def restore_pvc(self, key: str) -> None:
        self._pvcs.pop(key, None)

    def assumed_pvs(self) -> Sequence[str]:
        return list(self._pvs)


class AssumeCaches:
    """A node table's assume caches, one per StorageLister: the table's shared index, so they live
    and go with the engine (or simulation) that owns the table."""

    def __init__(self, _table: NodeTable) -> None:
        self._by_lister: dict[int, tuple[StorageLister, AssumeCache]] = {}

    def for_lister(self, lister: StorageLister) -> AssumeCache:
        # By identity: a lister need not be hashable; the entry holds it, so its id stays its own.
        entry = self._by_lister.get(id(lister))
        if entry is None:
            entry = self._by_lister[id(lister)] = (lister, AssumeCache(lister))
        return entry[1]


def assume_cache_for(table: NodeTable, lister: StorageLister) -> AssumeCache:
    """The one AssumeCache of `lister` among the plugins over `table` (every profile's)."""
    return table.shared_index(AssumeCaches).for_lister(lister)
