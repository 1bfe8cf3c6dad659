"""VolumeBinding's PreBind in simulate: no API. The writes are recorded and applied to the
in-memory storage objects as the PV controller (and, for dynamic provisioning, a provisioner)
would complete them, so later pods see the volumes taken."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from policy_scheduler.scheduler.storage.lister import StorageLister, StorageObject
from policy_scheduler.scheduler.storage.types import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    version_int,
)

BOUND = "Bound"


def _next_version(version: str) -> str:
    return str(version_int(version) + 1)


class MemoryVolumeAPI:
    """`bindings`: (claim key, PV name) for every PV bound; `provisions`: (claim key, node)."""

    def __init__(
        self, storage: StorageLister, changed: Callable[[StorageObject | None, StorageObject], None]
    ) -> None:
        self.storage = storage
        self.changed = changed
        self.bindings: list[tuple[str, str]] = []
        self.provisions: list[tuple[str, str]] = []

    def _bind_claim(self, pvc: PersistentVolumeClaim, pv_name: str) -> None:
        current = self.storage.get_pvc(pvc.namespace, pvc.name) or pvc
        bound = dataclasses.replace(
            current,
            volume_name=pv_name,
            phase=BOUND,
            annotations={**current.annotations, ANN_BIND_COMPLETED: "yes"},
            resource_version=_next_version(current.resource_version),
        )
        self.changed(current, bound)

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        stored = dataclasses.replace(pv, phase=BOUND, resource_version=_next_version(pv.resource_version))
        self.changed(self.storage.get_pv(pv.name), stored)
        if pv.claim_ref is not None:
            ref = pv.claim_ref
            pvc = self.storage.get_pvc(ref.namespace, ref.name)
            if pvc is not None:
                self.bindings.append((pvc.key, pv.name))
                self._bind_claim(pvc, pv.name)
        return stored

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        node = pvc.annotations.get(ANN_SELECTED_NODE, "")
        self.provisions.append((pvc.key, node))
        stored = dataclasses.replace(pvc, resource_version=_next_version(pvc.resource_version))
        self.changed(self.storage.get_pvc(pvc.namespace, pvc.name), stored)
        # The provisioner's volume: no node affinity, exactly the size asked.
        pv = PersistentVolume(
            name=f"pvc-{pvc.uid or pvc.namespace + '-' + pvc.name}",
            storage_class_name=pvc.class_name,
            capacity=pvc.request or 0,
            access_modes=pvc.access_modes,
            volume_mode=pvc.volume_mode,
            claim_ref=ClaimRef(pvc.namespace, pvc.name, pvc.uid),
            phase=BOUND,
            resource_version="1",
        )
        self.changed(None, pv)
        self._bind_claim(stored, pv.name)
        return stored

    async def wait_for_change(self, max_seconds: float) -> None:
        await asyncio.sleep(0)  # everything was completed by the writes
