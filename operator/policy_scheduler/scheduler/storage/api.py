"""VolumeBindingAPI: the API writes VolumeBinding's PreBind needs (the operator implements it
with its Kubernetes client, simulate in memory)."""

from __future__ import annotations

from typing import Protocol

from policy_scheduler.scheduler.storage.types import PersistentVolume, PersistentVolumeClaim


class VolumeBindingAPI(Protocol):
    """Updates return the object as stored (with its new resourceVersion)."""

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume: ...

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim: ...

    async def wait_for_change(self, max_seconds: float) -> None:
        """Return when the storage lister may have changed (the PV controller wrote), or after
        `max_seconds` (the adapter bounds the wait; upstream polls every second)."""
        ...
