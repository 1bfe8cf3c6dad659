"""Base classes of the CR models: camelCase JSON names, strict specs, tolerant statuses."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict, JsonValue


class CamelModel(BaseModel):
    """camelCase JSON names; Python callers may use the snake_case attribute names."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        # Validators are built on first use, not at import: building them is a large share of
        # the operator's import time, mostly for models nothing validates before the first bind.
        defer_build=True,
    )

    def to_json(self) -> dict[str, object]:
        """The JSON document (camelCase, unset optional fields omitted)."""
        return self.model_dump(mode="json", exclude_none=True)


class SpecModel(CamelModel):
    """A user-written object: exact JSON names, unknown fields rejected, no type coercion.

    Strict because the apiserver would not coerce either ("3" is not an integer), and
    import-config must fail the same way kube-scheduler's strict decoder does.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class StatusModel(CamelModel):
    """A controller-written object: tolerant of fields it does not know.

    Not strict, so timestamps read back from the apiserver as strings parse into datetimes.
    """

    model_config = ConfigDict(extra="ignore")


def cel_rule(rule: str, message: str, field_path: str | None = None) -> JsonDict:
    """One `x-kubernetes-validations` entry; `field_path` points the error at a child field."""
    entry: JsonDict = {"rule": rule, "message": message}
    if field_path is not None:
        entry["fieldPath"] = field_path
    return entry


def validations(*rules: JsonDict) -> JsonDict:
    """Schema extra carrying CEL rules, for a model's or a field's `json_schema_extra`."""
    items: list[JsonValue] = [*rules]
    return {"x-kubernetes-validations": items}


ObservedGeneration = Annotated[
    int | None, Field(ge=0, description="The metadata.generation this status was computed from.")
]

# The status fields that persist the last accepted version of a policy object, so a restarted or
# newly elected operator serves it while the current generation is invalid.
LastAcceptedGeneration = Annotated[
    int | None,
    Field(
        ge=0,
        description="The metadata.generation in force: the last one accepted. Differs from "
        "metadata.generation while the latest spec is rejected.",
    ),
]
LastAcceptedSpec = Annotated[
    dict[str, Any] | None,
    Field(
        description="The spec of lastAcceptedGeneration, as accepted. The operator serves it after a "
        "restart while the current spec is invalid.",
    ),
]
