"""The status condition shape shared by every CR (metav1.Condition) and how to update a list of them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field
from pydantic.config import JsonDict

from policy_scheduler.policy.base import StatusModel

ConditionStatus = Literal["True", "False", "Unknown"]

# Schema markers for a `conditions` list: one entry per type.
CONDITIONS_LIST: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}


class Condition(StatusModel):
    """One aspect of the object's current state, in the standard Kubernetes condition shape."""

    type: str = Field(
        min_length=1,
        max_length=316,
        description="Type of the condition in CamelCase, e.g. Accepted, Ready, Degraded or Synced.",
    )
    status: ConditionStatus = Field(description="Whether the condition holds: True, False or Unknown.")
    reason: str | None = Field(
        None,
        max_length=1024,
        pattern=r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?)?$",
        description="A programmatic CamelCase identifier of the reason for the last transition.",
    )
    message: str | None = Field(
        None, max_length=32768, description="A human readable explanation of the last transition."
    )
    last_transition_time: datetime | None = Field(
        None, description="When the status of the condition last changed (RFC 3339)."
    )
    observed_generation: int | None = Field(
        None, ge=0, description="The metadata.generation the condition was computed from."
    )


def set_condition(conditions: Sequence[Condition], new: Condition) -> list[Condition]:
    """Replace the condition of `new.type`, keeping lastTransitionTime if the status is unchanged."""
    result: list[Condition] = []
    for old in conditions:
        if old.type != new.type:
            result.append(old)
        elif old.status == new.status and old.last_transition_time is not None:
            result.append(new.model_copy(update={"last_transition_time": old.last_transition_time}))
        else:
            result.append(new)
    if not any(c.type == new.type for c in conditions):
        result.append(new)
    return result


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def _one_per_type(conditions: list[Condition]) -> list[Condition]:
    types = [c.type for c in conditions]
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise ValueError(f"duplicate condition type(s): {', '.join(duplicates)}")
    return conditions


# A status `conditions` field: at most one condition per type, as the list-map schema requires.
Conditions = Annotated[list[Condition], AfterValidator(_one_per_type)]


# type -> (status, lastTransitionTime): what a controller remembers between status writes.
Transitions = dict[str, tuple[str, str]]


def condition_dict(
    transitions: Transitions,
    type_: str,
    status: str,
    reason: str,
    message: str,
    observed_generation: int,
    now: str,
) -> dict[str, str | int]:
    """A status condition as written to the API; lastTransitionTime moves only when status does."""
    previous = transitions.get(type_)
    if previous is None or previous[0] != status:
        previous = transitions[type_] = (status, now)
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": observed_generation,
        "lastTransitionTime": previous[1],
    }
