"""scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1): the API shape and its core model.

A foreign CRD, so its struct lives here rather than with the core Kubernetes kinds in structs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.structs import ObjectMeta, _Base
from policy_scheduler.scheduler.gang import GroupState, PodGroup
from policy_scheduler.scheduler.gang.podgroup import (
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_SCHEDULED,
    PHASE_SCHEDULING,
)
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.resources import QuantityError, canonical_list


class PodGroupSpec(_Base):
    min_member: int = 0
    min_resources: dict[str, Any] | None = None
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(_Base):
    phase: str = ""
    occupied_by: str = ""
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: datetime | None = None


class PodGroupObject(_Base):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


def pod_group_from_api(obj: PodGroupObject) -> PodGroup:
    meta, spec = obj.metadata, obj.spec
    created = meta.creation_timestamp.timestamp() if meta.creation_timestamp is not None else 0.0
    malformed: str | None = None
    min_resources: dict[str, int] | None = None
    try:
        if spec.min_resources is not None:
            min_resources = canonical_list(spec.min_resources)
    except (QuantityError, TypeError, ValueError) as exc:
        malformed = f"PodGroup {meta.namespace}/{meta.name}: spec.minResources: {exc}"
    return PodGroup(
        namespace=meta.namespace or "default",
        name=meta.name,
        min_member=max(spec.min_member, 1),
        min_resources=min_resources,
        schedule_timeout_seconds=spec.schedule_timeout_seconds,
        creation_timestamp=created,
        uid=meta.uid,
        malformed=malformed,
    )


def pod_group_from_dict(raw: dict[str, Any]) -> PodGroup:
    """From a YAML document (simulate)."""
    try:
        obj = msgspec.convert(raw, PodGroupObject, strict=False)
    except msgspec.ValidationError as exc:
        problem, _, path = str(exc).rpartition(" - at `$.")
        if problem:  # msgspec words it "<problem> - at `$.<path>`"
            raise ConversionError(path.rstrip("`"), problem) from None
        raise ConversionError("", str(exc)) from None
    return pod_group_from_api(obj)


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_group_status(group: PodGroup, state: GroupState, members: Sequence[Pod]) -> dict[str, Any]:
    """The status policy-scheduler reports for a group: `members` are those holding a node
    (bound or assumed). Phase as scheduler-plugins' controller names it."""
    scheduled = sum(1 for pod in members if pod.node_name)
    running = sum(1 for pod in members if pod.phase == "Running")
    if running >= group.min_member:
        phase = PHASE_RUNNING
    elif scheduled >= group.min_member and not state.message:
        phase = PHASE_SCHEDULED
    elif state.schedule_start_time is not None:
        phase = PHASE_SCHEDULING
    else:
        phase = PHASE_PENDING
    status: dict[str, Any] = {"phase": phase, "scheduled": scheduled, "running": running}
    if state.schedule_start_time is not None:
        status["scheduleStartTime"] = _rfc3339(state.schedule_start_time)
    waiting = bool(state.message) and phase in (PHASE_PENDING, PHASE_SCHEDULING)
    status["conditions"] = [
        {
            "type": "Scheduled",
            "status": "False" if waiting else "True",
            "reason": "Waiting" if waiting else "Scheduled",
            "message": state.message
            if waiting
            else f"{scheduled} of minMember {group.min_member} pods scheduled",
        }
    ]
    return status
