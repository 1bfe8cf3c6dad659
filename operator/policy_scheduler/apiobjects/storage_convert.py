"""Storage API structs (or YAML dicts) to the core's storage dataclasses.

`*_from_api` keep what the API server stored. The `*_from_dict` forms (simulate's YAML) apply
what the API server and the PV controller would have: a StorageClass without a binding mode
is Immediate, a PV without a status is Available (Bound when it has a claimRef), a claim
naming its volume is Bound with bind-completed set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.convert_common import (
    canonical_quantity,
    epoch,
    labels,
    node_term,
    struct_from_dict,
)
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.structs import Quantity
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.resources import QuantityError
from policy_scheduler.scheduler.selectors import to_label_selector
from policy_scheduler.scheduler.storage import volumes
from policy_scheduler.scheduler.storage.lister import StorageObject
from policy_scheduler.scheduler.storage.types import (
    ANN_BIND_COMPLETED,
    IMMEDIATE,
    VOLUME_AVAILABLE,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSINodeDriver,
    CSIStorageCapacity,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

STORAGE = "storage"
VOLUME_BOUND = "Bound"
CLAIM_BOUND = "Bound"


def _bytes(value: Quantity | None, what: str, field: str) -> int | None:
    if value is None:
        return None
    try:
        return canonical_quantity(STORAGE, value)
    except (QuantityError, TypeError):
        raise ConversionError(field, f'invalid quantity "{value}"', what) from None


def _in_tree_source(spec: st.PersistentVolumeSpec) -> dict[str, str]:
    """The PV's migratable in-tree source as in_tree_kind / in_tree_volume_id (none: {})."""
    sources = {
        volumes.GCE_PD: spec.gce_persistent_disk,
        volumes.AWS_EBS: spec.aws_elastic_block_store,
        volumes.AZURE_DISK: spec.azure_disk,
        volumes.AZURE_FILE: spec.azure_file,
        volumes.CINDER: spec.cinder,
        volumes.VSPHERE: spec.vsphere_volume,
        volumes.PORTWORX: spec.portworx_volume,
    }
    for kind, source in sources.items():
        if source is not None:
            return {"in_tree_kind": kind, "in_tree_volume_id": source.id}
    return {}


def pv_from_api(pv: st.PersistentVolume) -> PersistentVolume:
    meta, spec = pv.metadata, pv.spec
    what = f"PersistentVolume {meta.name}"
    affinity = spec.node_affinity.required if spec.node_affinity is not None else None
    ref = spec.claim_ref
    return PersistentVolume(
        name=meta.name,
        storage_class_name=spec.storage_class_name,
        capacity=_bytes((spec.capacity or {}).get(STORAGE), what, "spec.capacity.storage") or 0,
        access_modes=tuple(spec.access_modes or ()),
        volume_mode=spec.volume_mode,
        node_affinity=(
            None if affinity is None else tuple(node_term(t) for t in affinity.node_selector_terms or ())
        ),
        claim_ref=None if ref is None else ClaimRef(ref.namespace or "default", ref.name, ref.uid),
        phase=pv.status.phase,
        labels=labels(meta.labels),
        annotations=labels(meta.annotations),
        csi_driver=spec.csi.driver if spec.csi is not None else "",
        csi_volume_handle=spec.csi.volume_handle if spec.csi is not None else "",
        **_in_tree_source(spec),
        volume_attributes_class_name=spec.volume_attributes_class_name or "",
        deletion_timestamp=epoch(meta.deletion_timestamp),
        resource_version=meta.resource_version,
    )


def pvc_from_api(pvc: st.PersistentVolumeClaim) -> PersistentVolumeClaim:
    meta, spec = pvc.metadata, pvc.spec
    what = f"PersistentVolumeClaim {meta.namespace or 'default'}/{meta.name}"
    requests = spec.resources.requests if spec.resources is not None else None
    return PersistentVolumeClaim(
        name=meta.name,
        namespace=meta.namespace or "default",
        uid=meta.uid,
        storage_class_name=spec.storage_class_name,
        volume_name=spec.volume_name,
        request=_bytes((requests or {}).get(STORAGE), what, "spec.resources.requests.storage"),
        access_modes=tuple(spec.access_modes or ()),
        volume_mode=spec.volume_mode,
        selector=to_label_selector(spec.selector),
        volume_attributes_class_name=spec.volume_attributes_class_name or "",
        phase=pvc.status.phase or "Pending",
        labels=labels(meta.labels),
        annotations=labels(meta.annotations),
        owner_references=tuple(
            OwnerRef(o.kind, o.name, o.uid, bool(o.controller)) for o in meta.owner_references or ()
        ),
        deletion_timestamp=epoch(meta.deletion_timestamp),
        resource_version=meta.resource_version,
    )


def storage_class_from_api(sc: st.StorageClass) -> StorageClass:
    return StorageClass(
        name=sc.metadata.name,
        provisioner=sc.provisioner,
        volume_binding_mode=sc.volume_binding_mode,
        # A topology term is a node selector term of In requirements.
        allowed_topologies=tuple(
            model.NodeSelectorTerm(
                tuple(
                    model.Requirement(e.key, "In", tuple(e.values or ()))
                    for e in t.match_label_expressions or ()
                )
            )
            for t in sc.allowed_topologies or ()
        ),
        resource_version=sc.metadata.resource_version,
    )


def csi_node_from_api(node: st.CSINode) -> CSINode:
    return CSINode(
        name=node.metadata.name,
        drivers=tuple(
            CSINodeDriver(
                d.name,
                d.node_id,
                d.allocatable.count if d.allocatable is not None else None,
                tuple(d.topology_keys or ()),
            )
            for d in node.spec.drivers or ()
        ),
        annotations=labels(node.metadata.annotations),
        resource_version=node.metadata.resource_version,
    )


def csi_driver_from_api(driver: st.CSIDriver) -> CSIDriver:
    return CSIDriver(
        name=driver.metadata.name,
        storage_capacity=driver.spec.storage_capacity,
        attach_required=driver.spec.attach_required,
        prevent_pod_scheduling_if_missing=driver.spec.prevent_pod_scheduling_if_missing,
        resource_version=driver.metadata.resource_version,
    )


def csi_storage_capacity_from_api(cap: st.CSIStorageCapacity) -> CSIStorageCapacity:
    meta = cap.metadata
    what = f"CSIStorageCapacity {meta.namespace or 'default'}/{meta.name}"
    return CSIStorageCapacity(
        name=meta.name,
        namespace=meta.namespace or "default",
        storage_class_name=cap.storage_class_name,
        node_topology=to_label_selector(cap.node_topology),
        capacity=_bytes(cap.capacity, what, "capacity"),
        maximum_volume_size=_bytes(cap.maximum_volume_size, what, "maximumVolumeSize"),
        resource_version=meta.resource_version,
    )


def volume_attachment_from_api(va: st.VolumeAttachment) -> VolumeAttachment:
    return VolumeAttachment(
        name=va.metadata.name,
        attacher=va.spec.attacher,
        node_name=va.spec.node_name,
        pv_name=va.spec.source.persistent_volume_name or "",
        resource_version=va.metadata.resource_version,
    )


# --- YAML (simulate) ------------------------------------------------------------------------------


def _pv_defaulted(pv: PersistentVolume) -> PersistentVolume:
    if pv.phase:
        return pv
    return dataclasses.replace(pv, phase=VOLUME_BOUND if pv.claim_ref is not None else VOLUME_AVAILABLE)


def _pvc_defaulted(pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
    if not pvc.volume_name or ANN_BIND_COMPLETED in pvc.annotations:
        return pvc
    return dataclasses.replace(
        pvc, phase=CLAIM_BOUND, annotations={**pvc.annotations, ANN_BIND_COMPLETED: "yes"}
    )


def _sc_defaulted(sc: StorageClass) -> StorageClass:
    return sc if sc.volume_binding_mode else dataclasses.replace(sc, volume_binding_mode=IMMEDIATE)


# kind → (struct, converter, YAML defaults)
_KINDS: dict[str, tuple[type[Any], Callable[[Any], StorageObject], Callable[[Any], StorageObject]]] = {
    "PersistentVolume": (st.PersistentVolume, pv_from_api, _pv_defaulted),
    "PersistentVolumeClaim": (st.PersistentVolumeClaim, pvc_from_api, _pvc_defaulted),
    "StorageClass": (st.StorageClass, storage_class_from_api, _sc_defaulted),
    "CSINode": (st.CSINode, csi_node_from_api, lambda o: o),
    "CSIDriver": (st.CSIDriver, csi_driver_from_api, lambda o: o),
    "CSIStorageCapacity": (st.CSIStorageCapacity, csi_storage_capacity_from_api, lambda o: o),
    "VolumeAttachment": (st.VolumeAttachment, volume_attachment_from_api, lambda o: o),
}
STORAGE_KINDS = frozenset(_KINDS)


def storage_object_from_dict(kind: str, d: Mapping[str, Any], *, defaults: bool = True) -> StorageObject:
    """One storage object from a YAML document of that kind, with the server's and PV
    controller's defaults; `defaults=False` for objects the API server returned."""
    struct_type, convert, default = _KINDS[kind]
    obj = convert(struct_from_dict(d, struct_type, kind))
    return default(obj) if defaults else obj
