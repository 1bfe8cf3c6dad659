"""VolumeUsage: which rows' pods use which claims and restricted disks, following the NodeTable.

Shared by every profile (one per table, like the inter-pod affinity index): VolumeRestrictions
asks whether a claim is in use and where conflicting disks are; NodeVolumeLimits counts the
volumes attached per row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable, PodListener
from policy_scheduler.scheduler.storage.volumes import (
    AWS_EBS,
    AZURE_DISK,
    CINDER,
    GCE_PD,
    ISCSI,
    PORTWORX,
    PVC,
    RBD,
    VSPHERE,
    Volume,
)

RESTRICTED_KINDS = frozenset({GCE_PD, AWS_EBS, ISCSI, RBD})
# Indexed disks: VolumeRestrictions' kinds, plus the inline in-tree ones NodeVolumeLimits counts.
DISK_KINDS = RESTRICTED_KINDS | {AZURE_DISK, CINDER, VSPHERE, PORTWORX}


class VolumeUsage:
    def __init__(self, table: NodeTable) -> None:
        # "namespace/claim" → pods using it per row (NodeInfo.PVCRefCounts; PVC volumes only)
        self.pvc_rows: dict[str, Counter[int]] = {}
        # "namespace/claim" of PVC and ephemeral volumes → rows (for attach counting)
        self.claim_rows: dict[str, Counter[int]] = {}
        # (kind, source id) → [(row, pod key, volume)] of scheduled pods' disks (DISK_KINDS)
        self.disks: dict[tuple[str, str], list[tuple[int, str, Volume]]] = {}
        self._accounted: dict[str, tuple[Pod, int]] = {}  # pod key → what was counted
        self.listener = PodListener(self.on_add, self.on_remove)
        for row in range(table.n):
            for pod in table.pods_on(row):
                self.on_add(pod, row)
        table.listeners.append(self.listener)

    @staticmethod
    def of(table: NodeTable) -> VolumeUsage:
        """The table's usage, created (and subscribed) on first use; shared by every profile."""
        return table.shared_index(VolumeUsage)

    def on_add(self, pod: Pod, row: int) -> None:
        previous = self._accounted.get(pod.key)
        if previous is not None:  # replaced without a removal: take the old one out first
            self.on_remove(*previous)
        self._accounted[pod.key] = (pod, row)
        self._account(pod, row, 1)

    def on_remove(self, pod: Pod, row: int) -> None:
        previous = self._accounted.get(pod.key)
        if previous is None or previous[1] != row:
            return
        del self._accounted[pod.key]
        self._account(previous[0], row, -1)

    def _account(self, pod: Pod, row: int, sign: int) -> None:
        for volume in pod.volumes:
            claim = volume.claim_for(pod.name)
            if claim:
                key = f"{pod.namespace}/{claim}"
                if volume.kind == PVC:
                    _bump(self.pvc_rows, key, row, sign)
                _bump(self.claim_rows, key, row, sign)
            elif volume.kind in DISK_KINDS:
                entries = self.disks.setdefault((volume.kind, volume.source_id), [])
                if sign > 0:
                    entries.append((row, pod.key, volume))
                else:
                    entries[:] = [e for e in entries if not (e[0] == row and e[1] == pod.key)]
                    if not entries:
                        del self.disks[(volume.kind, volume.source_id)]

    def is_pvc_used(self, key: str) -> bool:
        """Snapshot.IsPVCUsedByPods."""
        return key in self.pvc_rows

    def disk_users(self, volume: Volume) -> Iterator[tuple[int, Volume]]:
        for row, _, existing in self.disks.get((volume.kind, volume.source_id), ()):
            yield row, existing


def _bump(index: dict[str, Counter[int]], key: str, row: int, sign: int) -> None:
    rows = index.setdefault(key, Counter())
    rows[row] += sign
    if rows[row] <= 0:
        del rows[row]
        if not rows:
            del index[key]
