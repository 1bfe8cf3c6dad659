"""The PV/PVC assume cache: in-memory bindings the scheduler decided but the API has not yet seen.

Port of volumebinding's passive assume cache over a StorageLister. An assumed object hides the
informer's until the informer delivers a newer resourceVersion (the API write came back) or the
assumption is restored. One cache per StorageLister, shared by every profile, so two profiles
cannot assume the same PV twice.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Protocol, TypeVar

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
        if stored is None:
            raise AssumeError(f'persistentvolumes "{pv.name}" not found')
        self._check_version(pv.name, stored.resource_version, pv.resource_version)
        self._pvs[pv.name] = pv

    def restore_pv(self, name: str) -> None:
        self._pvs.pop(name, None)

    # ---- PVCs -------------------------------------------------------------------------------

    def get_pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return _newer(self.lister.get_pvc(namespace, name), self._pvcs, f"{namespace}/{name}")

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        stored = self.lister.get_pvc(pvc.namespace, pvc.name)
        if stored is None:
            raise AssumeError(f'persistentvolumeclaims "{pvc.name}" not found')
        self._check_version(pvc.key, stored.resource_version, pvc.resource_version)
        self._pvcs[pvc.key] = pvc

    def restore_pvc(self, key: str) -> None:
        self._pvcs.pop(key, None)

    @staticmethod
    def _check_version(key: str, stored: str, assumed: str) -> None:
        if version_int(assumed) < version_int(stored):
            raise AssumeError(f"{key!r} is out of sync (stored: {stored}, assume: {assumed})")

    def assumed_pvs(self) -> Sequence[str]:
        return list(self._pvs)


_caches: weakref.WeakKeyDictionary[object, AssumeCache] = weakref.WeakKeyDictionary()


def assume_cache_for(lister: StorageLister) -> AssumeCache:
    cache = _caches.get(lister)
    if cache is None:
        cache = AssumeCache(lister)
        _caches[lister] = cache
    return cache
