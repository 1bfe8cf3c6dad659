"""PriorityClassMirror controller: keeps the native scheduling.k8s.io/v1 PriorityClass of the same
name equal to the mirror's spec, and reports the pods that use it.

What it does to the native class:
- none exists: create it, labelled managed-by policy-scheduler, annotated origin=created, with an
  ownerReference to the mirror (so the API server's garbage collector removes it with the mirror
  even if the operator is down at that moment);
- one exists that we do not manage: adopt it (label + origin=adopted, no ownerReference), so it
  is never deleted because of the mirror;
- description or globalDefault differ: merge-patch them in place;
- value or preemptionPolicy differ (immutable on the native object): delete it (precondition on
  its uid) and create it again, keeping its origin, labels and annotations. Pods created between
  the two calls are refused by the Priority admission plugin; pods already running keep their old
  priority and are counted in status.outdatedPodCount;
- mirror deleted: delete the native class if origin=created and it is owned by that very mirror
  (uid), else release it (remove our label and annotation).

No finalizers and no kopf persistence: kopf only delivers events (`on.event`) of the mirrors and
of the native classes (so a hand-edited or deleted native class is repaired at once); a resync
every RESYNC_SECONDS and at each gain of leadership repairs whatever was missed. Only the leader
writes (the native classes and, through the StatusWriter, the mirrors' status).

Contract with the operator (see `registrar`):
    pod_priorities(class_name) -> Mapping[int, int]
        for the live pods (the operator's pod informer: not Succeeded/Failed) whose
        spec.priorityClassName == class_name, the number of pods per spec.priority value.
        podCount is the sum; outdatedPodCount the pods whose priority is not spec.value.
        It is called on the event loop, every STATUS_SECONDS per mirror, and must not block.
    is_leader() -> bool: whether this replica may write now.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import kopf

from policy_scheduler.kube import priorityclasses as native_api
from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.policy.conditions import condition_dict
from policy_scheduler.policy.constants import (
    API_VERSION,
    CONDITION_ACCEPTED,
    CONDITION_READY,
    CONDITION_SYNCED,
    GROUP,
    PRIORITY_CLASS_MIRROR_KIND,
    PRIORITY_CLASS_MIRROR_PLURAL,
    VERSION,
)
from policy_scheduler.policy.errors import FieldError, PolicyError, parse_model
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec, name_problem
from policy_scheduler.scheduler.model import Pod

log = logging.getLogger(__name__)

PLURAL = PRIORITY_CLASS_MIRROR_PLURAL
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "policy-scheduler"
ORIGIN_ANNOTATION = f"{GROUP}/mirror-origin"
ORIGIN_CREATED = "created"
ORIGIN_ADOPTED = "adopted"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"

RESYNC_SECONDS = 30.0
STATUS_SECONDS = 5.0
TICK_SECONDS = 1.0
MAX_STEPS = 4  # plan/act rounds per reconcile (adopt, then recreate, then check) before giving up


PodPriorities = Callable[[str], Mapping[int, int]]


# ---- pure decisions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NativeState:
    """What the controller looks at in a native PriorityClass."""

    uid: str
    value: int
    global_default: bool = False
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY
    description: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_references: tuple[Mapping[str, Any], ...] = ()
    deleting: bool = False

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NativeState:
        meta = obj.get("metadata") or {}
        return cls(
            uid=str(meta.get("uid", "")),
            value=int(obj.get("value", 0)),
            global_default=bool(obj.get("globalDefault", False)),
            preemption_policy=str(obj.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY),
            description=obj.get("description") or None,
            labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}),
            owner_references=tuple(meta.get("ownerReferences") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
        )

    @property
    def origin(self) -> str | None:
        """created / adopted when we manage it, else None."""
        origin = self.annotations.get(ORIGIN_ANNOTATION)
        return origin if origin in (ORIGIN_CREATED, ORIGIN_ADOPTED) else None

    @property
    def owner_uid(self) -> str | None:
        """The uid of the PriorityClassMirror that owns it, if any."""
        for ref in self.owner_references:
            if ref.get("kind") == PRIORITY_CLASS_MIRROR_KIND and str(ref.get("apiVersion", "")).startswith(
                GROUP + "/"
            ):
                return str(ref.get("uid", "")) or None
        return None


class Action(enum.Enum):
    NOTHING = "Nothing"
    CREATE = "Create"
    ADOPT = "Adopt"  # mark an unmanaged class as ours (and fix its mutable fields)
    UPDATE = "Update"  # mutable fields or the ownerReference
    RECREATE = "Recreate"  # value or preemptionPolicy changed
    WAIT = "Wait"  # the native class is being deleted: look again shortly
    DELETE = "Delete"  # mirror gone, class created by us
    RELEASE = "Release"  # mirror gone, class adopted: drop our marks, keep the class


@dataclass(frozen=True, slots=True)
class Plan:
    action: Action
    reason: str
    patch: dict[str, Any] | None = None  # ADOPT, UPDATE, RELEASE: a JSON merge patch
    body: dict[str, Any] | None = None  # CREATE, RECREATE: the object to create


def owner_reference(name: str, mirror_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": PRIORITY_CLASS_MIRROR_KIND,
        "name": name,
        "uid": mirror_uid,
        "controller": True,
    }


def desired_object(
    name: str,
    mirror_uid: str,
    spec: PriorityClassMirrorSpec,
    origin: str,
    previous: NativeState | None = None,
) -> dict[str, Any]:
    """The native class to create; `previous` (a recreation) passes on its labels and annotations."""
    labels = {**(previous.labels if previous else {}), MANAGED_BY_LABEL: MANAGED_BY}
    annotations = {**(previous.annotations if previous else {}), ORIGIN_ANNOTATION: origin}
    meta: dict[str, Any] = {"name": name, "labels": labels, "annotations": annotations}
    if origin == ORIGIN_CREATED:
        meta["ownerReferences"] = [owner_reference(name, mirror_uid)]
    obj: dict[str, Any] = {
        "apiVersion": native_api.API_VERSION,
        "kind": native_api.KIND,
        "metadata": meta,
        "value": spec.value,
        "globalDefault": spec.global_default,
        "preemptionPolicy": spec.preemption_policy,
    }
    if spec.description:
        obj["description"] = spec.description
    return obj


def _mutable_patch(spec: PriorityClassMirrorSpec, native: NativeState) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    if native.global_default != spec.global_default:
        patch["globalDefault"] = spec.global_default
    if (native.description or None) != (spec.description or None):
        patch["description"] = spec.description or None  # None removes it
    return patch


def _owner_patch(name: str, mirror_uid: str, native: NativeState) -> list[dict[str, Any]]:
    """ownerReferences with ours pointing at `mirror_uid` (a merge patch replaces the whole list)."""
    others = [
        dict(ref)
        for ref in native.owner_references
        if not (ref.get("kind") == PRIORITY_CLASS_MIRROR_KIND and ref.get("name") == name)
    ]
    return [*others, owner_reference(name, mirror_uid)]


def plan(name: str, mirror_uid: str, spec: PriorityClassMirrorSpec, native: NativeState | None) -> Plan:
    """The next step that brings the native class closer to `spec` (NOTHING when it matches)."""
    if native is None:
        return Plan(
            Action.CREATE,
            "no PriorityClass of that name",
            body=desired_object(name, mirror_uid, spec, ORIGIN_CREATED),
        )
    if native.deleting:
        return Plan(Action.WAIT, "the PriorityClass is being deleted")
    origin = native.origin or ORIGIN_ADOPTED
    changed = [
        f"{field_name} {old} -> {new}"
        for field_name, old, new in (
            ("value", native.value, spec.value),
            ("preemptionPolicy", native.preemption_policy, spec.preemption_policy),
        )
        if old != new
    ]
    if changed:
        return Plan(
            Action.RECREATE,
            f"immutable field(s) changed: {', '.join(changed)}",
            body=desired_object(name, mirror_uid, spec, origin, previous=native),
        )
    patch = _mutable_patch(spec, native)
    if native.origin is None:
        patch["metadata"] = {
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {ORIGIN_ANNOTATION: ORIGIN_ADOPTED},
        }
        return Plan(Action.ADOPT, "an existing PriorityClass not managed by policy-scheduler", patch=patch)
    reasons = [f"{key} differs" for key in patch]
    if origin == ORIGIN_CREATED and native.owner_uid != mirror_uid:
        patch["metadata"] = {"ownerReferences": _owner_patch(name, mirror_uid, native)}
        reasons.append("ownerReference does not point at this mirror")
    if not patch:
        return Plan(Action.NOTHING, "in sync")
    return Plan(Action.UPDATE, ", ".join(reasons), patch=patch)


def plan_deletion(mirror_uid: str, native: NativeState | None) -> Plan:
    """What to do with the native class once the mirror with `mirror_uid` is gone."""
    if native is None or native.deleting:
        return Plan(Action.NOTHING, "no PriorityClass left")
    if native.origin == ORIGIN_CREATED and native.owner_uid == mirror_uid:
        return Plan(Action.DELETE, "created for this mirror")
    if native.origin == ORIGIN_ADOPTED:
        return Plan(
            Action.RELEASE,
            "adopted: kept, no longer managed",
            patch={
                "metadata": {"labels": {MANAGED_BY_LABEL: None}, "annotations": {ORIGIN_ANNOTATION: None}}
            },
        )
    return Plan(Action.NOTHING, "not created for this mirror")


def validate(name: str, raw_spec: Any) -> PriorityClassMirrorSpec:
    """The spec as the model reads it, or PolicyError with field paths."""
    spec = parse_model(PriorityClassMirrorSpec, raw_spec, "spec")
    problem = name_problem(name)
    if problem:
        raise PolicyError([FieldError("metadata.name", problem)])
    return spec


def pod_counts(histogram: Mapping[int, int], value: int) -> tuple[int, int]:
    """(pods using the class, pods whose priority is not `value`)."""
    total = sum(histogram.values())
    return total, total - histogram.get(value, 0)


# ---- status ----------------------------------------------------------------------------------------


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
    spec: PriorityClassMirrorSpec | None
    error: str | None  # why the spec was rejected
    sync: SyncResult | None = None
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, time)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(record: MirrorRecord, type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return condition_dict(record.transitions, type_, status, reason, message, record.generation, _now())


def mirror_status(record: MirrorRecord, histogram: Mapping[int, int]) -> dict[str, Any]:
    """The status subresource of a PriorityClassMirror (camelCase JSON)."""
    if record.spec is None:
        message = record.error or "invalid spec"
        accepted = _condition(record, CONDITION_ACCEPTED, "False", "InvalidSpec", message)
        synced = _condition(
            record, CONDITION_SYNCED, "False", "InvalidSpec", "not synced: the spec is invalid"
        )
        ready = _condition(record, CONDITION_READY, "False", "InvalidSpec", message)
        return {"observedGeneration": record.generation, "conditions": [accepted, synced, ready]}
    accepted = _condition(record, CONDITION_ACCEPTED, "True", "Valid", "the spec is valid")
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
        f"PriorityClass {record.name} has value {record.spec.value}"
        if ok
        else (sync.message if sync else "not reconciled yet"),
    )
    total, outdated = pod_counts(histogram, record.spec.value)
    status: dict[str, Any] = {
        "observedGeneration": record.generation,
        "conditions": [accepted, synced, ready],
        "podCount": total,
        "outdatedPodCount": outdated,
    }
    if sync is not None and sync.native_uid:
        status["nativeUid"] = sync.native_uid
    return status


# ---- the controller -----------------------------------------------------------------------------


_DONE = {
    Action.CREATE: "created",
    Action.ADOPT: "adopted",
    Action.UPDATE: "updated",
    Action.RECREATE: "recreated",
}


# What a sync may fail with and retry later: an API answer or no answer.
_SYNC_ERRORS: tuple[type[BaseException], ...] = (ApiError, *CONNECTION_ERRORS)


def _error_reason(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return {403: "Forbidden", 409: "Conflict", 422: "Invalid"}.get(exc.status, "ApiError")
    return "ConnectionError"


class MirrorController:
    def __init__(
        self,
        api: Any,
        status_writer: StatusWriter,
        pod_priorities: PodPriorities,
        is_leader: Callable[[], bool],
        *,
        resync_seconds: float = RESYNC_SECONDS,
        status_seconds: float = STATUS_SECONDS,
        tick_seconds: float = TICK_SECONDS,
    ) -> None:
        self.api = api
        self.status_writer = status_writer
        self.pod_priorities = pod_priorities
        self.is_leader = is_leader
        self.resync_seconds = resync_seconds
        self.status_seconds = status_seconds
        self.tick_seconds = tick_seconds
        self.records: dict[str, MirrorRecord] = {}
        self._deleted: dict[str, str] = {}  # name -> uid of a mirror gone since the last reconcile
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._failures: dict[str, int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._retries: dict[str, asyncio.TimerHandle] = {}

    # events (called on the event loop by kopf) ------------------------------------------------

    def on_mirror_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        name = str(meta.get("name", ""))
        uid = str(meta.get("uid", ""))
        if not name:
            return
        if event_type == "DELETED":
            record = self.records.get(name)
            if record is not None and record.uid == uid:
                del self.records[name]
                self._deleted[name] = uid
                self.status_writer.forget(PLURAL, name)
                self._enqueue(name)
            return
        generation = int(meta.get("generation") or 0)
        record = self.records.get(name)
        if record is not None and record.uid == uid and record.generation == generation:
            return  # a status write or a resync: nothing new in the spec
        try:
            spec, error = validate(name, body.get("spec")), None
        except PolicyError as exc:
            spec, error = None, str(exc)
            log.warning("priorityclassmirror rejected", extra={"mirror": name, "error": error})
        transitions = record.transitions if record is not None and record.uid == uid else {}
        self.records[name] = MirrorRecord(name, uid, generation, spec, error, transitions=transitions)
        self._deleted.pop(name, None)
        self._publish(name)
        self._enqueue(name)

    def on_native_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        name = str((body.get("metadata") or {}).get("name", ""))
        if name in self.records and event_type is not None:
            self._enqueue(name)

    # lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._worker(), name="priorityclassmirror-worker"),
                asyncio.create_task(self._ticker(), name="priorityclassmirror-resync"),
            ]

    async def stop(self) -> None:
        for handle in self._retries.values():
            handle.cancel()
        self._retries.clear()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _enqueue(self, name: str) -> None:
        if name not in self._queued:
            self._queued.add(name)
            self._queue.put_nowait(name)

    def _retry_later(self, name: str) -> None:
        failures = self._failures[name] = self._failures.get(name, 0) + 1
        delay = min(60.0, 0.5 * 2**failures)
        if name in self._retries:
            self._retries[name].cancel()
        self._retries[name] = asyncio.get_running_loop().call_later(delay, self._enqueue, name)

    def _publish(self, name: str) -> None:
        record = self.records.get(name)
        if record is None or not self.is_leader():
            return
        self.status_writer.set(PLURAL, name, mirror_status(record, self.pod_priorities(name)))

    async def _ticker(self) -> None:
        was_leader = False
        next_resync = next_status = time.monotonic()
        while True:
            await asyncio.sleep(self.tick_seconds)
            leader = self.is_leader()
            now = time.monotonic()
            if leader and (not was_leader or now >= next_resync):
                for name in [*self.records, *self._deleted]:
                    self._enqueue(name)
                next_resync = now + self.resync_seconds
            if leader and now >= next_status:
                for name in list(self.records):
                    self._publish(name)
                next_status = now + self.status_seconds
            was_leader = leader

    async def _worker(self) -> None:
        while True:
            name = await self._queue.get()
            self._queued.discard(name)
            if not self.is_leader():
                continue  # the next leader resyncs everything
            try:
                await self.sync(name)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not stop the other mirrors
                log.exception("priorityclassmirror reconcile crashed", extra={"mirror": name})
                self._retry_later(name)

    # reconcile ------------------------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        """Reconcile one name: the mirror's spec if it exists, else its deletion."""
        record = self.records.get(name)
        if record is None:
            uid = self._deleted.pop(name, None)
            if uid is not None:
                await self._finalize(name, uid)
            return
        if record.spec is None:
            return
        try:
            record.sync = await self._reconcile(record, record.spec)
        except _SYNC_ERRORS as exc:
            log.warning("priorityclassmirror sync failed", extra={"mirror": name, "error": str(exc)})
            record.sync = SyncResult(
                False,
                _error_reason(exc),
                f"syncing PriorityClass {name}: {exc}",
                record.sync.native_uid if record.sync else None,
            )
            self._retry_later(name)
        else:
            if record.sync.ok:
                self._failures.pop(name, None)
        self._publish(name)

    async def _reconcile(self, record: MirrorRecord, spec: PriorityClassMirrorSpec) -> SyncResult:
        name = record.name
        done: list[str] = []
        for _ in range(MAX_STEPS):
            obj = await native_api.get_priority_class(self.api, name)
            native = NativeState.from_object(obj) if obj is not None else None
            step = plan(name, record.uid, spec, native)
            if step.action is Action.NOTHING:
                assert native is not None
                message = f"PriorityClass {name} matches the spec"
                if done:
                    message += f" ({'; '.join(done)})"
                return SyncResult(True, "InSync", message, native.uid)
            if step.action is Action.WAIT:
                self._retry_later(name)
                return SyncResult(False, "Waiting", f"PriorityClass {name} is being deleted")
            if not self.is_leader():
                return SyncResult(False, "NotLeader", "leadership lost during the sync")
            log.info(
                "priorityclassmirror sync",
                extra={"mirror": name, "action": step.action.value, "why": step.reason},
            )
            await self._act(name, step, native)
            done.append(f"{_DONE[step.action]}: {step.reason}")
        self._retry_later(name)
        return SyncResult(
            False,
            "NotConverged",
            f"PriorityClass {name} still differs after {MAX_STEPS} changes ({'; '.join(done)})",
        )

    async def _act(self, name: str, step: Plan, native: NativeState | None) -> None:
        if step.action is Action.CREATE:
            assert step.body is not None
            await self._create(step.body)
        elif step.action in (Action.ADOPT, Action.UPDATE, Action.RELEASE):
            assert step.patch is not None
            await native_api.patch_priority_class(self.api, name, step.patch)
        elif step.action is Action.RECREATE:
            assert step.body is not None and native is not None
            await native_api.delete_priority_class(self.api, name, native.uid)
            await self._create(step.body)
        elif step.action is Action.DELETE:
            assert native is not None
            await native_api.delete_priority_class(self.api, name, native.uid)

    async def _create(self, body: dict[str, Any]) -> None:
        try:
            await native_api.create_priority_class(self.api, body)
        except ApiError as exc:
            if exc.status != 409:  # someone made one meanwhile: the next step looks at it
                raise

    async def _finalize(self, name: str, uid: str) -> None:
        try:
            obj = await native_api.get_priority_class(self.api, name)
            native = NativeState.from_object(obj) if obj is not None else None
            step = plan_deletion(uid, native)
            if step.action is not Action.NOTHING:
                log.info(
                    "priorityclassmirror deleted",
                    extra={"mirror": name, "action": step.action.value, "why": step.reason},
                )
                await self._act(name, step, native)
        except _SYNC_ERRORS as exc:
            log.warning("priorityclassmirror cleanup failed", extra={"mirror": name, "error": str(exc)})
            if name not in self.records:
                self._deleted[name] = uid
                self._retry_later(name)


# ---- wiring ---------------------------------------------------------------------------------------


def register(
    registry: kopf.OperatorRegistry,
    *,
    api: Any,
    status_writer: StatusWriter,
    pod_priorities: PodPriorities,
    is_leader: Callable[[], bool],
) -> MirrorController:
    """Register the kopf handlers (mirror events, native class events, start/stop)."""
    controller = MirrorController(api, status_writer, pod_priorities, is_leader)

    # async handlers: kopf runs sync ones in a thread pool, and the controller is loop-bound.
    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry)
    async def _mirror_event(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        controller.on_mirror_event(event.get("type"), dict(body))

    @kopf.on.event("scheduling.k8s.io", "v1", "priorityclasses", registry=registry)
    async def _native_event(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        controller.on_native_event(event.get("type"), dict(body))

    @kopf.on.startup(registry=registry)
    async def _start(**_: Any) -> None:
        controller.start()

    @kopf.on.cleanup(registry=registry)
    async def _stop(**_: Any) -> None:
        await controller.stop()

    return controller


def pod_priority_counter(pods: Callable[[], Iterable[Pod]]) -> PodPriorities:
    """pod_priorities over the operator's pod cache (`pods` returns the cached pods)."""

    def pod_priorities(class_name: str) -> Mapping[int, int]:
        return Counter(p.priority for p in pods() if p.priority_class_name == class_name)

    return pod_priorities


def registrar(
    *,
    api: Any,
    status_writer: StatusWriter,
    pods: Callable[[], Iterable[Pod]],
    is_leader: Callable[[], bool],
) -> Callable[[kopf.OperatorRegistry], None]:
    """For build_registry(extra=[...]): `pods` returns the pod informer's cached pods."""

    def register_mirrors(registry: kopf.OperatorRegistry) -> None:
        register(
            registry,
            api=api,
            status_writer=status_writer,
            pod_priorities=pod_priority_counter(pods),
            is_leader=is_leader,
        )

    return register_mirrors
