"""The Event objects the scheduler writes, as plain data: no API client, so that tools (the
benchmark's no-op binder) build the very same bodies as `kube/events.py`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policy_scheduler.scheduler import model

NORMAL = "Normal"
WARNING = "Warning"

SCHEDULED = "Scheduled"
BINDING = "Binding"  # the action of a Scheduled event
FAILED_SCHEDULING = "FailedScheduling"
PREEMPTED = "Preempted"

MAX_NOTE_BYTES = 1024  # API validation limit for Event.note
MAX_REPORTING_INSTANCE = 128  # API validation limit for Event.reportingInstance


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"
    resource_version: str = ""

    @classmethod
    def for_pod(cls, pod: model.Pod) -> ObjectRef:
        return cls("Pod", pod.name, pod.namespace, pod.uid, "v1", pod.resource_version)

    def to_json(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        return out

    @property
    def identity(self) -> str:
        return self.uid or f"{self.kind}/{self.namespace}/{self.name}"


def scheduled_note(namespace: str, name: str, node_name: str) -> str:
    """kube-scheduler's note on a Scheduled event."""
    return f"Successfully assigned {namespace}/{name} to {node_name}"


def reporting_instance(controller: str, identity: str) -> str:
    """client-go's events recorder names the instance reportingController + "-" + hostname; ours
    puts the replica's identity (hostname_uuid, as its Lease names it) in the hostname's place, so
    two replicas on one host are told apart. Cut from the front to fit the API's limit: the uuid
    at the end stays."""
    room = max(MAX_REPORTING_INSTANCE - len(controller) - 1, 1)
    return f"{controller}-{identity[-room:]}"[-MAX_REPORTING_INSTANCE:]


def micro_time(ts: float) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truncate_note(note: str) -> str:
    data = note.encode()
    if len(data) <= MAX_NOTE_BYTES:
        return note
    return data[: MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


def event_body(
    *,
    name: str,
    regarding: ObjectRef,
    related: ObjectRef | None,
    type_: str,
    reason: str,
    action: str,
    note: str,
    now: float,
    controller: str,
    instance: str,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": regarding.namespace or "default"},
        "eventTime": micro_time(now),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "note": note,
        "type": type_,
        "regarding": regarding.to_json(),
    }
    if related is not None:
        body["related"] = related.to_json()
    return body
