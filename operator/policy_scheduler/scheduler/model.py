"""Compact in-memory objects the scheduling core works on.

These are plain dataclasses, independent of any Kubernetes client: the operator converts API
objects into them, `simulate` converts YAML into them, and unit tests build them directly.
Quantities are canonical integers: cpu in millicores, every other resource in base units.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from policy_scheduler.scheduler.resources import pod_non_zero_requests, pod_requests
from policy_scheduler.scheduler.storage.volumes import IMAGE, PodResourceClaim, Volume

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
EMPTY_LABELS: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """v1.Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector or label selector requirement."""

    key: str
    operator: str  # In NotIn Exists DoesNotExist Gt Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    # None: no required terms. An empty tuple of terms matches nothing, as upstream.
    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedPodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (default) | Ignore
    node_taints_policy: str | None = None  # Ignore (default) | Honor
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    requests: dict[str, int] = field(default_factory=dict)
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str | None = None  # "Always" marks a sidecar (restartable init container)
    # restartPolicyRules[].action, and whether a volumeMount sets bindMountOptions: the node
    # features a pod needs are inferred from them (NodeDeclaredFeatures).
    restart_rule_actions: tuple[str, ...] = ()
    bind_mount_options: bool = False


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


@dataclass(slots=True)
class Pod:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    node_name: str = ""
    nominated_node_name: str = ""
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    pod_requests: dict[str, int] | None = None  # spec.resources.requests (pod-level resources)
    overhead: dict[str, int] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    host_network: bool = False
    host_users: bool | None = None  # spec.hostUsers; None when unset
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    # The Workload API's pod group (scheduling.k8s.io): spec.schedulingGroup.podGroupName
    # (v1.36 and later), "" when unset.
    scheduling_group: str = ""
    # v1.35's spec.workloadRef as (workload name, podGroup, podGroupReplicaKey); None when unset.
    workload_ref: tuple[str, str, str] | None = None
    owner_references: tuple[OwnerReference, ...] = ()
    creation_timestamp: float = 0.0
    start_time: float | None = None
    deletion_timestamp: float | None = None
    phase: str = "Pending"
    qos_class: str = ""  # status.qosClass: Guaranteed, Burstable, BestEffort ("" when not set)
    resource_version: str = ""
    volumes: tuple[Volume, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()
    # status.resourceClaimStatuses: (pod claim name, generated claim name or None).
    resource_claim_statuses: tuple[tuple[str, str | None], ...] = ()
    # Set by the decoder when the object could not be understood; the pod is then reported
    # Unschedulable with this message instead of being dropped.
    malformed: str | None = None
    # status' PodScheduled condition of a pod not yet bound, as (status, reason, message): the
    # status writer skips a verdict the pod already shows, as upstream's updatePod does. Not
    # compared: a status write alone changes nothing the scheduler decides on.
    scheduled_condition: tuple[str, str, str] | None = field(default=None, compare=False)
    # spec.terminationGracePeriodSeconds (None: unset, the API's default of 30 s applies): the
    # grace an eviction gives a victim, capped by the EvictionPolicy. Not compared: it decides
    # nothing about placement.
    termination_grace_period_seconds: int | None = field(default=None, compare=False)
    # Caches, not init fields: dataclasses.replace(pod, containers=...) must not copy stale values.
    _requests: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)
    _non_zero: tuple[int, int] | None = field(default=None, init=False, repr=False, compare=False)
    _key: str | None = field(default=None, init=False, repr=False, compare=False)
    _host_ports: tuple[ContainerPort, ...] | None = field(default=None, init=False, repr=False, compare=False)
    # The pod's parsed pod (anti-)affinity terms, filled by interpodaffinity/terms.py: upstream's
    # PodInfo parses them once per pod, and PreFilter, the affinity index, the filters and the
    # queue's hints all read them. Typed loosely: the core model does not know plugin types.
    parsed_affinity_terms: object = field(default=None, init=False, repr=False, compare=False)

    @property
    def key(self) -> str:
        # Cached: asked for on every table change and nomination lookup (preemption's hot path).
        if self._key is None:
            self._key = f"{self.namespace}/{self.name}"
        return self._key

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def requests(self) -> dict[str, int]:
        """Effective requests as kube-scheduler computes them (sidecars, pod level, overhead)."""
        if self._requests is None:
            self._requests = pod_requests(self)
        return self._requests

    @property
    def non_zero_requests(self) -> tuple[int, int]:
        """(milli-cpu, memory) with kube-scheduler's defaults for unset container requests."""
        if self._non_zero is None:
            self._non_zero = pod_non_zero_requests(self)
        return self._non_zero

    def host_ports(self) -> list[ContainerPort]:
        """Ports with hostPort set, from containers and sidecars (restartable init containers).

        Ordinary init containers have exited before the pod runs, so upstream ignores theirs.
        """
        if self._host_ports is None:
            sidecars = [c for c in self.init_containers if c.restart_policy == "Always"]
            self._host_ports = tuple(
                p for c in (*sidecars, *self.containers) for p in c.ports if p.host_port > 0
            )
        return list(self._host_ports)

    @property
    def has_host_ports(self) -> bool:
        if self._host_ports is None:
            self.host_ports()
        return bool(self._host_ports)

    def images(self) -> list[str]:
        return [c.image for c in (*self.init_containers, *self.containers) if c.image]

    def image_volume_references(self) -> list[str]:
        """spec.volumes[].image.reference: OCI images mounted as volumes."""
        return [v.source_id for v in self.volumes if v.kind == IMAGE]


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(slots=True)
class Node:
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: dict[str, int] = field(default_factory=dict)
    images: tuple[ContainerImage, ...] = ()
    resource_version: str = ""
    # status.capacity.memory: what node-pressure's memory.available is counted against when
    # usage comes from NodeMetrics (their working set only). None: not reported.
    memory_capacity: int | None = None
    # The node conditions among MemoryPressure, DiskPressure and PIDPressure whose status is
    # True, in that order (the kubelet's eviction reports them).
    pressure_conditions: tuple[str, ...] = ()
    # status.declaredFeatures: the features the kubelet says the node has (NodeDeclaredFeatures).
    declared_features: tuple[str, ...] = ()


def same_but_version(a: Pod, b: Pod) -> bool:
    """Equal in every compared field except resource_version (which moves on every write)."""
    version = b.resource_version
    b.resource_version = a.resource_version
    try:
        return a == b
    finally:
        b.resource_version = version
