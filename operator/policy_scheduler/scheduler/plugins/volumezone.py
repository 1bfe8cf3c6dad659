"""VolumeZone: a node must be in the zone/region of every bound PV the pod uses (PV topology
labels, legacy failure-domain.beta keys and GA topology.kubernetes.io keys)."""

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
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, unresolvable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import ABSENT, BoolArray, Rows
from policy_scheduler.scheduler.storage.errors import pv_not_found, pvc_not_found, storage_class_not_found
from policy_scheduler.scheduler.storage.types import WAIT_FOR_FIRST_CONSUMER, PersistentVolume
from policy_scheduler.scheduler.storage.volumes import PVC

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
STATE_KEY = "PreFilterVolumeZone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """getPVTopologies: malformed label values (an empty zone in the list) are ignored."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
        if any(not z for z in zones):
            continue
        out.append(PVTopology(pv.name, key, frozenset(zones)))
    return out


class VolumeZone(PreFilterPlugin, FilterPlugin):
    name = "VolumeZone"
    signs_pods = True

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((VOLUMES_SIGNER, volumes_signature(pod)),)

    def _pod_topologies(self, pod: Pod) -> list[PVTopology] | Status:
        storage = self.handle.storage
        out: list[PVTopology] = []
        for volume in pod.volumes:
            if volume.kind != PVC:
                continue
            name = volume.claim_name
            if not name:
                return unresolvable("PersistentVolumeClaim had no name")
            pvc = storage.get_pvc(pod.namespace, name)
            if pvc is None:
                return unresolvable(pvc_not_found(name))
            if not pvc.volume_name:
                class_name = pvc.class_name
                if not class_name:
                    return unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = storage.get_storage_class(class_name)
                if storage_class is None:
                    return unresolvable(storage_class_not_found(class_name))
                if storage_class.volume_binding_mode is None:
                    return unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue  # the binder picks a PV that fits the node
                return unresolvable("PersistentVolume had no name")
            pv = storage.get_pv(pvc.volume_name)
            if pv is None:
                return unresolvable(pv_not_found(pvc.volume_name))
            out.extend(pv_topologies(pv))
        return out

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        topologies = self._pod_topologies(pod)
        if isinstance(topologies, Status):
            return None, topologies
        if not topologies:
            return None, SKIP
        state.write(STATE_KEY, topologies)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if not pod.volumes:
            return FilterResult.all_pass(len(rows))
        topologies = state.read(STATE_KEY)
        if topologies is None:
            topologies = self._pod_topologies(pod)
            if isinstance(topologies, Status):
                return FilterResult.reject_all(len(rows), topologies)
        constrained = np.zeros(len(rows), dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            constrained |= self.table.label_codes(key)[rows] != ABSENT
        ok = np.ones(len(rows), dtype=np.bool_)
        for topology in topologies:
            ok &= self._in_values(rows, topology)
        return FilterResult.reject_where(constrained & ~ok, unresolvable(ERR_REASON_CONFLICT))

    def _in_values(self, rows: Rows, topology: PVTopology) -> BoolArray:
        codes = self.table.label_codes(topology.key)[rows]
        ga = _GA.get(topology.key, topology.key)
        result = np.zeros(len(rows), dtype=np.bool_)
        present = codes != ABSENT
        for value in topology.values:
            code = self.table.label_value_code(topology.key, value)
            if code is not None:
                result |= codes == code
            ga_code = self.table.label_value_code(ga, value)
            if ga_code is not None:  # the node lacks the PV's key: upstream reads the GA key
                result |= ~present & (self.table.label_codes(ga)[rows] == ga_code)
        return result

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, Action.ADD), _after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ADD | Action.UPDATE), _after_pvc_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, Action.ADD | Action.UPDATE), _after_pv_change
            ),
        ]


def _after_pvc_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new is None or new.namespace != pod.namespace:
        return QueueingHint.SKIP
    hit = any(v.kind == PVC and v.claim_name == new.name for v in pod.volumes)
    return QueueingHint.QUEUE if hit else QueueingHint.SKIP


def _after_storage_class_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE if new.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER else QueueingHint.SKIP


def _after_pv_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.SKIP
