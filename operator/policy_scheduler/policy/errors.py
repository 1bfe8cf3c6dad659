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
    path = join_path(prefix, *loc)
    ctx: Mapping[str, Any] = detail.get("ctx") or {}
    kind = detail["type"]
    message = detail["msg"]
    if kind == FIELD_ERROR:
        path = join_path(path, str(ctx["field"])) if ctx.get("field") else path
    elif kind == "extra_forbidden":
        message = "unknown field"
    elif kind == "missing":
        message = "required field is missing"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    return FieldError(path, message)


def parse_model(model: type[M], raw: Any, prefix: str = "spec") -> M:
    """Validate `raw` (a JSON-shaped document) as `model`, or raise PolicyError."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PolicyError([FieldError(prefix, f"must be an object, got {type(raw).__name__}")])
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise PolicyError(errors_from_validation(exc, prefix)) from None
