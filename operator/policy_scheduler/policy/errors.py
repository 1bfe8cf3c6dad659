"""Validation errors of the policy layer: (field path, message) pairs.

Paths use the CR's JSON names (`spec.plugins.score.enabled[1].weight`) so a condition message
points at exactly what the user wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

M = TypeVar("M", bound=BaseModel)

# A validator raises PydanticCustomError of this type with ctx {"field": "sub.path"} to point
# below the model it runs on (pydantic locates model-level errors at the model itself).
FIELD_ERROR = "field_error"


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class PolicyError(ValueError):
    """One or more invalid fields; str() is a single line fit for a condition message."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__("; ".join(str(e) for e in self.errors) or "invalid")

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(e.path, e.message) for e in self.errors]


def field_error(field: str, message: str) -> PydanticCustomError:
    """An error about `field` (relative to the model being validated) for a model validator."""
    # Braces would be read as template placeholders by pydantic.
    safe = message.replace("{", "(").replace("}", ")")
    return PydanticCustomError(FIELD_ERROR, safe, {"field": field})


def join_path(prefix: str, *parts: str | int) -> str:
    """`join_path("spec", "plugins", 0, "name")` -> `spec.plugins[0].name`."""
    path = prefix
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.startswith("["):
            path += part
        else:
            path = f"{path}.{part}" if path else part
    return path


def errors_from_validation(exc: ValidationError, prefix: str) -> list[FieldError]:
    """Translate pydantic's errors into field paths below `prefix`."""
    return [_field_error(detail, prefix) for detail in exc.errors(include_url=False)]


def _field_error(detail: ErrorDetails, prefix: str) -> FieldError:
    # Union and tagged-union branch names are not part of the user's document.
    loc = [part for part in detail["loc"] if not (isinstance(part, str) and part.startswith("function-"))]
    if loc[-1:] == ["[key]"]:
        # A bad map key: name the map, as Kubernetes does (the message quotes the key).
        loc = loc[:-2]
    # Every string in loc is a field or a key the user wrote, even one starting with "[".
    path = "".join([prefix, *(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)]).lstrip(".")
    ctx: Mapping[str, Any] = detail.get("ctx") or {}
    if detail["type"] == FIELD_ERROR and ctx.get("field"):
        path = join_path(path, str(ctx["field"]))
    return FieldError(path, _message(detail, ctx))


_TYPE_NAMES = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "datetime_type": "an RFC 3339 date-time",
    "datetime_parsing": "an RFC 3339 date-time",
    "datetime_from_date_parsing": "an RFC 3339 date-time",
}


def _message(detail: ErrorDetails, ctx: Mapping[str, Any]) -> str:
    """pydantic's message in the wording of Kubernetes' field errors."""
    kind = detail["type"]
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}"
    bounds = {
        "less_than_equal": ("le", "less than or equal to"),
        "greater_than_equal": ("ge", "greater than or equal to"),
        "less_than": ("lt", "less than"),
        "greater_than": ("gt", "greater than"),
    }
    if kind in bounds:
        key, words = bounds[kind]
        return f"must be {words} {ctx[key]}"
    simple = {
        "extra_forbidden": "unknown field",
        "missing": "required field is missing",
        "too_short": f"must have at least {ctx.get('min_length')} item(s)",
        "too_long": f"must have at most {ctx.get('max_length')} item(s)",
        "string_too_short": f"must be at least {ctx.get('min_length')} character(s)",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "string_pattern_mismatch": f"must match the regular expression {ctx.get('pattern')}",
        "literal_error": f"unsupported value {detail.get('input')!r}: "
        f"supported values: {ctx.get('expected')}",
    }
    if kind in simple:
        return simple[kind]
    return detail["msg"].removeprefix("Value error, ")


def parse_model(
    model: type[M], raw: Any, prefix: str = "spec", context: Mapping[str, Any] | None = None
) -> M:
    """Validate `raw` (a JSON-shaped document) as `model`, or raise PolicyError. `context` reaches
    the model's validators (ValidationInfo.context)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PolicyError([FieldError(prefix, f"must be an object, got {type(raw).__name__}")])
    try:
        return model.model_validate(dict(raw), context=context)
    except ValidationError as exc:
        raise PolicyError(errors_from_validation(exc, prefix)) from None
