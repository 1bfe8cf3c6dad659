"""Storage API objects, reduced to the fields kube-scheduler's volume plugins read.

Quantities are bytes; `resource_version` compares as an integer like the API server's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.scheduler.model import LabelSelector, NodeSelectorTerm

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"


def version_int(resource_version: str) -> int:
    return int(resource_version) if resource_version.isdigit() else 0


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    storage_class_name: str = ""
    capacity: int = 0
    access_modes: tuple[str, ...] = ()
    volume_mode: str | None = None
    # spec.nodeAffinity.required terms; None: no node affinity.
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    claim_ref: ClaimRef | None = None
    phase: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    csi_driver: str = ""
    csi_volume_handle: str = ""
    # A migratable in-tree source: its kind (volumes.GCE_PD, ...) and pdName / volumeID /
    # diskURI / volumePath ("" for azureFile, whose handle is not modelled).
    in_tree_kind: str = ""
    in_tree_volume_id: str = ""
    volume_attributes_class_name: str = ""
    deletion_timestamp: float | None = None
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    name: str
    namespace: str = "default"
    uid: str = ""
    storage_class_name: str | None = None
    volume_name: str = ""
    request: int | None = None  # spec.resources.requests.storage; None when unset
    access_modes: tuple[str, ...] = ()
    volume_mode: str | None = None
    selector: LabelSelector | None = None
    volume_attributes_class_name: str = ""
    phase: str = "Pending"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerRef, ...] = ()
    deletion_timestamp: float | None = None
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def class_name(self) -> str:
        """storagehelpers.GetPersistentVolumeClaimClass: the beta annotation wins."""
        if ANN_BETA_STORAGE_CLASS in self.annotations:
            return self.annotations[ANN_BETA_STORAGE_CLASS]
        return self.storage_class_name or ""

    @property
    def fully_bound(self) -> bool:
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str = ""
    volume_binding_mode: str | None = IMMEDIATE  # None: unset (the API server defaults it)
    # allowedTopologies as node selector terms of In requirements; () allows every node.
    allowed_topologies: tuple[NodeSelectorTerm, ...] = ()
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str = ""
    allocatable_count: int | None = None
    topology_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: tuple[CSINodeDriver, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    storage_capacity: bool | None = None
    attach_required: bool | None = None
    # spec.preventPodSchedulingIfMissing: nodes without the driver refuse its volumes' pods.
    prevent_pod_scheduling_if_missing: bool | None = None
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    name: str
    namespace: str = "default"
    storage_class_name: str = ""
    node_topology: LabelSelector | None = None
    capacity: int | None = None
    maximum_volume_size: int | None = None
    resource_version: str = ""

    @property
    def volume_limit(self) -> int | None:
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    """spec.attacher, spec.nodeName and spec.source.persistentVolumeName ("" when inline)."""

    name: str
    attacher: str = ""
    node_name: str = ""
    pv_name: str = ""
    resource_version: str = ""
