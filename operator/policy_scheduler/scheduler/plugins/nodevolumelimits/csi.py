"""NodeVolumeLimits (CSILimits): the CSI volumes a pod adds to a node must fit the per-driver
attach limit the node's CSINode reports, counting unique volumes of the pods already there and
the CSI volumes VolumeAttachments hold on the node that no pod there uses.

With the VolumeLimitScaling gate (on from v1.37) a node whose CSINode lacks the driver of one of
the pod's new volumes is refused first (checkCSIDriverOnNode) when a CSIDriver object exists for
it; from v1.36 only when that CSIDriver sets preventPodSchedulingIfMissing."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
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
    Handle,
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
from policy_scheduler.scheduler.nodetable import BoolArray, IntArray, Rows
from policy_scheduler.scheduler.storage.claims import claim_names, volume_is_for_pod
from policy_scheduler.scheduler.storage.csi_translation import (
    csi_name_from_in_tree_name,
    in_tree_plugin_name,
    inline_volume_handle,
    is_csi_migration_on,
    is_inline_migratable,
    is_migratable_in_tree_plugin,
    is_pv_migratable,
    pv_volume_handle,
)
from policy_scheduler.scheduler.storage.errors import pvc_not_found
from policy_scheduler.scheduler.storage.types import CSINode, PersistentVolumeClaim, VolumeAttachment
from policy_scheduler.scheduler.storage.usage import VolumeUsage
from policy_scheduler.scheduler.storage.volumes import PVC
from policy_scheduler.scheduler.versioning.gates import VOLUME_LIMIT_SCALING

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
NO_LIMIT = -1


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin):
    name = "NodeVolumeLimits"
    signs_pods = True

    def __init__(self, handle: Handle, args: Mapping[str, Any]) -> None:
        super().__init__(handle, args)
        # Unbound claims get a made-up volume handle; the prefix keeps it unique per plugin.
        self.random_volume_id_prefix = secrets.token_hex(16)
        self._limits_key: tuple[int, int, int] | None = None
        self._limits: dict[str, IntArray] = {}
        self._migrated: dict[str, BoolArray] = {}
        features = handle.features
        self.checks_driver_installed = features.enabled(VOLUME_LIMIT_SCALING)
        self.driver_check_needs_opt_in = features.behaviour.csi_driver_missing_needs_opt_in
        self.portworx_needs_annotation = not features.behaviour.portworx_migrated_without_annotation

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((VOLUMES_SIGNER, volumes_signature(pod)),)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        if claim_names(pod) or any(is_inline_migratable(v) for v in pod.volumes):
            return None, SUCCESS
        return None, SKIP

    def _driver_info(self, pvc: PersistentVolumeClaim) -> tuple[str, str, str]:
        """getCSIDriverInfo: (driver, volume handle, in-tree plugin) of a claim; ("", "", "")
        when not CSI. The plugin ("" for CSI volumes) counts only where its migration is on."""
        storage = self.handle.storage
        if pvc.volume_name:
            pv = storage.get_pv(pvc.volume_name)
            if pv is not None:
                if pv.csi_driver:
                    return pv.csi_driver, pv.csi_volume_handle, ""
                plugin = in_tree_plugin_name(pv.in_tree_kind) if is_pv_migratable(pv) else ""
                handle = pv_volume_handle(pv) if plugin else None
                if not handle:
                    return "", "", ""
                return csi_name_from_in_tree_name(plugin), handle, plugin
        # Unbound (or PV not yet seen): the class's provisioner will create it.
        class_name = pvc.class_name
        storage_class = storage.get_storage_class(class_name) if class_name else None
        if storage_class is None:
            return "", "", ""
        handle = f"{self.random_volume_id_prefix}-{pvc.namespace}/{pvc.name}"
        provisioner = storage_class.provisioner
        if is_migratable_in_tree_plugin(provisioner):
            return csi_name_from_in_tree_name(provisioner), handle, provisioner
        return provisioner, handle, ""

    def _new_volumes(self, pod: Pod) -> dict[str, tuple[str, str]] | Status:
        """filterAttachableVolumes for the incoming pod: unique name → (driver, in-tree plugin)."""
        out: dict[str, tuple[str, str]] = {}
        for volume in pod.volumes:
            if is_inline_migratable(volume):  # checkAttachableInlineVolume
                plugin = in_tree_plugin_name(volume.kind)
                handle = inline_volume_handle(volume)
                if handle is None:
                    return error(f"converting volume({volume.name}) from inline to csi")
                driver = csi_name_from_in_tree_name(plugin)
                out[f"{driver}/{handle}"] = (driver, plugin)
        for name, ephemeral in claim_names(pod):
            if not name:
                return error("PersistentVolumeClaim had no name")
            pvc = self.handle.storage.get_pvc(pod.namespace, name)
            if pvc is None:
                return unresolvable(f"looking up PVC {pod.namespace}/{name}: {pvc_not_found(name)}")
            if ephemeral and (message := volume_is_for_pod(pod, pvc)) is not None:
                return error(message)
            driver, handle, plugin = self._driver_info(pvc)
            if driver and handle:
                out[f"{driver}/{handle}"] = (driver, plugin)
        return out

    def _node_limits(self) -> dict[str, IntArray]:
        """getVolumeLimits for every row, per driver (NO_LIMIT where the CSINode has none)."""
        # Rebuilt only when storage objects or the set of rows change, not per cycle.
        key = (id(self.handle.storage), self.handle.storage.generation, self.table.rows_generation)
        if key != self._limits_key:
            limits: dict[str, IntArray] = {}
            for row, node in enumerate(self.table.nodes[: self.table.n]):
                csi_node = self.handle.storage.get_csi_node(node.name)
                for driver in csi_node.drivers if csi_node is not None else ():
                    if driver.allocatable_count is not None:
                        column = limits.setdefault(
                            driver.name, np.full(self.table.n, NO_LIMIT, dtype=np.int64)
                        )
                        column[row] = driver.allocatable_count
            self._limits_key, self._limits, self._migrated = key, limits, {}
        return self._limits

    def _migration_on(self, plugin: str) -> BoolArray:
        """isCSIMigrationOn of every row's CSINode for an in-tree plugin (all True for "")."""
        self._node_limits()
        mask = self._migrated.get(plugin)
        if mask is None:
            storage, n = self.handle.storage, self.table.n
            mask = np.fromiter(
                (
                    not plugin
                    or is_csi_migration_on(
                        storage.get_csi_node(node.name),
                        plugin,
                        portworx_needs_annotation=self.portworx_needs_annotation,
                    )
                    for node in self.table.nodes[:n]
                ),
                dtype=np.bool_,
                count=n,
            )
            self._migrated[plugin] = mask
        return mask

    def _attached(self, rows: Rows, drivers: set[str]) -> tuple[dict[str, IntArray], dict[str, IntArray]]:
        """Per driver: unique volumes attached per row; per unique name: whether each row has it."""
        counts = {d: np.zeros(len(rows), dtype=np.int64) for d in drivers}
        present: dict[str, IntArray] = {}
        position = np.full(self.table.n, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        seen: dict[str, set[int]] = {}

        def add(driver: str, handle: str, plugin: str, users: Iterable[int]) -> None:
            if driver not in drivers or not handle:
                return
            unique = f"{driver}/{handle}"
            using = np.fromiter(users, dtype=np.int64)
            using = using[self._migration_on(plugin)[using]] if plugin else using
            on = position[using]
            new_rows = {int(i) for i in on[on >= 0]} - seen.setdefault(unique, set())
            seen[unique] |= new_rows
            if new_rows:
                idx = np.fromiter(new_rows, dtype=np.int64, count=len(new_rows))
                counts[driver][idx] += 1
                mask = present.setdefault(unique, np.zeros(len(rows), dtype=np.int64))
                mask[idx] = 1

        usage = VolumeUsage.of(self.table)
        for claim_key, claim_users in usage.claim_rows.items():
            namespace, _, name = claim_key.partition("/")
            pvc = self.handle.storage.get_pvc(namespace, name)
            if pvc is not None:
                add(*self._driver_info(pvc), claim_users)
        for (kind, _), disk_users in usage.disks.items():
            plugin = in_tree_plugin_name(kind)
            if plugin:  # existing pods' inline in-tree volumes
                handle = inline_volume_handle(disk_users[0][2])
                add(csi_name_from_in_tree_name(plugin), handle or "", plugin, (r for r, _, _ in disk_users))
        self._count_attachments(position, drivers, counts, present)
        return counts, present

    def _count_attachments(
        self,
        position: IntArray,
        drivers: set[str],
        counts: dict[str, IntArray],
        present: dict[str, IntArray],
    ) -> None:
        """getNodeVolumeAttachmentInfo: each attached CSI PV no pod on the node uses adds one."""
        storage = self.handle.storage
        counted: set[tuple[str, int]] = set()
        for va in storage.list_volume_attachments():
            if va.attacher not in drivers or not va.pv_name or va.node_name not in self.table:
                continue
            at = int(position[self.table.row(va.node_name)])
            pv = storage.get_pv(va.pv_name)
            if at < 0 or pv is None or not pv.csi_driver:
                continue
            unique = f"{va.attacher}/{pv.csi_volume_handle}"
            mask = present.get(unique)
            if (mask is None or not mask[at]) and (unique, at) not in counted:
                counted.add((unique, at))
                counts[va.attacher][at] += 1

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if not pod.volumes:
            return FilterResult.all_pass(len(rows))
        new_volumes = self._new_volumes(pod)
        if isinstance(new_volumes, Status):
            return FilterResult.reject_all(len(rows), new_volumes)
        missing = self._missing_drivers(rows, new_volumes) if self.checks_driver_installed else None
        limits = self._node_limits()
        drivers = {d for d, _ in new_volumes.values() if d in limits}
        if not drivers:
            return FilterResult.all_pass(len(rows)) if missing is None else missing
        counts, present = self._attached(rows, drivers)
        failed = np.zeros(len(rows), dtype=np.bool_)
        for driver in drivers:
            limit = limits[driver][rows]
            new = np.zeros(len(rows), dtype=np.int64)
            for unique, (d, plugin) in new_volumes.items():
                if d == driver:
                    added = 1 - present.get(unique, np.zeros(len(rows), dtype=np.int64))
                    new += added * self._migration_on(plugin)[rows] if plugin else added
            failed |= (limit != NO_LIMIT) & (new > 0) & (counts[driver] + new > limit)
        exceeded = FilterResult.reject_where(failed, unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED))
        return exceeded if missing is None else _first_rejection(missing, exceeded)

    def _missing_drivers(self, rows: Rows, new_volumes: Mapping[str, tuple[str, str]]) -> FilterResult:
        """checkCSIDriverOnNode for every new volume a row would count (an in-tree one only where
        its migration is on): the first driver the row lacks rejects it, Unschedulable."""
        storage = self.handle.storage
        missing: dict[str, BoolArray] = {}
        for driver, plugin in new_volumes.values():
            if driver in missing:
                continue
            csi_driver = storage.get_csi_driver(driver)
            if csi_driver is None:
                continue  # not known as a CSI driver: no check
            if self.driver_check_needs_opt_in and not csi_driver.prevent_pod_scheduling_if_missing:
                continue
            installed = np.fromiter(
                (
                    _driver_installed(storage.get_csi_node(self.table.nodes[row].name), driver)
                    for row in rows.tolist()
                ),
                dtype=np.bool_,
                count=len(rows),
            )
            counted = self._migration_on(plugin)[rows] if plugin else np.ones(len(rows), dtype=np.bool_)
            missing[driver] = counted & ~installed
        passed = np.ones(len(rows), dtype=np.bool_)
        index = np.zeros(len(rows), dtype=np.int32)
        statuses: list[Status] = []
        for driver, lacking in missing.items():
            first = lacking & passed
            if first.any():
                index[first] = len(statuses)
                statuses.append(unschedulable(f"{driver} CSI driver is not installed on the node"))
                passed &= ~first
        return FilterResult(passed, index, tuple(statuses))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.ADD)),
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, Action.UPDATE), _after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), _after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD), _after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.VOLUME_ATTACHMENT, Action.DELETE), _after_volume_attachment_deleted
            ),
        ]


def _driver_installed(csi_node: CSINode | None, driver: str) -> bool:
    return csi_node is not None and any(d.name == driver for d in csi_node.drivers)


def _first_rejection(first: FilterResult, then: FilterResult) -> FilterResult:
    """Rows `first` rejects keep its status (that check comes first); the others take `then`'s."""
    passed = first.passed & then.passed
    offset = len(first.statuses)
    index = np.where(first.passed, (then.status_index if then.status_index is not None else 0) + offset, 0)
    if first.status_index is not None:
        index = np.where(first.passed, index, first.status_index)
    return FilterResult(passed, index.astype(np.int32), (*first.statuses, *then.statuses))


def _after_csi_node_updated(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterCSINodeUpdated: only a raised driver limit may help (a missing count,
    or a driver the old CSINode lacks, counts as 0)."""
    before: CSINode = old
    after: CSINode = new
    old_limits = {d.name: d.allocatable_count or 0 for d in before.drivers}
    for driver in after.drivers:
        if (driver.allocatable_count or 0) > old_limits.get(driver.name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    deleted: Pod = old
    if not deleted.volumes or not (deleted.node_name or deleted.nominated_node_name):
        return QueueingHint.SKIP
    if claim_names(deleted) or any(is_inline_migratable(v) for v in deleted.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_pvc_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new.namespace != pod.namespace:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if any(name == new.name for name, _ in claim_names(pod)) else QueueingHint.SKIP


def _after_volume_attachment_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterVolumeAttachmentDeleted: a freed attachment may help a pod with a PVC
    or an inline in-tree volume of the attacher's driver."""
    deleted: VolumeAttachment = old
    for volume in pod.volumes:
        if volume.kind == PVC:
            return QueueingHint.QUEUE
        if is_inline_migratable(volume):
            driver = csi_name_from_in_tree_name(in_tree_plugin_name(volume.kind))
            if inline_volume_handle(volume) is None or driver == deleted.attacher:
                return QueueingHint.QUEUE  # upstream queues on a translation error too
    return QueueingHint.SKIP
