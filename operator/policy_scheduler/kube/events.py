"""Recording events.k8s.io/v1 Events without ever making the scheduling loop wait.

`EventRecorder.event()` is synchronous: it decides (aggregation, the per-object cap) in memory
and queues at most one write. Background writers perform the writes, each waiting for a token
of the global rate as client-go's rate limiter makes kube-scheduler's event writes wait: events
are delayed by the rate, not dropped. As in client-go's events broadcaster, an event repeated
within the series window is not written again: the first repeat PATCHes a `series` onto the
stored event, later repeats only bump a counter that a periodic flush writes, so a pod failing
to schedule every second costs a handful of writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from policy_scheduler.kube.client import CONNECTION_ERRORS, MERGE_PATCH, ApiError, request
from policy_scheduler.kube.event_objects import (
    BINDING,
    FAILED_SCHEDULING,
    NORMAL,
    PREEMPTED,
    SCHEDULED,
    WARNING,
    ObjectRef,
    event_body,
    micro_time,
    reporting_instance,
    scheduled_note,
    truncate_note,
)
from policy_scheduler.kube.ratelimit import TokenBucket
from policy_scheduler.kube.retry import Sleep
from policy_scheduler.kube.timings import DEFAULTS, EventTimings
from policy_scheduler.scheduler import model

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

CONTROLLER = "policy-scheduler"

PodLike = model.Pod | ObjectRef


def _ref(pod: PodLike) -> ObjectRef:
    return pod if isinstance(pod, ObjectRef) else ObjectRef.for_pod(pod)


def _scheduler_of(pod: PodLike) -> str | None:
    """The profile that reports about `pod`, as kube-scheduler's per-profile event recorders."""
    return pod.scheduler_name if isinstance(pod, model.Pod) and pod.scheduler_name else None


# (regarding, related, type, reason, action, note): events equal in all of these form a series.
EventKey = tuple[str, str, str, str, str, str]


def event_key(
    regarding: ObjectRef, related: ObjectRef | None, type_: str, reason: str, action: str, note: str
) -> EventKey:
    return (regarding.identity, related.identity if related else "", type_, reason, action, note)


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    body: dict[str, Any]  # as created, to recreate the event if it expired meanwhile
    count: int
    last_observed: float
    dirty: bool = False


@dataclass(frozen=True, slots=True)
class _Write:
    kind: str  # "create" | "patch"
    key: EventKey


def series_patch(count: int, last_observed: float) -> dict[str, Any]:
    return {"series": {"count": count, "lastObservedTime": micro_time(last_observed)}}


class EventRecorder:
    """Aggregating, rate-limited, fire-and-forget event writer.

    Limits: `qps`/`burst` across all writes (a write waits for its token); `per_object_qps`/
    `per_object_burst` on new events about one object (client-go's spam filter: 25, then one per
    5 minutes). Events beyond the per-object cap or a full queue are dropped and counted in
    `dropped`.
    """

    def __init__(
        self,
        api: ApiClient,
        *,
        instance: str,
        controller: str = CONTROLLER,
        timings: EventTimings = DEFAULTS.events,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.api = api
        self.instance = instance  # the replica's identity (its Lease holderIdentity)
        self.controller = controller
        self.timings = timings
        self.series_window = timings.series_window
        self.clock = clock
        self._sleep = sleep  # waits for the global rate, on `clock`'s time
        self.dropped = 0
        self.written = 0
        self.failed = 0
        self._global = TokenBucket(timings.qps, timings.burst, clock)
        self._per_object_rate = (timings.per_object_qps, timings.per_object_burst)
        self._per_object: dict[str, TokenBucket] = {}
        self._series: dict[EventKey, _Series] = {}
        self._queue: asyncio.Queue[_Write] = asyncio.Queue(maxsize=timings.queue_size)
        self._writing: set[EventKey] = set()  # series with a write in flight
        self._last_name_ns = 0
        self._tasks: list[asyncio.Task[None]] = []

    # --- recording (synchronous, never blocks) ----------------------------------------------------

    def event(
        self,
        regarding: ObjectRef,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: ObjectRef | None = None,
        controller: str | None = None,
    ) -> None:
        """`controller`: the reporting profile (its schedulerName), as kube-scheduler reports;
        None reports as the operator itself."""
        now = self.clock()
        note = truncate_note(note)
        key = event_key(regarding, related, type_, reason, action, note)
        series = self._series.get(key)
        if series is not None and now - series.last_observed <= self.series_window:
            series.count += 1
            series.last_observed = now
            if series.count == 2:
                self._enqueue(_Write("patch", key))  # start the series at once
            else:
                series.dirty = True  # the periodic flush writes the count
            return
        if not self._object_bucket(regarding.identity).allow(now):
            self.dropped += 1
            return
        name = self._event_name(regarding.name)
        body = event_body(
            name=name,
            regarding=regarding,
            related=related,
            type_=type_,
            reason=reason,
            action=action,
            note=note,
            now=now,
            controller=controller or self.controller,
            instance=reporting_instance(controller or self.controller, self.instance),
        )
        self._series[key] = _Series(name, body["metadata"]["namespace"], body, 1, now)
        self._enqueue(_Write("create", key))

    def scheduled(self, pod: PodLike, node_name: str) -> None:
        ref = _ref(pod)
        note = scheduled_note(ref.namespace, ref.name, node_name)
        self.event(ref, NORMAL, SCHEDULED, BINDING, note, controller=_scheduler_of(pod))

    def failed_scheduling(self, pod: PodLike, message: str) -> None:
        self.event(
            _ref(pod), WARNING, FAILED_SCHEDULING, "Scheduling", message, controller=_scheduler_of(pod)
        )

    def preempted(self, victim: PodLike, preemptor: PodLike, node_name: str) -> None:
        by = _ref(preemptor)
        note = f"Preempted by pod {by.uid} on node {node_name}"
        controller = _scheduler_of(preemptor)
        self.event(_ref(victim), NORMAL, PREEMPTED, "Preempting", note, related=by, controller=controller)

    def _object_bucket(self, identity: str) -> TokenBucket:
        bucket = self._per_object.get(identity)
        if bucket is None:
            rate, burst = self._per_object_rate
            bucket = self._per_object[identity] = TokenBucket(rate, burst, self.clock)
        return bucket

    def _event_name(self, object_name: str) -> str:
        # client-go names events "<object>.<unix nanos in hex>"; keep the nanos strictly
        # increasing so two events in one clock tick cannot collide.
        nanos = max(time.time_ns(), self._last_name_ns + 1)
        self._last_name_ns = nanos
        return f"{object_name}.{nanos:x}"

    def _enqueue(self, write: _Write) -> None:
        try:
            self._queue.put_nowait(write)
        except asyncio.QueueFull:
            self.dropped += 1
            if write.kind == "create":
                self._series.pop(write.key, None)

    # --- background writing ----------------------------------------------------------------------

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                *(
                    asyncio.create_task(self._writer(), name=f"events writer {i}")
                    for i in range(self.timings.writers)
                ),
                asyncio.create_task(self._flusher(), name="events flusher"),
            ]

    async def stop(self) -> None:
        """Write pending series counts and queued events (bounded by drain_timeout), then stop."""
        if self._tasks:
            self.flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), self.timings.drain_timeout)
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def flush(self) -> None:
        """Queue patches for series with unwritten counts; forget series past their window."""
        now = self.clock()
        for key, series in list(self._series.items()):
            if series.dirty:
                series.dirty = False
                self._enqueue(_Write("patch", key))
            elif now - series.last_observed > self.series_window:
                del self._series[key]
        for identity, bucket in list(self._per_object.items()):
            if bucket.full(now):
                del self._per_object[identity]

    async def drain(self) -> None:
        """Wait until every queued write has been attempted (for tests and shutdown)."""
        await self._queue.join()

    async def _flusher(self) -> None:
        while True:
            await asyncio.sleep(self.timings.flush_interval)
            self.flush()

    async def _writer(self) -> None:
        while True:
            write = await self._queue.get()
            try:
                await self._write_in_turn(write)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.failed += 1
                log.warning("event write failed", extra={"event_kind": write.kind, "error": repr(exc)})
            finally:
                self._queue.task_done()

    async def _write_in_turn(self, write: _Write) -> None:
        """One write per series at a time, so that a patch never overtakes its create: a write
        for a series that is being written is left to the next flush."""
        series = self._series.get(write.key)
        if series is None:
            return  # forgotten meanwhile (queue overflow)
        if write.key in self._writing:
            series.dirty = True
            return
        self._writing.add(write.key)
        try:
            await self._rate_token()
            await self._write(write)
        finally:
            self._writing.discard(write.key)

    async def _rate_token(self) -> None:
        """Wait for a token of the global rate, as client-go's rate limiter Wait does."""
        while (delay := self._global.delay(self.clock())) > 0:
            await self._sleep(delay)
        self._global.take()

    async def _write(self, write: _Write) -> None:
        series = self._series.get(write.key)
        if series is None:
            return  # forgotten meanwhile (queue overflow)
        base = f"/apis/events.k8s.io/v1/namespaces/{quote(series.namespace, safe='')}/events"
        if write.kind == "create":
            await self._create(base, series.body)
            return
        try:
            status, data = await request(
                self.api,
                "PATCH",
                f"{base}/{quote(series.name, safe='')}",
                body=series_patch(series.count, series.last_observed),
                content_type=MERGE_PATCH,
            )
        except CONNECTION_ERRORS:
            series.dirty = True  # try again at the next flush
            raise
        if status == 404:
            # The event expired (events have a TTL) or its creation failed: start a new one
            # that carries the series so far.
            series.name = self._event_name(series.body["regarding"]["name"])
            series.body = {**series.body, "metadata": {**series.body["metadata"], "name": series.name}}
            await self._create(base, {**series.body, **series_patch(series.count, series.last_observed)})
            return
        if not 200 <= status < 300:
            raise ApiError.from_response(status, data)
        self.written += 1

    async def _create(self, base: str, body: dict[str, Any]) -> None:
        status, data = await request(self.api, "POST", base, body=body)
        if status == 409:
            return  # already exists: a retried create that had in fact succeeded
        if not 200 <= status < 300:
            raise ApiError.from_response(status, data)
        self.written += 1
