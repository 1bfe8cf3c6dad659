"""VolumeRestrictions: in-tree disk conflicts (GCE PD, AWS EBS, iSCSI, RBD) on a node, and
ReadWriteOncePod claims already used by another scheduled pod."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.batch import VOLUMES_SIGNER, volumes_signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import (
    SKIP,
    SUCCESS,
    Status,
    error,
    unresolvable,
    unschedulable,
)
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import Rows
from policy_scheduler.scheduler.storage.errors import pvc_not_found
from policy_scheduler.scheduler.storage.types import READ_WRITE_ONCE_POD
from policy_scheduler.scheduler.storage.usage import RESTRICTED_KINDS, VolumeUsage
from policy_scheduler.scheduler.storage.volumes import AWS_EBS, PVC, RBD, Volume

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
STATE_KEY = "PreFilterVolumeRestrictions"


@dataclass(slots=True)
class _State:
    rwop_claims: frozenset[str]
    conflicting_refs: int

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, pod: Pod, sign: int) -> None:
        self.conflicting_refs += sign * sum(
            1 for v in pod.volumes if v.kind == PVC and v.claim_name in self.rwop_claims
        )


def is_volume_conflict(volume: Volume, existing: Volume) -> bool:
    """isVolumeConflict for two volumes of the same kind and source id."""
    if volume.kind == AWS_EBS:
        return True
    if volume.kind == RBD and not set(volume.rbd_monitors) & set(existing.rbd_monitors):
        return False
    return not (volume.read_only and existing.read_only)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin):
    name = "VolumeRestrictions"
    signs_pods = True
    has_extensions = True

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((VOLUMES_SIGNER, volumes_signature(pod)),)

    @property
    def usage(self) -> VolumeUsage:
        return VolumeUsage.of(self.table)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        needs_check = any(v.kind in RESTRICTED_KINDS for v in pod.volumes)
        rwop: set[str] = set()
        for volume in pod.volumes:
            if volume.kind != PVC:
                continue
            pvc = self.handle.storage.get_pvc(pod.namespace, volume.claim_name)
            if pvc is None:
                return None, unresolvable(pvc_not_found(volume.claim_name))
            if READ_WRITE_ONCE_POD in pvc.access_modes:
                rwop.add(pvc.name)
        conflicting = sum(1 for name in rwop if self.usage.is_pvc_used(f"{pod.namespace}/{name}"))
        if not needs_check and conflicting == 0:
            return None, SKIP
        state.write(STATE_KEY, _State(frozenset(rwop), conflicting))
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        data = state.read(STATE_KEY)
        if not isinstance(data, _State):
            return error(f'cannot read "{STATE_KEY}" from cycleState')
        data.update_with_pod(added, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        data = state.read(STATE_KEY)
        if not isinstance(data, _State):
            return error(f'cannot read "{STATE_KEY}" from cycleState')
        data.update_with_pod(removed, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        conflict_rows: set[int] = set()
        for volume in pod.volumes:
            if volume.kind in RESTRICTED_KINDS:
                conflict_rows.update(
                    r for r, ev in self.usage.disk_users(volume) if is_volume_conflict(volume, ev)
                )
        disk = np.isin(rows, np.fromiter(conflict_rows, dtype=np.int64, count=len(conflict_rows)))
        data = state.read(STATE_KEY)
        if not isinstance(data, _State):
            return FilterResult.reject_all(len(rows), error(f'cannot read "{STATE_KEY}" from cycleState'))
        rwop = np.full(len(rows), data.conflicting_refs > 0) & ~disk
        index = np.where(disk, 0, 1).astype(np.int32)
        statuses = (unschedulable(ERR_REASON_DISK_CONFLICT), unschedulable(ERR_REASON_RWOP_CONFLICT))
        return FilterResult(~(disk | rwop), index, statuses)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD), _after_pvc_added
            ),
        ]

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        deleted: Pod = old
        if deleted.namespace != pod.namespace:
            return QueueingHint.SKIP
        for volume in pod.volumes:
            if volume.kind in RESTRICTED_KINDS and any(
                ev.kind == volume.kind and ev.source_id == volume.source_id and is_volume_conflict(volume, ev)
                for ev in deleted.volumes
            ):
                return QueueingHint.QUEUE
        claims = {v.claim_name for v in pod.volumes if v.kind == PVC}
        if any(v.kind == PVC and v.claim_name in claims for v in deleted.volumes):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new.namespace != pod.namespace:
        return QueueingHint.SKIP
    hit = any(v.kind == PVC and v.claim_name == new.name for v in pod.volumes)
    return QueueingHint.QUEUE if hit else QueueingHint.SKIP
