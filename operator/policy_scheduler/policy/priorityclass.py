"""PriorityClassMirror: a PriorityClass managed as policy; the operator syncs it to the native object.

Unlike a native PriorityClass, the value may change: pods created earlier keep their old
priority and are counted in status.outdatedPodCount.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from policy_scheduler.policy.base import (
    LastAcceptedGeneration,
    LastAcceptedSpec,
    ObservedGeneration,
    SpecModel,
    StatusModel,
    cel_rule,
)
from policy_scheduler.policy.conditions import CONDITIONS_LIST, Conditions

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000  # scheduling.HighestUserDefinablePriority
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
INT32_MIN = -(2**31)

# Root-level CEL rule (only metadata.name is visible there): system- names are reserved.
NAME_RULE = cel_rule(
    f"!self.metadata.name.startsWith('{SYSTEM_PRIORITY_CLASS_PREFIX}')",
    f"names with the '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system priority classes",
)


class PriorityClassMirrorSpec(SpecModel):
    """The PriorityClass to maintain, with the fields of scheduling.k8s.io/v1 PriorityClass."""

    value: int = Field(
        ge=INT32_MIN,
        le=HIGHEST_USER_DEFINABLE_PRIORITY,
        description="Priority of pods using this class; higher runs first and may preempt lower. At most "
        "1000000000 (larger values are reserved for system classes).",
    )
    global_default: bool = Field(
        False,
        description="Use this class for pods that name no priority class. At most one class in the "
        "cluster may be the global default.",
    )
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = Field(
        "PreemptLowerPriority",
        description="PreemptLowerPriority: pods of this class may preempt lower-priority pods. Never: they "
        "wait in the queue ahead of lower priorities but never preempt.",
    )
    description: str | None = Field(
        None, max_length=2048, description="Free-form text on when this class should be used."
    )


def name_problem(name: str) -> str | None:
    """The check of NAME_RULE, for callers that have the object's name."""
    return str(NAME_RULE["message"]) if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX) else None


class PriorityClassMirrorStatus(StatusModel):
    """State of the native PriorityClass and of the pods using it."""

    observed_generation: ObservedGeneration = None
    conditions: Conditions = Field(
        default_factory=list,
        description="Synced: the native PriorityClass matches the spec.",
        json_schema_extra=CONDITIONS_LIST,
    )
    native_uid: str | None = Field(None, description="UID of the native PriorityClass.")
    pod_count: int = Field(0, ge=0, description="Pods that use this priority class.")
    outdated_pod_count: int = Field(
        0, ge=0, description="Pods of this class whose priority differs from the current value."
    )
    last_accepted_generation: LastAcceptedGeneration = None
    last_accepted_spec: LastAcceptedSpec = None
