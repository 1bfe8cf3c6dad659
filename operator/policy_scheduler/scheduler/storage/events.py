"""The cluster event a storage object change is, for the queue's hints."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, Resource
from policy_scheduler.scheduler.storage.lister import StorageObject
from policy_scheduler.scheduler.storage.types import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

_RESOURCES: dict[type, Resource] = {
    PersistentVolume: Resource.PERSISTENT_VOLUME,
    PersistentVolumeClaim: Resource.PERSISTENT_VOLUME_CLAIM,
    StorageClass: Resource.STORAGE_CLASS,
    CSINode: Resource.CSI_NODE,
    CSIDriver: Resource.CSI_DRIVER,
    CSIStorageCapacity: Resource.CSI_STORAGE_CAPACITY,
    VolumeAttachment: Resource.VOLUME_ATTACHMENT,
}


def storage_event(old: StorageObject | None, new: StorageObject | None) -> ClusterEvent:
    """Add when there was no old object, Delete when there is no new one, else Update."""
    obj = new if new is not None else old
    if obj is None:
        raise ValueError("a storage change needs an old or a new object")
    action = Action.ADD if old is None else Action.DELETE if new is None else Action.UPDATE
    return ClusterEvent(_RESOURCES[type(obj)], action)
