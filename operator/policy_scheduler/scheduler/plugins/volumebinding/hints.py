"""VolumeBinding's queueing hints (EnqueueExtensions)."""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.storage.claims import claim_names
from policy_scheduler.scheduler.storage.types import ANN_MIGRATED_PLUGINS
from policy_scheduler.scheduler.storage.volumes import CSI

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QUEUE
    migrated_old = old.annotations.get(ANN_MIGRATED_PLUGINS)
    return QUEUE if migrated_old != new.annotations.get(ANN_MIGRATED_PLUGINS) else SKIP


def after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if pod.namespace != new.namespace:
        return SKIP
    return QUEUE if any(name == new.name for name, _ in claim_names(pod)) else SKIP


def after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QUEUE
    return QUEUE if old.allowed_topologies != new.allowed_topologies else SKIP


def after_csi_storage_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QUEUE
    new_limit, old_limit = new.volume_limit, old.volume_limit
    return QUEUE if new_limit is not None and (old_limit is None or new_limit > old_limit) else SKIP


def after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    for volume in pod.volumes:
        if volume.kind != CSI or volume.source_id != new.name:
            continue
        if old is not None and old.storage_capacity and not new.storage_capacity:
            return QUEUE
    return SKIP


def volume_binding_events() -> list[ClusterEventWithHint]:
    add_update = Action.ADD | Action.UPDATE
    return [
        ClusterEventWithHint(ClusterEvent(Resource.STORAGE_CLASS, add_update), after_storage_class_change),
        ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_update), after_pvc_change),
        ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, add_update)),
        ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, add_update), after_csi_node_change),
        ClusterEventWithHint(ClusterEvent(Resource.CSI_DRIVER, Action.UPDATE), after_csi_driver_change),
        ClusterEventWithHint(
            ClusterEvent(Resource.CSI_STORAGE_CAPACITY, add_update), after_csi_storage_capacity_change
        ),
    ]
