"""msgspec views of the parts of Kubernetes objects the scheduler reads.

Only the fields the scheduler needs are declared; everything else in the JSON is skipped by
the decoder without being materialised, which is what makes large LIST bodies cheap.
Collections are optional (``None`` when absent) because the API server and YAML both omit or
null them freely; the converters treat ``None`` and empty alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

import msgspec

# A resource.Quantity: a string from the API server, a bare number in hand-written YAML.
Quantity = str | int | float
IntOrString = int | str


class _Base(
    msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=False, gc=False
):
    pass


class OwnerReference(_Base):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_Base):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    owner_references: list[OwnerReference] | None = None


class Requirement(_Base):
    """LabelSelectorRequirement and NodeSelectorRequirement share this shape."""

    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(_Base):
    match_labels: dict[str, str] | None = None
    match_expressions: list[Requirement] | None = None


# --- affinity -------------------------------------------------------------------------------


class NodeSelectorTerm(_Base):
    match_expressions: list[Requirement] | None = None
    match_fields: list[Requirement] | None = None


class NodeSelector(_Base):
    node_selector_terms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(_Base):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Base):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(_Base):
    label_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(_Base):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Base):
    """Used for both podAffinity and podAntiAffinity."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None


class Affinity(_Base):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --- pod ------------------------------------------------------------------------------------


class Toleration(_Base):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class TopologySpreadConstraint(_Base):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class ContainerPort(_Base):
    name: str = ""
    container_port: int = 0
    host_port: int = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class ResourceRequirements(_Base):
    requests: dict[str, Quantity] | None = None
    limits: dict[str, Quantity] | None = None


class ContainerRestartRule(_Base):
    action: str = ""


class VolumeMount(_Base):
    bind_mount_options: list[str] | None = None


class Container(_Base):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] | None = None
    volume_mounts: list[VolumeMount] | None = None


class PodSchedulingGate(_Base):
    name: str = ""


class PodSchedulingGroup(_Base):
    """spec.schedulingGroup (v1.36 and later)."""

    pod_group_name: str | None = None


class WorkloadReference(_Base):
    """spec.workloadRef (v1.35 only: v1.36 replaced it with schedulingGroup)."""

    name: str = ""
    pod_group: str = ""
    pod_group_replica_key: str = ""


# --- volumes and resource claims ------------------------------------------------------------


class PersistentVolumeClaimVolumeSource(_Base):
    claim_name: str = ""
    read_only: bool = False


class EphemeralVolumeSource(_Base):
    pass  # only its presence matters: the claim is named <pod>-<volume>


class CSIVolumeSource(_Base):
    driver: str = ""
    read_only: bool = False


class GCEPersistentDiskVolumeSource(_Base):
    pd_name: str = ""
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_Base):
    volume_id: str = msgspec.field(default="", name="volumeID")
    read_only: bool = False


class InTreeSource(_Base):
    """The id fields of the in-tree sources CSI migration translates (pdName, volumeID, diskURI,
    volumePath), for PVs and inline pod volumes alike."""

    pd_name: str = ""
    volume_id: str = msgspec.field(default="", name="volumeID")
    disk_uri: str = msgspec.field(default="", name="diskURI")
    volume_path: str = ""
    read_only: bool = False

    @property
    def id(self) -> str:
        return self.pd_name or self.volume_id or self.disk_uri or self.volume_path


class ISCSIVolumeSource(_Base):
    iqn: str = ""
    read_only: bool = False


class RBDVolumeSource(_Base):
    monitors: list[str] | None = None
    pool: str = ""
    image: str = ""
    read_only: bool = False


class ImageVolumeSource(_Base):
    reference: str = ""


class EmptyDirVolumeSource(_Base):
    medium: str = ""


class PresentSource(_Base):
    pass  # a volume source whose fields are not read: only that it is there


class Volume(_Base):
    name: str = ""
    image: ImageVolumeSource | None = None
    # Sources the kubelet counts as the pod's local storage (localVolumeNames).
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: PresentSource | None = None
    config_map: PresentSource | None = None
    git_repo: PresentSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    # Inline in-tree sources NodeVolumeLimits counts under their CSI driver (CSI migration).
    azure_disk: InTreeSource | None = None
    cinder: InTreeSource | None = None
    vsphere_volume: InTreeSource | None = None
    portworx_volume: InTreeSource | None = None


class PodResourceClaim(_Base):
    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(_Base):
    name: str = ""
    resource_claim_name: str | None = None


class PodSpec(_Base):
    scheduler_name: str = ""
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    resources: ResourceRequirements | None = None
    overhead: dict[str, Quantity] | None = None
    node_selector: dict[str, str] | None = None
    host_network: bool = False
    host_users: bool | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    volumes: list[Volume] | None = None
    resource_claims: list[PodResourceClaim] | None = None
    scheduling_group: PodSchedulingGroup | None = None
    workload_ref: WorkloadReference | None = None
    termination_grace_period_seconds: int | None = None


class PodCondition(_Base):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_probe_time: datetime | None = None
    last_transition_time: datetime | None = None


class PodStatus(_Base):
    phase: str = ""
    qos_class: str = ""
    nominated_node_name: str = ""
    start_time: datetime | None = None
    conditions: list[PodCondition] | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


# --- node -----------------------------------------------------------------------------------


class Taint(_Base):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


class NodeSpec(_Base):
    unschedulable: bool = False
    taints: list[Taint] | None = None


class ContainerImage(_Base):
    names: list[str] | None = None
    size_bytes: int = 0


class NodeCondition(_Base):
    type: str = ""
    status: str = ""


class NodeStatus(_Base):
    allocatable: dict[str, Quantity] | None = None
    capacity: dict[str, Quantity] | None = None
    conditions: list[NodeCondition] | None = None
    images: list[ContainerImage] | None = None
    declared_features: list[str] | None = None


class Node(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


# --- cluster-scoped helpers -------------------------------------------------------------------


class NamespaceStatus(_Base):
    phase: str = ""


class Namespace(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: NamespaceStatus = msgspec.field(default_factory=NamespaceStatus)


class PriorityClass(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str = ""


class PodDisruptionBudgetSpec(_Base):
    selector: LabelSelector | None = None
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(_Base):
    observed_generation: int = 0
    disrupted_pods: dict[str, datetime] | None = None
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0


class PodDisruptionBudget(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


# --- API envelopes ----------------------------------------------------------------------------


class StatusDetails(_Base):
    name: str = ""
    group: str = ""
    kind: str = ""
    uid: str = ""
    retry_after_seconds: int = 0


class Status(_Base):
    """metav1.Status: the body of API errors and of watch ERROR events."""

    kind: str = ""
    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0
    details: StatusDetails | None = None


class ListMeta(_Base):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


T = TypeVar("T")


class ObjectList(_Base, Generic[T]):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] | None = None


class WatchEvent(_Base, Generic[T]):
    type: str
    object: T
