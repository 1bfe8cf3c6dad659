"""PriorityClassMirror, the status: what a mirror's status subresource says, from its record
(the last accepted spec, the latest verdict, the last sync) and the pods using the class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.controllers.last_accepted import LastAccepted
from policy_scheduler.policy.conditions import Transitions, condition_dict
from policy_scheduler.policy.constants import (
    CONDITION_ACCEPTED,
    CONDITION_READY,
    CONDITION_STALLED,
    CONDITION_SYNCED,
)
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec


def pod_counts(histogram: Mapping[int, int], value: int) -> tuple[int, int]:
    """(pods using the class, pods whose priority is not `value`)."""
    total = sum(histogram.values())
    return total, total - histogram.get(value, 0)


@dataclass(slots=True)
class SyncResult:
    ok: bool
    reason: str
    message: str
    native_uid: str | None = None


@dataclass(slots=True)
class MirrorRecord:
    name: str
    uid: str
    generation: int
    last: LastAccepted[PriorityClassMirrorSpec] = field(default_factory=LastAccepted)
    sync: SyncResult | None = None  # the last sync of the accepted spec
    transitions: Transitions = field(default_factory=dict)

    @property
    def spec(self) -> PriorityClassMirrorSpec | None:
        """The spec in force: the last accepted one (None: never accepted)."""
        return self.last.value

    @property
    def error(self) -> str | None:
        """Why the latest generation was rejected."""
        return self.last.error


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(record: MirrorRecord, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return condition_dict(record.transitions, type_, status, reason, message, record.generation, _now())


def mirror_status(record: MirrorRecord, histogram: Mapping[int, int]) -> dict[str, Any]:
    """The status subresource of a PriorityClassMirror (camelCase JSON)."""
    in_force = record.last.describe(record.generation)
    valid = record.error is None
    accepted = _condition(
        record,
        CONDITION_ACCEPTED,
        "True" if valid else "False",
        "Valid" if valid else "InvalidSpec",
        "the spec is valid" if valid else (record.error or "invalid spec"),
    )
    stalled = _condition(
        record,
        CONDITION_STALLED,
        "False" if valid else "True",
        "AsExpected" if valid else "InvalidSpec",
        in_force,
    )
    spec = record.spec
    if spec is None:
        message = record.error or "invalid spec"
        synced = _condition(
            record, CONDITION_SYNCED, "False", "InvalidSpec", "not synced: the spec is invalid"
        )
        ready = _condition(record, CONDITION_READY, "False", "InvalidSpec", message)
        return {"observedGeneration": record.generation, "conditions": [accepted, synced, ready, stalled]}
    sync = record.sync
    if sync is None:
        synced = _condition(record, CONDITION_SYNCED, "Unknown", "Pending", "not reconciled yet")
    else:
        synced = _condition(
            record, CONDITION_SYNCED, "True" if sync.ok else "False", sync.reason, sync.message
        )
    ok = sync is not None and sync.ok
    ready = _condition(
        record,
        CONDITION_READY,
        "True" if ok else "False",
        "Synced" if ok else (sync.reason if sync else "Pending"),
        f"PriorityClass {record.name} has value {spec.value}; {in_force}"
        if ok
        else (sync.message if sync else "not reconciled yet"),
    )
    total, outdated = pod_counts(histogram, spec.value)
    status: dict[str, Any] = {
        "observedGeneration": record.generation,
        "conditions": [accepted, synced, ready, stalled],
        "podCount": total,
        "outdatedPodCount": outdated,
        **record.last.status_fields(),
    }
    if sync is not None and sync.native_uid:
        status["nativeUid"] = sync.native_uid
    return status
