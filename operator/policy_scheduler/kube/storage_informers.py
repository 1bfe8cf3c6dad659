"""The storage informers (PV, PVC, StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
VolumeAttachment): every
change goes to `Engine.storage_changed` and wakes VolumeBinding's PreBind waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.storage_convert import (
    csi_driver_from_api,
    csi_node_from_api,
    csi_storage_capacity_from_api,
    pv_from_api,
    pvc_from_api,
    storage_class_from_api,
    volume_attachment_from_api,
)
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.paths import (
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
)
from policy_scheduler.kube.timings import InformerTimings
from policy_scheduler.scheduler.storage.lister import StorageObject

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

STORAGE_RESOURCES: tuple[tuple[str, type[Any], Callable[[Any], StorageObject]], ...] = (
    (PERSISTENT_VOLUMES, st.PersistentVolume, pv_from_api),
    (PERSISTENT_VOLUME_CLAIMS, st.PersistentVolumeClaim, pvc_from_api),
    (STORAGE_CLASSES, st.StorageClass, storage_class_from_api),
    (CSI_NODES, st.CSINode, csi_node_from_api),
    (CSI_DRIVERS, st.CSIDriver, csi_driver_from_api),
    (CSI_STORAGE_CAPACITIES, st.CSIStorageCapacity, csi_storage_capacity_from_api),
    (VOLUME_ATTACHMENTS, st.VolumeAttachment, volume_attachment_from_api),
)


class StorageSink(Protocol):
    def storage_changed(self, old: StorageObject | None, new: StorageObject | None) -> None: ...


class StorageChanges:
    """Wakes everyone waiting for the next storage change (the PV controller's writes)."""

    def __init__(self) -> None:
        self._changed = asyncio.Event()

    def notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, max_seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout=max(max_seconds, 0.0))


def storage_informers(
    api: ApiClient, sink: StorageSink, changes: StorageChanges, timings: InformerTimings
) -> list[Informer[Any, StorageObject]]:
    def changed(old: StorageObject | None, new: StorageObject | None) -> None:
        sink.storage_changed(old, new)
        changes.notify()

    return [
        Informer(
            api,
            path,
            item_type,
            convert,
            on_add=lambda new: changed(None, new),
            on_update=changed,
            on_delete=lambda old: changed(old, None),
            timings=timings,
        )
        for path, item_type, convert in STORAGE_RESOURCES
    ]
