"""PriorityClassMirror, the decisions: what the native scheduling.k8s.io/v1 PriorityClass should
look like for a mirror's spec, and the next step towards it. Pure: no API, no clock.

- none exists: create it, labelled managed-by policy-scheduler, annotated origin=created, with an
  ownerReference to the mirror (so the API server's garbage collector removes it with the mirror
  even if the operator is down at that moment);
- one exists that we do not manage: adopt it (label + origin=adopted, no ownerReference), so it
  is never deleted because of the mirror;
- description or globalDefault differ: merge-patch them in place;
- value or preemptionPolicy differ (immutable on the native object): delete it (precondition on
  its uid) and create it again, keeping its origin, labels and annotations;
- mirror deleted: delete the native class if origin=created and it is owned by that very mirror
  (uid), else release it (remove our label and annotation).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.kube import priorityclasses as native_api
from policy_scheduler.policy.constants import API_VERSION, GROUP, PRIORITY_CLASS_MIRROR_KIND
from policy_scheduler.policy.errors import FieldError, PolicyError, parse_model
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec, name_problem

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "policy-scheduler"
ORIGIN_ANNOTATION = f"{GROUP}/mirror-origin"
ORIGIN_CREATED = "created"
ORIGIN_ADOPTED = "adopted"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class NativeState:
    """What the controller looks at in a native PriorityClass."""

    uid: str
    value: int
    global_default: bool = False
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY
    description: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[Mapping[str, Any], ...] = ()
    deleting: bool = False

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NativeState:
        meta = obj.get("metadata") or {}
        return cls(
            uid=str(meta.get("uid", "")),
            value=int(obj.get("value", 0)),
            global_default=bool(obj.get("globalDefault", False)),
            preemption_policy=str(obj.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY),
            description=obj.get("description") or None,
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            owner_references=tuple(meta.get("ownerReferences") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
        )

    @property
    def origin(self) -> str | None:
        """created / adopted when we manage it, else None."""
        origin = self.annotations.get(ORIGIN_ANNOTATION)
        return origin if origin in (ORIGIN_CREATED, ORIGIN_ADOPTED) else None

    @property
    def owner_uid(self) -> str | None:
        """The uid of the PriorityClassMirror that owns it, if any."""
        for ref in self.owner_references:
            if ref.get("kind") == PRIORITY_CLASS_MIRROR_KIND and str(ref.get("apiVersion", "")).startswith(
                GROUP + "/"
            ):
                return str(ref.get("uid", "")) or None
        return None


class Action(enum.Enum):
    NOTHING = "Nothing"
    CREATE = "Create"
    ADOPT = "Adopt"  # mark an unmanaged class as ours (and fix its mutable fields)
    UPDATE = "Update"  # mutable fields or the ownerReference
    RECREATE = "Recreate"  # value or preemptionPolicy changed
    WAIT = "Wait"  # the native class is being deleted: look again shortly
    DELETE = "Delete"  # mirror gone, class created by us
    RELEASE = "Release"  # mirror gone, class adopted: drop our marks, keep the class


@dataclass(frozen=True, slots=True)
class Plan:
    action: Action
    reason: str
    patch: dict[str, Any] | None = None  # ADOPT, UPDATE, RELEASE: a JSON merge patch
    body: dict[str, Any] | None = None  # CREATE, RECREATE: the object to create


def owner_reference(name: str, mirror_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": PRIORITY_CLASS_MIRROR_KIND,
        "name": name,
        "uid": mirror_uid,
        "controller": True,
    }


def desired_object(
    name: str,
    mirror_uid: str,
    spec: PriorityClassMirrorSpec,
    origin: str,
    previous: NativeState | None = None,
) -> dict[str, Any]:
    """The native class to create; `previous` (a recreation) passes on its labels and annotations."""
    labels = {**(previous.labels if previous else {}), MANAGED_BY_LABEL: MANAGED_BY}
    annotations = {**(previous.annotations if previous else {}), ORIGIN_ANNOTATION: origin}
    meta: dict[str, Any] = {"name": name, "labels": labels, "annotations": annotations}
    if origin == ORIGIN_CREATED:
        meta["ownerReferences"] = [owner_reference(name, mirror_uid)]
    obj: dict[str, Any] = {
        "apiVersion": native_api.API_VERSION,
        "kind": native_api.KIND,
        "metadata": meta,
        "value": spec.value,
        "globalDefault": spec.global_default,
        "preemptionPolicy": spec.preemption_policy,
    }
    if spec.description:
        obj["description"] = spec.description
    return obj


def _mutable_patch(spec: PriorityClassMirrorSpec, native: NativeState) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if native.global_default != spec.global_default:
        patch["globalDefault"] = spec.global_default
    if (native.description or None) != (spec.description or None):
        patch["description"] = spec.description or None  # None removes it
    return patch


def _owner_patch(name: str, mirror_uid: str, native: NativeState) -> list[dict[str, Any]]:
    """ownerReferences with ours pointing at `mirror_uid` (a merge patch replaces the whole list)."""
    others = [
        dict(ref)
        for ref in native.owner_references
        if not (ref.get("kind") == PRIORITY_CLASS_MIRROR_KIND and ref.get("name") == name)
    ]
    return [*others, owner_reference(name, mirror_uid)]


def plan(name: str, mirror_uid: str, spec: PriorityClassMirrorSpec, native: NativeState | None) -> Plan:
    """The next step that brings the native class closer to `spec` (NOTHING when it matches)."""
    if native is None:
        return Plan(
            Action.CREATE,
            "no PriorityClass of that name",
            body=desired_object(name, mirror_uid, spec, ORIGIN_CREATED),
        )
    if native.deleting:
        return Plan(Action.WAIT, "the PriorityClass is being deleted")
    origin = native.origin or ORIGIN_ADOPTED
    changed = [
        f"{field_name} {old} -> {new}"
        for field_name, old, new in (
            ("value", native.value, spec.value),
            ("preemptionPolicy", native.preemption_policy, spec.preemption_policy),
        )
        if old != new
    ]
    if changed:
        return Plan(
            Action.RECREATE,
            f"immutable field(s) changed: {', '.join(changed)}",
            body=desired_object(name, mirror_uid, spec, origin, previous=native),
        )
    patch = _mutable_patch(spec, native)
    if native.origin is None:
        patch["metadata"] = {
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {ORIGIN_ANNOTATION: ORIGIN_ADOPTED},
        }
        return Plan(Action.ADOPT, "an existing PriorityClass not managed by policy-scheduler", patch=patch)
    reasons = [f"{key} differs" for key in patch]
    if origin == ORIGIN_CREATED and native.owner_uid != mirror_uid:
        patch["metadata"] = {"ownerReferences": _owner_patch(name, mirror_uid, native)}
        reasons.append("ownerReference does not point at this mirror")
    if not patch:
        return Plan(Action.NOTHING, "in sync")
    return Plan(Action.UPDATE, ", ".join(reasons), patch=patch)


def plan_deletion(mirror_uid: str, native: NativeState | None) -> Plan:
    """What to do with the native class once the mirror with `mirror_uid` is gone."""
    if native is None or native.deleting:
        return Plan(Action.NOTHING, "no PriorityClass left")
    if native.origin == ORIGIN_CREATED and native.owner_uid == mirror_uid:
        return Plan(Action.DELETE, "created for this mirror")
    if native.origin == ORIGIN_ADOPTED:
        return Plan(
            Action.RELEASE,
            "adopted: kept, no longer managed",
            patch={
                "metadata": {"labels": {MANAGED_BY_LABEL: None}, "annotations": {ORIGIN_ANNOTATION: None}}
            },
        )
    return Plan(Action.NOTHING, "not created for this mirror")


def validate(name: str, raw_spec: Any) -> PriorityClassMirrorSpec:
    """The spec as the model reads it, or PolicyError with field paths."""
    spec = parse_model(PriorityClassMirrorSpec, raw_spec, "spec")
    problem = name_problem(name)
    if problem:
        raise PolicyError([FieldError("metadata.name", problem)])
    return spec
