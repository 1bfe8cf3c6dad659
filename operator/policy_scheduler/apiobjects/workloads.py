"""The Workload API (scheduling.k8s.io): its PodGroups (v1alpha2, v1beta1) and v1.35's Workloads
(v1alpha1), decoded into the gang core's PodGroup.

A PodGroup's spec.schedulingPolicy (or a v1.35 Workload's podGroups[].policy) is either `gang`
with minCount, or `basic` (no gang). The core keys a PodGroup `namespace/name`; a v1.35 Workload
gives one group per podGroups entry, keyed `namespace/workload/podGroup`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeVar

import msgspec

from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.structs import ObjectMeta, _Base
from policy_scheduler.scheduler.gang import PodGroup

_T = TypeVar("_T")


class GangSchedulingPolicy(_Base):
    min_count: int = 0


class BasicSchedulingPolicy(_Base):
    pass


class SchedulingPolicy(_Base):
    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class DisruptionMode(_Base):
    """v1beta1's union: exactly one of single and all."""

    single: dict[str, Any] | None = None
    all: dict[str, Any] | None = None


# v1alpha2 (v1.36) spells the mode as a string.
DISRUPTION_MODE_POD_GROUP_V1_36 = "PodGroup"


class PodGroupSpec(_Base):
    scheduling_policy: SchedulingPolicy = msgspec.field(default_factory=SchedulingPolicy)
    disruption_mode: DisruptionMode | str | None = None


def _disrupt_all(mode: DisruptionMode | str | None) -> bool:
    if isinstance(mode, str):
        return mode == DISRUPTION_MODE_POD_GROUP_V1_36
    return mode is not None and mode.all is not None


class PodGroupObject(_Base):
    """scheduling.k8s.io/v1beta1 and v1alpha2 PodGroup: the fields the scheduler reads."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)


class WorkloadPodGroup(_Base):
    name: str = ""
    policy: SchedulingPolicy = msgspec.field(default_factory=SchedulingPolicy)


class WorkloadSpec(_Base):
    pod_groups: list[WorkloadPodGroup] | None = None


class WorkloadObject(_Base):
    """scheduling.k8s.io/v1alpha1 Workload (v1.35)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


def _group(meta: ObjectMeta, name: str, policy: SchedulingPolicy, field: str, what: str) -> PodGroup:
    created = meta.creation_timestamp.timestamp() if meta.creation_timestamp is not None else 0.0
    namespace = meta.namespace or "default"
    malformed: str | None = None
    gang = policy.gang is not None
    min_count = policy.gang.min_count if policy.gang is not None else 1
    if gang and min_count < 1:
        # The API server refuses it; a pod is never bound on a policy we do not understand.
        malformed = f"{what} {namespace}/{meta.name}: {field}.gang.minCount: must be greater than 0"
    elif policy.gang is not None and policy.basic is not None:
        malformed = f"{what} {namespace}/{meta.name}: {field}: exactly one of basic and gang must be set"
    return PodGroup(
        namespace=namespace,
        name=name,
        min_member=max(min_count, 1),
        creation_timestamp=created,
        uid=meta.uid,
        malformed=malformed,
        gang=gang,
        generation=meta.generation,
    )


def pod_group_from_api(obj: PodGroupObject) -> PodGroup:
    meta = obj.metadata
    group = _group(meta, meta.name, obj.spec.scheduling_policy, "spec.schedulingPolicy", "PodGroup")
    return replace(group, disrupt_all=_disrupt_all(obj.spec.disruption_mode))


@dataclass(frozen=True, slots=True)
class WorkloadGroups:
    """A v1.35 Workload as the core sees it: one PodGroup per spec.podGroups entry."""

    key: str  # namespace/name of the Workload
    groups: tuple[PodGroup, ...]


def workload_from_api(obj: WorkloadObject) -> WorkloadGroups:
    meta = obj.metadata
    namespace = meta.namespace or "default"
    groups = tuple(
        _group(meta, f"{meta.name}/{entry.name}", entry.policy, f"spec.podGroups[{i}].policy", "Workload")
        for i, entry in enumerate(obj.spec.pod_groups or ())
    )
    return WorkloadGroups(f"{namespace}/{meta.name}", groups)


def _convert(raw: dict[str, Any], kind: type[_T]) -> _T:
    try:
        return msgspec.convert(raw, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise ConversionError.from_msgspec(exc) from None


def pod_group_from_dict(raw: dict[str, Any]) -> PodGroup:
    """From a YAML document or a test's dict."""
    return pod_group_from_api(_convert(raw, PodGroupObject))


def workload_from_dict(raw: dict[str, Any]) -> WorkloadGroups:
    return workload_from_api(_convert(raw, WorkloadObject))
