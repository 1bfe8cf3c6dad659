"""Services, ReplicationControllers, ReplicaSets and StatefulSets, as far as PodTopologySpread's
default constraints read them (upstream helper.DefaultSelector): their `spec.selector`.

The msgspec structs decode only metadata and `spec.selector` (a plain map for Services and
ReplicationControllers, a metav1.LabelSelector for ReplicaSets and StatefulSets); the converters
turn them into one small frozen dataclass, `OwnerInfo`, which holds no resourceVersion or status:
two versions of an object that differ only there compare equal, so a consumer can skip the many
status-only updates (a ReplicaSet's replica counts) cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert_common import struct_from_dict
from policy_scheduler.scheduler.model import LabelSelector
from policy_scheduler.scheduler.selectors import to_label_selector as label_selector

SERVICE = "Service"
REPLICATION_CONTROLLER = "ReplicationController"
REPLICA_SET = "ReplicaSet"
STATEFUL_SET = "StatefulSet"
KINDS = (SERVICE, REPLICATION_CONTROLLER, REPLICA_SET, STATEFUL_SET)


class _Base(
    msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=False, gc=False
):
    pass


class ServiceSpec(_Base):
    selector: dict[str, str] | None = None


class Service(_Base):
    metadata: structs.ObjectMeta = msgspec.field(default_factory=structs.ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ReplicationControllerSpec(_Base):
    selector: dict[str, str] | None = None


class ReplicationController(_Base):
    metadata: structs.ObjectMeta = msgspec.field(default_factory=structs.ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


class WorkloadSpec(_Base):
    """The `spec.selector` that ReplicaSetSpec and StatefulSetSpec share."""

    selector: structs.LabelSelector | None = None


class ReplicaSet(_Base):
    metadata: structs.ObjectMeta = msgspec.field(default_factory=structs.ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


class StatefulSet(_Base):
    metadata: structs.ObjectMeta = msgspec.field(default_factory=structs.ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


@dataclass(frozen=True, slots=True)
class OwnerInfo:
    """One Service, ReplicationController, ReplicaSet or StatefulSet: its kind, key and selector.

    `labels` is the `spec.selector` map of a Service or ReplicationController, sorted; None when
    nil (a Service with a nil selector selects nothing). `selector` is the metav1.LabelSelector
    of a ReplicaSet or StatefulSet; None when nil.
    """

    kind: str
    namespace: str
    name: str
    labels: tuple[tuple[str, str], ...] | None = None
    selector: LabelSelector | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _labels(values: dict[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    return None if values is None else tuple(sorted(values.items()))


def _namespace(meta: structs.ObjectMeta) -> str:
    return meta.namespace or "default"


def service_from_api(s: Service) -> OwnerInfo:
    return OwnerInfo(SERVICE, _namespace(s.metadata), s.metadata.name, labels=_labels(s.spec.selector))


def replication_controller_from_api(rc: ReplicationController) -> OwnerInfo:
    meta = rc.metadata
    return OwnerInfo(REPLICATION_CONTROLLER, _namespace(meta), meta.name, labels=_labels(rc.spec.selector))


def replica_set_from_api(rs: ReplicaSet) -> OwnerInfo:
    meta = rs.metadata
    return OwnerInfo(REPLICA_SET, _namespace(meta), meta.name, selector=label_selector(rs.spec.selector))


def stateful_set_from_api(ss: StatefulSet) -> OwnerInfo:
    meta = ss.metadata
    return OwnerInfo(STATEFUL_SET, _namespace(meta), meta.name, selector=label_selector(ss.spec.selector))


def owner_from_dict(d: Mapping[str, Any]) -> OwnerInfo:
    """A Service, ReplicationController, ReplicaSet or StatefulSet manifest (by its `kind`).
    Raises ConversionError naming the object and field, ValueError for another kind."""
    kind = d.get("kind")
    if kind == SERVICE:
        return service_from_api(struct_from_dict(d, Service, kind))
    if kind == REPLICATION_CONTROLLER:
        return replication_controller_from_api(struct_from_dict(d, ReplicationController, kind))
    if kind == REPLICA_SET:
        return replica_set_from_api(struct_from_dict(d, ReplicaSet, kind))
    if kind == STATEFUL_SET:
        return stateful_set_from_api(struct_from_dict(d, StatefulSet, kind))
    raise ValueError(f"not a Service, ReplicationController, ReplicaSet or StatefulSet: {kind!r}")
