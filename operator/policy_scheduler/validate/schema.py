"""A custom resource against its CRD's structural OpenAPI schema, in the API server's order:
unknown fields (refused under strict field validation, `kubectl apply`'s default; dropped
otherwise), then defaults, then types, required fields, enums, patterns, bounds and list-map keys.

Only the schema keywords a structural CRD schema may use are read; the CEL rules are cel.py's.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy_scheduler.policy.errors import join_path

Schema = Mapping[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
# metadata.name of a custom resource (apimachinery's NameIsDNSSubdomain).
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


@dataclass(frozen=True, slots=True)
class SchemaError:
    path: str
    message: str
    # Errors after which the API server does not evaluate CEL rules (apiextensions' hasBlockingErr).
    blocking: bool = False


def _show(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


# bool before int: a bool is an int in Python, not in JSON.
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (Mapping, "object"),
)


def _type_name(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _type_ok(value: Any, wanted: str) -> bool:
    got = _type_name(value)
    if wanted == "number":
        return got in ("integer", "number") and not (isinstance(value, float) and not math.isfinite(value))
    if wanted == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON has one number type: 2.0 is the integer 2
    return got == wanted


# ---- 1. unknown fields and 2. defaults ---------------------------------------------------------------


def prune_unknown(value: Any, schema: Schema, path: str) -> tuple[Any, list[str]]:
    """A copy without the fields the schema does not declare, and their paths. The server drops
    them (pruning) or, under strict field validation, refuses: `strict decoding error: unknown field`."""
    if isinstance(value, Mapping) and schema.get("type", "object") == "object" and not schema.get(PRESERVE):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        kept: dict[str, Any] = {}
        unknown: list[str] = []
        for key, item in value.items():
            sub_path = join_path(path, str(key))
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                kept[key], below = prune_unknown(item, sub, sub_path)
                unknown += below
            elif extra is True:
                kept[key] = item
            else:
                unknown.append(sub_path)
        return kept, unknown
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        items: list[Any] = []
        unknown = []
        for i, item in enumerate(value):
            pruned, below = prune_unknown(item, schema["items"], join_path(path, i))
            items.append(pruned)
            unknown += below
        return items, unknown
    return value, []


def apply_defaults(value: Any, schema: Schema) -> Any:
    """A copy with the schema's defaults filled in, top-down (a defaulted object gets its
    children's defaults too); a null with a default becomes the default, as the server does."""
    if isinstance(value, Mapping):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), Mapping):
                sub = schema["additionalProperties"]
            if item is None and sub is not None and "default" in sub:
                item = copy.deepcopy(sub["default"])
            out[key] = apply_defaults(item, sub) if sub is not None else item
        for key, sub in properties.items():
            if key not in out and "default" in sub:
                out[key] = apply_defaults(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


# ---- 3. validation -----------------------------------------------------------------------------------


def validate(value: Any, schema: Schema, path: str) -> list[SchemaError]:
    """Types, required, enum, pattern, lengths, bounds, item counts and list-map keys."""
    wanted = schema.get("type")
    if value is None:
        if schema.get("nullable"):
            return []
        if wanted:
            return [SchemaError(path, f'Invalid value: "null": must be of type {wanted}', blocking=True)]
        return []
    if wanted and not _type_ok(value, str(wanted)):
        message = f'Invalid value: "{_type_name(value)}": must be of type {wanted}'
        return [SchemaError(path, message, blocking=True)]
    errors = _validate_scalar(value, schema, path)
    if isinstance(value, Mapping):
        errors += _validate_object(value, schema, path)
    elif isinstance(value, list):
        errors += _validate_array(value, schema, path)
    return errors


def _validate_scalar(value: Any, schema: Schema, path: str) -> list[SchemaError]:
    errors: list[SchemaError] = []
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(_show(e) for e in enum)
        errors.append(
            SchemaError(path, f"Unsupported value: {_show(value)}: supported values: {supported}", True)
        )
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            message = f"Too long: may not be more than {schema['maxLength']} bytes"
            errors.append(SchemaError(path, message, blocking=True))
        if "minLength" in schema and len(value) < schema["minLength"]:
            message = f"Invalid value: {_show(value)}: should be at least {schema['minLength']} chars long"
            errors.append(SchemaError(path, message))
        pattern = schema.get("pattern")
        if pattern is not None and re.search(pattern, value) is None:
            errors.append(SchemaError(path, f"Invalid value: {_show(value)}: should match '{pattern}'"))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        for key, exclusive, words in (
            ("maximum", "exclusiveMaximum", "less than"),
            ("minimum", "exclusiveMinimum", "greater than"),
        ):
            if key not in schema:
                continue
            bound = schema[key]
            strict = bool(schema.get(exclusive))
            beyond = (value > bound if key == "maximum" else value < bound) or (strict and value == bound)
            if beyond:
                relation = words if strict else f"{words} or equal to"
                message = f"Invalid value: {_show(value)}: should be {relation} {bound}"
                errors.append(SchemaError(path, message))
    return errors


def _validate_object(value: Mapping[str, Any], schema: Schema, path: str) -> list[SchemaError]:
    errors = [
        SchemaError(join_path(path, name), "Required value", blocking=True)
        for name in schema.get("required") or ()
        if name not in value
    ]
    properties: Mapping[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
        if sub is not None:
            errors += validate(item, sub, join_path(path, str(key)))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(SchemaError(path, f"must have at most {schema['maxProperties']} properties"))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(SchemaError(path, f"must have at least {schema['minProperties']} properties"))
    return errors


def _validate_array(value: list[Any], schema: Schema, path: str) -> list[SchemaError]:
    errors: list[SchemaError] = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        message = f"Too many: {len(value)}: must have at most {schema['maxItems']} items"
        errors.append(SchemaError(path, message, blocking=True))
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(SchemaError(path, f"should have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            errors += validate(item, items, join_path(path, i))
    errors += _list_type(value, schema, path)
    return errors


def _list_type(value: list[Any], schema: Schema, path: str) -> list[SchemaError]:
    """x-kubernetes-list-type map: one item per key; set: no duplicate items."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type not in ("map", "set"):
        return []
    keys: tuple[str, ...] = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    seen: set[str] = set()
    errors: list[SchemaError] = []
    for i, item in enumerate(value):
        if list_type == "map":
            if not isinstance(item, Mapping):
                continue
            ident = _show({k: item.get(k) for k in keys})
        else:
            ident = _show(item)
        if ident in seen:
            errors.append(SchemaError(join_path(path, i), f"Duplicate value: {ident}"))
        seen.add(ident)
    return errors


def metadata_errors(metadata: Any) -> list[SchemaError]:
    """What ObjectMeta validation checks of a cluster-scoped custom resource's name."""
    if not isinstance(metadata, Mapping):
        return [SchemaError("metadata.name", "Required value: name or generateName is required", True)]
    name = metadata.get("name")
    if not name:
        return [SchemaError("metadata.name", "Required value: name or generateName is required", True)]
    if not isinstance(name, str):
        message = f'Invalid value: "{_type_name(name)}": must be of type string'
        return [SchemaError("metadata.name", message, blocking=True)]
    if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [SchemaError("metadata.name", f"Invalid value: {_show(name)}: {DNS1123_MESSAGE}")]
    return []
