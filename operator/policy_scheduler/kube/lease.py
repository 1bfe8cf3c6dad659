"""The coordination.k8s.io/v1 Lease as leader election reads and writes it (client-go's LeaseLock).

A Lease is read with GET, created with POST, and written with a PUT of the object as last read:
its metadata.resourceVersion makes the write conditional, so of two replicas writing from the
same record only one succeeds (the other gets 409 Conflict). Fields we do not own (labels,
annotations, other spec fields) are written back as read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, call

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

LEASE_API = "/apis/coordination.k8s.io/v1"


def lease_collection(namespace: str) -> str:
    return f"{LEASE_API}/namespaces/{quote(namespace, safe='')}/leases"


@dataclass(frozen=True, slots=True)
class LeaderRecord:
    """client-go's LeaderElectionRecord: the part of a Lease's spec that election reads and writes.
    Times are kept as the MicroTime strings written; replicas never compare each other's clocks."""

    holder: str = ""
    lease_duration: int = 0  # seconds
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaderRecord:
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            fields["acquireTime"] = self.acquire_time
        if self.renew_time:
            fields["renewTime"] = self.renew_time
        return fields


@dataclass(frozen=True, slots=True)
class StoredLease:
    """A Lease as the server returned it: its record, its resourceVersion and the whole object."""

    record: LeaderRecord
    resource_version: str
    obj: dict[str, Any]

    @classmethod
    def decode(cls, body: bytes) -> StoredLease:
        obj: dict[str, Any] = msgspec.json.decode(body)
        meta = obj.get("metadata") or {}
        return cls(LeaderRecord.from_spec(obj.get("spec") or {}), str(meta.get("resourceVersion") or ""), obj)


class LeaseError(ApiError):
    """A Lease read or write (`verb`: get, create, update) that failed: an answer other than
    success (status, reason, message from the server's Status), or no answer at all (status 0).
    `conflict`: someone else wrote the Lease (or created it) since we read it."""

    def __init__(self, verb: str, status: int, reason: str, message: str) -> None:
        super().__init__(status, reason, message)
        self.verb = verb

    def __str__(self) -> str:
        answer = f"{self.status} {self.reason}" if self.status else self.reason
        return f"{self.verb}: {answer}: {self.message}"

    @property
    def namespace_missing(self) -> bool:
        """A create refused because the Lease's namespace does not exist."""
        return self.status == 404 and self.verb == "create"

    @property
    def label(self) -> str:
        """The reason as a metric label."""
        if self.namespace_missing:
            return "NamespaceNotFound"
        if self.status == 0:
            return "Unreachable"
        return self.reason or f"HTTP{self.status}"


class Leases(Protocol):
    """One Lease's reads and writes, as leader election needs them (LeaseApi on the API server)."""

    namespace: str

    def describe(self) -> str: ...

    async def get(self, request_timeout: float) -> StoredLease | None: ...

    async def create(self, record: LeaderRecord, request_timeout: float) -> StoredLease: ...

    async def update(
        self, current: StoredLease, record: LeaderRecord, request_timeout: float
    ) -> StoredLease: ...


class LeaseApi:
    """GET, create and conditional update of one Lease."""

    def __init__(self, api: ApiClient, namespace: str, name: str) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.collection = lease_collection(namespace)
        self.path = f"{self.collection}/{quote(name, safe='')}"

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def _call(
        self, verb: str, method: str, path: str, request_timeout: float, body: Any = None
    ) -> bytes:
        try:
            answer = await call(self.api, method, path, body=body, request_timeout=request_timeout)
        except CONNECTION_ERRORS as exc:
            raise LeaseError(verb, 0, type(exc).__name__, str(exc) or "no answer") from exc
        if not 200 <= answer.status < 300:
            error = ApiError.from_answer(answer)
            raise LeaseError(verb, answer.status, error.reason, error.message)
        return answer.body

    async def get(self, request_timeout: float) -> StoredLease | None:
        """The Lease, or None if there is none."""
        try:
            body = await self._call("get", "GET", self.path, request_timeout)
        except LeaseError as exc:
            if exc.status == 404:
                return None
            raise
        return StoredLease.decode(body)

    async def create(self, record: LeaderRecord, request_timeout: float) -> StoredLease:
        obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.spec_fields(),
        }
        return StoredLease.decode(await self._call("create", "POST", self.collection, request_timeout, obj))

    async def update(self, current: StoredLease, record: LeaderRecord, request_timeout: float) -> StoredLease:
        """Write `record` over `current`; 409 Conflict if the Lease changed since it was read."""
        obj = copy.deepcopy(current.obj)
        obj.setdefault("metadata", {})["resourceVersion"] = current.resource_version
        spec = obj.setdefault("spec", {})
        for key in ("holderIdentity", "leaseDurationSeconds", "leaseTransitions", "acquireTime", "renewTime"):
            spec.pop(key, None)
        spec.update(record.spec_fields())
        return StoredLease.decode(await self._call("update", "PUT", self.path, request_timeout, obj))
