"""One policy object through the checks the API server applies (CRD schema, CEL rules) and
then, if the server would store it, the checks the operator applies to accept its spec."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from policy_scheduler.policy import constants as c
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.validate import schema as structural
from policy_scheduler.validate.cel import check_rules
from policy_scheduler.validate.report import CEL, OPERATOR, SCHEMA, SERVER_STAGES

# kubectl's --validate values (the API server's fieldValidation: Strict, Warn, Ignore).
STRICT, WARN, IGNORE = "strict", "warn", "ignore"
POLICY_KINDS = (c.SCHEDULING_PROFILE_KIND, c.EVICTION_POLICY_KIND, c.PRIORITY_CLASS_MIRROR_KIND)


@dataclass(slots=True)
class Checked:
    kind: str
    name: str
    body: dict[str, Any]  # as the server would store it: defaults applied
    errors: list[tuple[str, str, str]]  # (field, message, stage)
    warnings: list[tuple[str, str, str]] = field(default_factory=list)
    profile: ResolvedProfile | None = None  # a SchedulingProfile the operator accepts
    # The release (and gates) the operator checks are made for; None: the newest release's.
    features: Features | None = None

    @property
    def stored(self) -> bool:
        """The API server would store it (whatever the operator then thinks of it)."""
        return not any(stage in SERVER_STAGES for _, _, stage in self.errors)


@cache
def crd_schemas() -> dict[str, dict[str, Any]]:
    """kind -> the openAPIV3Schema of its CRD, built from the models as crds/ is."""
    from policy_scheduler.policy.crdgen import RESOURCES, root_schema

    schemas = {}
    for resource in RESOURCES:
        root = root_schema(resource)
        # metadata is ObjectMeta, checked on its own; status is reset on create (a subresource).
        properties = dict(root["properties"])
        properties["metadata"] = {"type": "object", structural.PRESERVE: True}
        properties.pop("status", None)
        schemas[resource.kind] = {**root, "properties": properties}
    return schemas


def check_object(
    kind: str, body: Mapping[str, Any], field_validation: str = STRICT, features: Features | None = None
) -> Checked:
    """`field_validation` as kubectl's --validate: strict refuses unknown fields, warn drops
    them with a warning, ignore drops them silently. `features`: the release the operator's
    checks follow (None: the newest)."""
    obj = {k: v for k, v in body.items() if k != "status"}
    meta = obj.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
    schema = crd_schemas()[kind]
    pruned, unknown = structural.prune_unknown(obj, schema, "")
    found = structural.metadata_errors(meta)
    warnings: list[tuple[str, str, str]] = []
    if field_validation == STRICT:
        found += [structural.SchemaError(path, "unknown field") for path in unknown]
    elif field_validation == WARN:
        warnings = [(path, "unknown field: the API server drops it", SCHEMA) for path in unknown]
    stored = structural.apply_defaults(pruned, schema)
    found += structural.validate(stored, schema, "")
    checked = Checked(
        kind, name, stored, [(e.path, e.message, SCHEMA) for e in found], warnings, features=features
    )
    if any(e.blocking for e in found):
        return checked  # the server skips CEL rules then, and never stores the object
    checked.errors += [(e.path, e.message, CEL) for e in check_rules(stored, schema)]
    if not checked.errors:
        _operator_checks(checked)
    return checked


def _operator_checks(checked: Checked) -> None:
    """The calls the controllers make to accept or reject a spec."""
    spec = checked.body.get("spec") or {}
    try:
        OPERATOR_CHECKS[checked.kind](checked, spec)
    except PolicyError as exc:
        checked.errors += [(e.path, e.message, OPERATOR) for e in exc.errors]
    except ValueError as exc:  # not a PolicyError: no field path of its own
        checked.errors.append(("spec", str(exc), OPERATOR))


def _profile(checked: Checked, spec: dict[str, Any]) -> None:
    from policy_scheduler.controllers.profile_store import compile_profile_spec

    checked.profile = compile_profile_spec(spec, checked.features)


def _eviction_policy(checked: Checked, spec: dict[str, Any]) -> None:
    from policy_scheduler.controllers.eviction_policy_store import to_settings
    from policy_scheduler.policy.errors import parse_model
    from policy_scheduler.policy.eviction import EvictionPolicySpec

    to_settings(checked.name, parse_model(EvictionPolicySpec, spec, "spec"))


def _mirror(checked: Checked, spec: dict[str, Any]) -> None:
    from policy_scheduler.controllers.mirror_plan import validate

    validate(checked.name, spec)


OPERATOR_CHECKS: dict[str, Callable[[Checked, dict[str, Any]], None]] = {
    c.SCHEDULING_PROFILE_KIND: _profile,
    c.EVICTION_POLICY_KIND: _eviction_policy,
    c.PRIORITY_CLASS_MIRROR_KIND: _mirror,
}
