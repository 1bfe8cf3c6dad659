"""PriorityClassMirror controller: keeps the native scheduling.k8s.io/v1 PriorityClass of the same
name equal to the mirror's last accepted spec, and reports the pods that use it.

The decisions are in mirror_plan, the status in mirror_status; this module runs them: a work
queue of mirror names (one reconcile per name at a time, backoff on failure, resync every
MirrorTimings.resync and at each gain of leadership). No finalizers and no kopf persistence: kopf
only delivers events of the mirrors and of the native classes (so a hand-edited or deleted
native class is repaired at once). Only the leader writes (the native classes and, through the
StatusWriter, the mirrors' status). An invalid update keeps the last accepted spec in force.

Recreating a class (value or preemptionPolicy changed): pods created between the delete and the
create are refused by the Priority admission plugin; pods already running keep their old
priority and are counted in status.outdatedPodCount.

Contract with the operator (kopf_app feeds the events; see `pod_priority_counter`):
    pod_priorities(class_name) -> Mapping[int, int]
        for the live pods (the operator's pod informer: not Succeeded/Failed) whose
        spec.priorityClassName == class_name, the number of pods per spec.priority value.
        podCount is the sum; outdatedPodCount the pods whose priority is not spec.value.
        It is called on the event loop, every MirrorTimings.status per mirror, and must not block.
    fence (kube.fence): whether this replica may write now; every write asks it again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from policy_scheduler.controllers.last_accepted import LastAccepted
from policy_scheduler.controllers.mirror_plan import Action, NativeState, Plan, plan, plan_deletion, validate
from policy_scheduler.controllers.mirror_status import MirrorRecord, SyncResult, mirror_status
from policy_scheduler.controllers.timings import DEFAULT_MIRROR_TIMINGS, MirrorTimings
from policy_scheduler.controllers.workqueue import WorkQueue, WorkQueueObserver
from policy_scheduler.kube import priorityclasses as native_api
from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.kube.fence import Fence, NotLeading
from policy_scheduler.policy.constants import PRIORITY_CLASS_MIRROR_PLURAL
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.priorityclass import PriorityClassMirrorSpec
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

PLURAL = PRIORITY_CLASS_MIRROR_PLURAL

MAX_STEPS = 4  # plan/act rounds per reconcile (adopt, then recreate, then check) before giving up


PodPriorities = Callable[[str], Mapping[int, int]]


_DONE = {
    Action.CREATE: "created",
    Action.ADOPT: "adopted",
    Action.UPDATE: "updated",
    Action.RECREATE: "recreated",
}


WORKQUEUE_NAME = "priorityclassmirror"  # the workqueue_* series' name label

# What a sync may fail with and retry later: an API answer or no answer.
_SYNC_ERRORS: tuple[type[BaseException], ...] = (ApiError, *CONNECTION_ERRORS)


def _error_reason(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return {403: "Forbidden", 409: "Conflict", 422: "Invalid"}.get(exc.status, "ApiError")
    return "ConnectionError"


class MirrorController:
    def __init__(
        self,
        api: ApiClient,
        status_writer: StatusWriter,
        pod_priorities: PodPriorities,
        fence: Fence,
        *,
        timings: MirrorTimings = DEFAULT_MIRROR_TIMINGS,
        clock: Callable[[], float] = time.monotonic,
        workqueue_observer: WorkQueueObserver | None = None,
    ) -> None:
        self.api = api
        self.status_writer = status_writer
        self.pod_priorities = pod_priorities
        self.fence = fence
        self.status_seconds = timings.status
        self.tick_seconds = timings.tick
        self.clock = clock
        self.records: dict[str, MirrorRecord] = {}
        self._deleted: dict[str, str] = {}  # name -> uid of a mirror gone since the last reconcile
        self.queue: WorkQueue[str] = WorkQueue(
            lambda: [*self.records, *self._deleted],
            resync_seconds=timings.resync,
            base_delay=1.0,
            clock=clock,
            name=WORKQUEUE_NAME,
            observer=workqueue_observer,
        )
        self._tasks: list[asyncio.Task[None]] = []

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
                self.queue.add(name)
            return
        self.status_writer.observe(PLURAL, name, body.get("status"))
        generation = int(meta.get("generation") or 0)
        record = self.records.get(name)
        if record is not None and record.uid == uid and record.generation == generation:
            return  # a status write or a resync: nothing new in the spec
        if record is None or record.uid != uid:
            record = self.records[name] = MirrorRecord(name, uid, generation, LastAccepted())
            # A restarted or newly elected operator keeps the spec it persisted as accepted.
            if record.last.restore(body.get("status"), lambda spec: validate(name, spec)):
                log.info(
                    "priorityclassmirror restored from its status",
                    extra={"mirror": name, "generation": record.last.generation},
                )
        record.generation = generation
        self._validate(record, body.get("spec"))
        self._deleted.pop(name, None)
        self._publish(name)
        self.queue.add(name)

    @staticmethod
    def _validate(record: MirrorRecord, raw_spec: Any) -> None:
        try:
            spec = validate(record.name, raw_spec)
        except PolicyError as exc:
            if record.last.reject(str(exc)):
                log.warning(
                    "priorityclassmirror rejected",
                    extra={
                        "mirror": record.name,
                        "error": str(exc),
                        "in_force": record.last.describe(record.generation),
                    },
                )
            return
        if record.last.accept(record.generation, raw_spec, spec):
            record.sync = None  # the spec in force changed: not reconciled yet

    def on_native_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        name = str((body.get("metadata") or {}).get("name", ""))
        if name in self.records and event_type is not None:
            self.queue.add(name)

    # lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._worker(), name="priorityclassmirror-worker"),
                asyncio.create_task(self._ticker(), name="priorityclassmirror-status"),
            ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _publish(self, name: str) -> None:
        record = self.records.get(name)
        if record is None or not self.fence.may_act():
            return
        self.status_writer.set(PLURAL, name, mirror_status(record, self.pod_priorities(name)))

    async def _ticker(self) -> None:
        """Resync at each gain of leadership (the queue resyncs periodically); refresh the pod
        counts in the status every status_seconds."""
        was_leader = False
        next_status = self.clock()
        while True:
            await asyncio.sleep(self.tick_seconds)
            leader = self.fence.may_act()
            if leader and not was_leader:
                self.queue.resync()
            if leader and self.clock() >= next_status:
                for name in list(self.records):
                    self._publish(name)
                next_status = self.clock() + self.status_seconds
            was_leader = leader

    async def _worker(self) -> None:
        while True:
            name = await self.queue.get()
            try:
                if self.fence.may_act():  # else the next leader resyncs everything
                    await self.sync(name)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not stop the other mirrors
                log.exception("priorityclassmirror reconcile crashed", extra={"mirror": name})
                self.queue.retry(name)
            finally:
                self.queue.done(name)

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
        except NotLeading:
            record.sync = self._not_leader(record)
        except _SYNC_ERRORS as exc:
            log.warning("priorityclassmirror sync failed", extra={"mirror": name, "error": str(exc)})
            record.sync = SyncResult(
                False,
                _error_reason(exc),
                f"syncing PriorityClass {name}: {exc}",
                record.sync.native_uid if record.sync else None,
            )
            self.queue.retry(name)
        else:
            if record.sync.ok:
                self.queue.forget(name)
        self._publish(name)

    @staticmethod
    def _not_leader(record: MirrorRecord) -> SyncResult:
        """Leadership lost during the sync: the next leader resyncs every mirror."""
        native_uid = record.sync.native_uid if record.sync else None
        return SyncResult(False, "NotLeader", "leadership lost during the sync", native_uid)

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
                self.queue.retry(name)
                return SyncResult(False, "Waiting", f"PriorityClass {name} is being deleted")
            if not self.fence.may_act():
                return self._not_leader(record)
            log.info(
                "priorityclassmirror sync",
                extra={"mirror": name, "action": step.action.value, "why": step.reason},
            )
            await self._act(name, step, native)
            done.append(f"{_DONE[step.action]}: {step.reason}")
        self.queue.retry(name)
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
            await native_api.patch_priority_class(self.api, name, step.patch, self.fence)
        elif step.action is Action.RECREATE:
            assert step.body is not None and native is not None
            await native_api.delete_priority_class(self.api, name, native.uid, self.fence)
            await self._create(step.body)
        elif step.action is Action.DELETE:
            assert native is not None
            await native_api.delete_priority_class(self.api, name, native.uid, self.fence)

    async def _create(self, body: dict[str, Any]) -> None:
        try:
            await native_api.create_priority_class(self.api, body, self.fence)
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
        except NotLeading:
            log.debug("priorityclassmirror cleanup left to the leader", extra={"mirror": name})
        except _SYNC_ERRORS as exc:
            log.warning("priorityclassmirror cleanup failed", extra={"mirror": name, "error": str(exc)})
            if name not in self.records:
                self._deleted[name] = uid
                self.queue.retry(name)


# ---- wiring ---------------------------------------------------------------------------------------


def pod_priority_counter(pods: Callable[[], Iterable[Pod]]) -> PodPriorities:
    """pod_priorities over the operator's pod cache (`pods` returns the cached pods)."""

    def pod_priorities(class_name: str) -> Mapping[int, int]:
        return Counter(p.priority for p in pods() if p.priority_class_name == class_name)

    return pod_priorities
