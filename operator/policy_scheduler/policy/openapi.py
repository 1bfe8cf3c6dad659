"""Pydantic JSON schema -> structural OpenAPI v3 schema, as apiextensions.k8s.io/v1 requires.

Structural means: every node has a type (or preserves unknown fields), no $ref, no anyOf/oneOf,
no additionalProperties next to properties. Optional fields (`X | None`) become plain X, since
an absent field is how a CR says "unset"; free-form objects (`dict[str, Any]`) preserve
unknown fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PRESERVE = "x-kubernetes-preserve-unknown-fields"
VALIDATIONS = "x-kubernetes-validations"
_RULE_KEY_ORDER = ("rule", "messageExpression", "message", "reason", "fieldPath", "optionalOldSelf")

# Output order of schema keys, so the YAML reads top-down like kubebuilder's.
_KEY_ORDER = (
    "description",
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "items",
    "properties",
    "required",
    "additionalProperties",
)
_DROPPED = frozenset({"title", "examples"})


class SchemaError(ValueError):
    """The model uses a construct a structural schema cannot express."""


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of `model` (validation side, JSON names)."""
    raw = model.model_json_schema(mode="validation")
    defs: dict[str, Any] = raw.pop("$defs", {})
    return _convert(raw, defs, model.__name__)


def _convert(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    node = _flatten(node, defs, where)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED or (key == "default" and value is None):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {name: _convert(sub, defs, f"{where}.{name}") for name, sub in value.items()}
        elif key == "items":
            out[key] = _convert(value, defs, f"{where}[]")
        elif key == "additionalProperties":
            if value is True:
                out[PRESERVE] = True
            elif isinstance(value, dict):
                out[key] = _convert(value, defs, f"{where}{{}}")
            # False: structural schemas reject unknown fields by pruning; nothing to emit.
        elif key == VALIDATIONS:
            out[key] = [{k: rule[k] for k in _RULE_KEY_ORDER if k in rule} for rule in value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True  # OpenAPI v3.0 spells exclusive bounds as a flag
        else:
            out[key] = value
    if "type" not in out and not out.get(PRESERVE):
        raise SchemaError(f"{where}: no type in schema {node}")
    return _ordered(out)


def _flatten(node: dict[str, Any], defs: dict[str, Any], where: str) -> dict[str, Any]:
    """Resolve $ref and drop `| None` branches; the node's own keys win over the referenced ones."""
    node = dict(node)
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        node = {**_flatten(target, defs, where), **node}
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in node:
            branches = [b for b in node.pop(combinator) if b != {"type": "null"}]
            if len(branches) != 1:
                raise SchemaError(f"{where}: {combinator} with {len(branches)} non-null branches")
            node = {**_flatten(branches[0], defs, where), **node}
    return node


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    known = {key: schema[key] for key in _KEY_ORDER if key in schema}
    rest = {key: schema[key] for key in sorted(schema) if key not in known}
    return {**known, **rest}
