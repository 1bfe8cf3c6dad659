"""msgspec views of the storage objects the volume plugins read (PV, PVC, StorageClass,
CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment); see structs.py for the conventions."""

from __future__ import annotations

import msgspec

from policy_scheduler.apiobjects.structs import (
    InTreeSource,
    LabelSelector,
    NodeSelector,
    ObjectMeta,
    Quantity,
    ResourceRequirements,
    _Base,
)


class VolumeNodeAffinity(_Base):
    required: NodeSelector | None = None


class ObjectReference(_Base):
    namespace: str = ""
    name: str = ""
    uid: str = ""


class CSIPersistentVolumeSource(_Base):
    driver: str = ""
    volume_handle: str = ""


class PersistentVolumeSpec(_Base):
    capacity: dict[str, Quantity] | None = None
    access_modes: list[str] | None = None
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: InTreeSource | None = None
    aws_elastic_block_store: InTreeSource | None = None
    azure_disk: InTreeSource | None = None
    azure_file: InTreeSource | None = None
    cinder: InTreeSource | None = None
    vsphere_volume: InTreeSource | None = None
    portworx_volume: InTreeSource | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeStatus(_Base):
    phase: str = ""


class PersistentVolume(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class PersistentVolumeClaimSpec(_Base):
    storage_class_name: str | None = None
    volume_name: str = ""
    resources: ResourceRequirements | None = None
    access_modes: list[str] | None = None
    volume_mode: str | None = None
    selector: LabelSelector | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(_Base):
    phase: str = ""


class PersistentVolumeClaim(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class TopologySelectorRequirement(_Base):
    key: str = ""
    values: list[str] | None = None


class TopologySelectorTerm(_Base):
    match_label_expressions: list[TopologySelectorRequirement] | None = None


class StorageClass(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] | None = None


class VolumeNodeResources(_Base):
    count: int | None = None


class CSINodeDriver(_Base):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: VolumeNodeResources | None = None
    topology_keys: list[str] | None = None


class CSINodeSpec(_Base):
    drivers: list[CSINodeDriver] | None = None


class CSINode(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(_Base):
    storage_capacity: bool | None = None
    attach_required: bool | None = None
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    storage_class_name: str = ""
    node_topology: LabelSelector | None = None
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None


class VolumeAttachmentSource(_Base):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(_Base):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachment(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)
