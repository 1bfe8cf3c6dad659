"""Filter side of the volume binder, vectorized over rows: volumeBinder.FindPodVolumes.

Loops run over claims and PVs (a pod has a few claims; a class has its PVs); the per-node work
(PV node affinity, allowed topologies, CSIStorageCapacity topology, already-chosen PVs) is
numpy over rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.model import LabelSelector, Node
from policy_scheduler.scheduler.nodetable import BoolArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.volumebinding.assume_cache import AssumeCache
from policy_scheduler.scheduler.plugins.volumebinding.claims import PodVolumeClaims
from policy_scheduler.scheduler.selectors import (
    label_selector_matches,
    match_node_labels,
    match_node_selector_terms,
    match_requirement,
    node_matches_terms,
)
from policy_scheduler.scheduler.storage.csi_translation import (
    in_tree_plugin_name,
    is_plugin_migrated_on_node,
    is_pv_migratable,
    translate_pv_to_csi,
)
from policy_scheduler.scheduler.storage.lister import StorageLister
from policy_scheduler.scheduler.storage.types import (
    ANN_SELECTED_NODE,
    FILESYSTEM,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_AVAILABLE,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

# Reason bits, in the order upstream appends the reasons.
NODE_CONFLICT = 1
BIND_CONFLICT = 2
NOT_ENOUGH_SPACE = 4
PV_NOT_EXIST = 8
REASONS = (
    (NODE_CONFLICT, ERR_REASON_NODE_CONFLICT),
    (BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
    (NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE),
    (PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST),
)
NO_ERROR = -1

IntMatrix = npt.NDArray[np.int64]


@dataclass(slots=True)
class BindingInfo:
    pvc: PersistentVolumeClaim
    pv: PersistentVolume


@dataclass(slots=True)
class DynamicProvision:
    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """What Reserve assumes and PreBind writes for one node."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class FindResult:
    """FindPodVolumes for every row at once."""

    reasons: npt.NDArray[np.int8]  # reason bits per row
    error: npt.NDArray[np.int32]  # index into errors, NO_ERROR when none
    errors: list[str]
    to_match: list[PersistentVolumeClaim]  # delayed claims without selected node, by size
    candidates: list[list[PersistentVolume]]  # per claim in to_match: the PVs of its class
    chosen: IntMatrix  # [claim in to_match, row] → index into its candidates, -1 none
    to_provision: list[PersistentVolumeClaim]  # selected-node claims, then to_match claims
    provisioned: BoolArray  # [claim in to_provision, row]
    capacities: list[CSIStorageCapacity]
    capacity_of: IntMatrix  # [claim in to_provision, row] → index into capacities, -1 none

    def pod_volumes(self, i: int) -> PodVolumes:
        """PodVolumes of the i-th row (a node that passed)."""
        static = [
            BindingInfo(pvc, self.candidates[c][int(self.chosen[c, i])])
            for c, pvc in enumerate(self.to_match)
            if self.chosen[c, i] >= 0
        ]
        dynamic = [
            DynamicProvision(pvc, self.capacities[k] if (k := int(self.capacity_of[c, i])) >= 0 else None)
            for c, pvc in enumerate(self.to_provision)
            if self.provisioned[c, i]
        ]
        return PodVolumes(static, dynamic)


def match_label_selector(table: NodeTable, rows: Rows, selector: LabelSelector) -> BoolArray:
    """metav1.LabelSelectorAsSelector(selector).Matches(node labels), per row."""
    result = match_node_labels(table, rows, dict(selector.match_labels))
    for req in selector.match_expressions:
        result &= match_requirement(table, rows, req)
    return result


def pv_affinity(table: NodeTable, rows: Rows, pv: PersistentVolume) -> BoolArray:
    """volume.CheckNodeAffinity per row."""
    if pv.node_affinity is None:
        return np.ones(len(rows), dtype=np.bool_)
    return match_node_selector_terms(table, rows, pv.node_affinity)


def pv_affinity_matches(pv: PersistentVolume, labels: dict[str, str]) -> bool:
    """volume.CheckNodeAffinity against one node's labels (it sees labels only, no fields)."""
    return pv.node_affinity is None or node_matches_terms(Node(name="", labels=labels), pv.node_affinity)


def _bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """volume.IsVolumeBoundToClaim."""
    ref = pv.claim_ref
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace:
        return False
    return not ref.uid or ref.uid == pvc.uid


def _static_fit(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[bool, bool, bool]:
    """Row-independent FindMatchingVolume checks: (passes the pre-checks, bound to the claim,
    available for it). VolumeAttributesClass is GA in v1.35, so classes must be equal."""
    if pv.claim_ref is not None and not _bound_to_claim(pv, pvc):
        return False, False, False
    if pv.capacity < (pvc.request or 0):
        return False, False, False
    if (pvc.volume_mode or FILESYSTEM) != (pv.volume_mode or FILESYSTEM):
        return False, False, False
    if (
        pvc.volume_attributes_class_name != pv.volume_attributes_class_name
        or pv.deletion_timestamp is not None
    ):
        return False, False, False
    if _bound_to_claim(pv, pvc):
        return True, True, False
    available = (
        pv.phase == VOLUME_AVAILABLE
        and (pvc.selector is None or _selector_matches(pvc.selector, pv.labels))
        and pv.storage_class_name == pvc.class_name
        and set(pvc.access_modes) <= set(pv.access_modes)
    )
    return True, False, available


def _selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    return label_selector_matches(selector, labels)


class _AffinityCache:
    def __init__(self, table: NodeTable, rows: Rows, lister: StorageLister) -> None:
        self.table, self.rows, self.lister = table, rows, lister
        self._masks: dict[str, BoolArray] = {}
        self._migrated: dict[str, BoolArray] = {}

    def of(self, pv: PersistentVolume, key: str = "") -> BoolArray:
        key = key or pv.name
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = pv_affinity(self.table, self.rows, pv)
        return mask

    def migrated(self, plugin: str) -> BoolArray:
        """Rows whose CSINode has the in-tree plugin migrated (the binder's criteria)."""
        mask = self._migrated.get(plugin)
        if mask is None:
            nodes, get = self.table.nodes, self.lister.get_csi_node
            mask = self._migrated[plugin] = np.fromiter(
                (is_plugin_migrated_on_node(get(nodes[r].name), plugin) for r in self.rows),
                dtype=np.bool_,
                count=len(self.rows),
            )
        return mask


def _check_bound_claims(
    claims: list[PersistentVolumeClaim],
    cache: AssumeCache,
    affinity: _AffinityCache,
    reasons: npt.NDArray[np.int8],
    error: npt.NDArray[np.int32],
    errors: list[str],
) -> None:
    alive = np.ones(len(reasons), dtype=np.bool_)
    for pvc in claims:
        pv = cache.get_pv(pvc.volume_name)
        if pv is None:
            reasons[alive] |= PV_NOT_EXIST
            return
        mask = affinity.of(pv)
        if is_pv_migratable(pv):
            # tryTranslatePVToCSI: nodes whose CSINode lists the plugin as migrated check the
            # translated PV's affinity (CSI topology keys); a failed translation is an error.
            plugin = in_tree_plugin_name(pv.in_tree_kind)
            migrated = affinity.migrated(plugin)
            if migrated.any():
                translated = translate_pv_to_csi(pv)
                if translated is None:
                    index = len(errors)
                    errors.append(f'could not translate pv: "{pv.name}"')
                    error[alive & migrated] = index
                    alive &= ~migrated
                    continue
                mask = np.where(migrated, affinity.of(translated, key=f"csi:{pv.name}"), mask)
        reasons[alive & ~mask] |= NODE_CONFLICT
        alive &= mask


def _find_matching(
    to_match: list[PersistentVolumeClaim],
    claims: PodVolumeClaims,
    affinity: _AffinityCache,
    count: int,
) -> tuple[list[list[PersistentVolume]], IntMatrix]:
    """findMatchingVolumes: per row, each claim (smallest first) takes the smallest fitting PV
    not already chosen on that row; a PV pre-bound to the claim wins if its affinity matches."""
    candidates: list[list[PersistentVolume]] = []
    chosen = np.full((len(to_match), count), -1, dtype=np.int64)
    taken: dict[str, BoolArray] = {}  # PV name → rows where an earlier claim chose it
    for c, pvc in enumerate(to_match):
        pvs = claims.delay_pvs.get(pvc.class_name, [])
        candidates.append(pvs)
        if not pvs:
            continue
        none = np.zeros(count, dtype=np.bool_)
        fits = [_static_fit(pv, pvc) for pv in pvs]
        free = np.stack([~taken.get(pv.name, none) for pv in pvs])
        pre_bound = np.array([f[1] for f in fits])[:, None] & free
        has_bound = pre_bound.any(axis=0)
        first_bound = pre_bound.argmax(axis=0)
        aff = np.stack([affinity.of(pv) if f[1] or f[2] else none for pv, f in zip(pvs, fits, strict=True)])
        sizes = np.array([pv.capacity for pv in pvs], dtype=np.float64)[:, None]
        usable = np.array([f[2] for f in fits])[:, None] & free & aff
        masked = np.where(usable, sizes, np.inf)
        smallest = masked.argmin(axis=0)
        any_usable = usable.any(axis=0)
        cols = np.arange(count)
        pick = np.where(
            has_bound,
            np.where(aff[first_bound, cols], first_bound, -1),
            np.where(any_usable, smallest, -1),
        )
        chosen[c] = pick
        for p in np.unique(pick[pick >= 0]):
            name = pvs[int(p)].name
            taken[name] = taken.get(name, none) | (pick == p)
    return candidates, chosen


def find_pod_volumes(
    table: NodeTable,
    rows: Rows,
    claims: PodVolumeClaims,
    cache: AssumeCache,
    lister: StorageLister,
    capacity_unserved: str | None = None,
) -> FindResult:
    """`capacity_unserved`: why capacity cannot be checked (CSIStorageCapacity is not served):
    a claim whose driver needs the check is then an error saying so, never provisioned blindly."""
    count = len(rows)
    reasons = np.zeros(count, dtype=np.int8)
    error = np.full(count, NO_ERROR, dtype=np.int32)
    errors: list[str] = []
    affinity = _AffinityCache(table, rows, lister)
    if claims.bound:
        _check_bound_claims(claims.bound, cache, affinity, reasons, error, errors)

    selected = [pvc for pvc in claims.delay_binding if ANN_SELECTED_NODE in pvc.annotations]
    to_match = sorted(
        (pvc for pvc in claims.delay_binding if ANN_SELECTED_NODE not in pvc.annotations),
        key=lambda pvc: pvc.request or 0,
    )
    # A claim already provisioned for another node: only that node can host the pod.
    go_on = np.ones(count, dtype=np.bool_)
    for pvc in selected:
        row = table.index.get(pvc.annotations[ANN_SELECTED_NODE])
        go_on &= rows == row if row is not None else np.zeros(count, dtype=np.bool_)
    reasons[~go_on] |= BIND_CONFLICT

    candidates, chosen = _find_matching(to_match, claims, affinity, count)
    # Unmatched claims go to dynamic provisioning, whose verdict replaces the matching one.
    unmatched = chosen < 0

    to_provision = selected + to_match
    needs = (
        np.vstack([np.tile(go_on, (len(selected), 1)), unmatched & go_on])
        if to_provision
        else np.zeros((0, count), dtype=np.bool_)
    )
    provisioned = np.zeros_like(needs)
    capacity_of = np.full(needs.shape, -1, dtype=np.int64)
    capacities = list(lister.list_csi_storage_capacities())
    done = np.zeros(count, dtype=np.bool_)
    for c, pvc in enumerate(to_provision):
        active = needs[c] & ~done
        if not active.any():
            continue
        message, ok, cap_index = _provision_check(table, rows, pvc, lister, capacities, capacity_unserved)
        if message is not None:
            index = len(errors)
            errors.append(message)
            error[active] = index
            done |= active
            continue
        assert ok is not None and cap_index is not None
        reasons[active & ~ok] |= BIND_CONFLICT
        short = active & ok & (cap_index == -2)
        reasons[short] |= NOT_ENOUGH_SPACE
        done |= active & ~(ok & (cap_index != -2))
        provisioned[c] = active & ok & (cap_index != -2)
        capacity_of[c] = np.where(cap_index >= 0, cap_index, -1)
    provisioned &= ~done  # a later failure on the row drops its provisions (nothing is assumed)
    return FindResult(
        reasons,
        error,
        errors,
        to_match,
        candidates,
        chosen,
        to_provision,
        provisioned,
        capacities,
        capacity_of,
    )


def _provision_check(
    table: NodeTable,
    rows: Rows,
    pvc: PersistentVolumeClaim,
    lister: StorageLister,
    capacities: list[CSIStorageCapacity],
    capacity_unserved: str | None = None,
) -> tuple[str | None, BoolArray | None, IntMatrix | None]:
    """One claim of checkVolumeProvisions: (error, topology+provisioner ok per row, capacity
    index per row: >= 0 the CSIStorageCapacity used, -1 no check needed, -2 not enough)."""
    count = len(rows)
    class_name = pvc.class_name
    if not class_name:
        return f'no class for claim "{pvc.key}"', None, None
    storage_class = lister.get_storage_class(class_name)
    if storage_class is None:
        return f'failed to find storage class "{class_name}"', None, None
    provisioner = storage_class.provisioner
    if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
        return None, np.zeros(count, dtype=np.bool_), np.full(count, -1, dtype=np.int64)
    ok = (
        match_node_selector_terms(table, rows, storage_class.allowed_topologies)
        if storage_class.allowed_topologies
        else np.ones(count, dtype=np.bool_)
    )
    cap_index = np.full(count, -1, dtype=np.int64)
    driver = lister.get_csi_driver(provisioner)
    if pvc.request is None or driver is None or not driver.storage_capacity:
        return None, ok, cap_index
    if capacity_unserved is not None:
        return f"claim {pvc.namespace}/{pvc.name}: {capacity_unserved}", None, None
    cap_index[:] = -2
    for k, capacity in enumerate(capacities):
        limit = capacity.volume_limit
        if capacity.storage_class_name != class_name or limit is None or limit < pvc.request:
            continue
        if capacity.node_topology is None:
            continue
        hit = (cap_index == -2) & match_label_selector(table, rows, capacity.node_topology)
        cap_index[hit] = k
    return None, ok, cap_index
