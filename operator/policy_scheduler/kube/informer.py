"""A list-then-watch cache of one resource, calling back on every change.

Semantics follow client-go's reflector: a LIST gives a snapshot and a resourceVersion (the
first from the watch cache, as resourceVersion=0; a relist paginated and consistent); a WATCH
from that version streams changes; bookmarks keep the version fresh so a reconnect rarely needs
a relist; 410 Gone (version too old) forces a relist, which is diffed against the store so
consumers see deletes, updates and adds exactly once. Callbacks are synchronous and run on the
event loop, so consumers' caches need no locking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import msgspec

from policy_scheduler.apiobjects import owners, structs
from policy_scheduler.apiobjects.decode import DecodeFailure, ListResult, decode_list, decode_watch_event
from policy_scheduler.apiobjects.owners import OwnerInfo
from policy_scheduler.kube.client import ApiError, Query, call, iter_lines, stream
from policy_scheduler.kube.first_lists import FirstLists, ListRequest, first_list_query
from policy_scheduler.kube.media_types import JSON
from policy_scheduler.kube.paths import REPLICA_SETS, REPLICATION_CONTROLLERS, SERVICES, STATEFUL_SETS
from policy_scheduler.kube.retry import Answer, Backoff, Sleep, parse_retry_after
from policy_scheduler.kube.timings import DEFAULTS, InformerTimings
from policy_scheduler.kube.versions import resource_version_number

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

# (collection path, struct type, converter) of the informers that feed a DefaultSelectorIndex.
OWNER_RESOURCES: tuple[tuple[str, type[Any], Callable[[Any], OwnerInfo]], ...] = (
    (SERVICES, owners.Service, owners.service_from_api),
    (REPLICATION_CONTROLLERS, owners.ReplicationController, owners.replication_controller_from_api),
    (REPLICA_SETS, owners.ReplicaSet, owners.replica_set_from_api),
    (STATEFUL_SETS, owners.StatefulSet, owners.stateful_set_from_api),
)


# A label no object carries: a list selecting it is empty, whatever the collection holds.
NOTHING_CARRIES = "policy-scheduler.io/catch-up-selects-nothing"
# The API server schedules a watch's bookmark two seconds before the watch's deadline, and none
# if that is already past when the watch starts: the shortest watch that gets one within its
# first second or so (see _catch_up_by_bookmark).
BOOKMARK_WATCH_TIMEOUT = 3


class HasMetadata(Protocol):
    @property
    def metadata(self) -> structs.ObjectMeta: ...


S = TypeVar("S", bound=HasMetadata)
V = TypeVar("V")


class _Gone(Exception):
    """The resourceVersion is no longer served (HTTP 410 or an ERROR event with code 410)."""


def object_key(meta: structs.ObjectMeta) -> str:
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def _noop(*_: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ListFormat(Generic[S]):
    """How an informer's lists are asked for (Accept) and decoded; watches are always JSON."""

    accept: str
    decode: Callable[[bytes], ListResult[S]]


class Informer(Generic[S, V]):
    """Keeps `store` (key → converted object) in sync with one API collection.

    `convert` turns a decoded struct into what the store holds; if it raises, the object is
    treated as absent (and logged). `on_decode_failure` may turn an object that did not even
    decode into a placeholder (pods become `malformed` pods); without it such objects are
    logged and skipped.
    """

    def __init__(
        self,
        api: ApiClient,
        path: str,
        item_type: type[S],
        convert: Callable[[S], V],
        *,
        on_add: Callable[[V], None] = _noop,
        on_update: Callable[[V, V], None] = _noop,
        on_delete: Callable[[V], None] = _noop,
        on_decode_failure: Callable[[DecodeFailure], V | None] | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timings: InformerTimings = DEFAULTS.informer,
        page_size: int | None = None,
        sleep: Sleep = asyncio.sleep,
        list_format: ListFormat[S] | None = None,
    ) -> None:
        self.api = api
        self.path = path
        self.item_type = item_type
        self.convert = convert
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.on_decode_failure = on_decode_failure
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.timings = timings
        self.page_size = page_size or timings.page_size
        self.backoff = Backoff(timings.retry)
        self.sleep = sleep
        self.list_format = list_format or ListFormat(JSON, self._decode_json_list)
        # Where the start-up may have asked for this informer's first list already.
        self.first_lists: FirstLists | None = None
        # False when the API server does not serve the collection (API discovery): the informer
        # is not started, and counts as synced and current with an empty store.
        self.served = True
        self.store: dict[str, V] = {}
        self.has_synced = asyncio.Event()
        # Set while the store follows the server: after a list, and while a watch is open.
        # Cleared when a watch ends or fails, until the next one opens (or a relist completes).
        self.current = asyncio.Event()
        self.resource_version = ""
        self.relists = 0
        self.catch_up_lists = 0  # consistent lists applied by catch_up
        self._versions: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        # While a catch-up list applied under an open watch: that watch's events up to this
        # revision are already in the store.
        self._floor = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []  # catch_up's, by revision
        # catch_up's request that the open watch be replaced by one short bookmark watch, and
        # the signal that such a watch has ended (however it ended).
        self._restart_watch = asyncio.Event()
        self._bookmark_watch_wanted = False
        self._bookmark_watch_ended = asyncio.Event()
        self.catch_up_bookmarks = 0  # catch-ups a short bookmark watch satisfied
        self._bookmark_catch_up = False  # the running catch-up asked for a bookmark watch

    # --- lifecycle -----------------------------------------------------------------------------

    def not_served(self) -> None:
        """The API server does not serve this collection (any more): nothing to list or watch, and
        what the store held is gone with the API."""
        self.served = False
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._sync([], [], "")
        self.has_synced.set()
        self.current.set()

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer {self.path}")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def run(self) -> None:
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list_and_sync()
                    need_list = False
                    self.backoff.reset()
                await self._watch_until_restarted()
            except _Gone:
                log.info("resource version expired; relisting", extra={"resource": self.path})
                need_list = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = self.backoff.next(exc.retry_after if isinstance(exc, ApiError) else None)
                log.warning(
                    "list/watch failed; retrying",
                    extra={"resource": self.path, "error": repr(exc), "retry_in": round(delay, 2)},
                )
                await self.sleep(delay)

    # --- list ----------------------------------------------------------------------------------

    def _decode_json_list(self, body: bytes) -> ListResult[S]:
        return decode_list(body, self.item_type)

    def selectors(self) -> dict[str, str | int | bool]:
        query: dict[str, str | int | bool] = {}
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        return query

    async def _list(self, at_least: int = 0) -> tuple[list[S], list[DecodeFailure], str]:
        items: list[S] = []
        failures: list[DecodeFailure] = []
        token = ""
        # As client-go's reflector: the first list is served from the API server's watch cache
        # (resourceVersion=0, which also ignores the page limit: one answer instead of one round
        # trip per 500 objects); the watch that follows brings a possibly older snapshot up to
        # date. A relist after 410 Gone must not go back in time: it reads from etcd.
        # `at_least`: a list that holds every change up to that revision, from the watch cache in
        # one answer (the server waits until its cache has got there).
        from_cache = not self.has_synced.is_set()
        accept = self.list_format.accept
        while True:
            query: dict[str, str | int | bool]
            answer: Answer | None = None
            if token:
                # the server refuses a resourceVersion with a token
                query = {"limit": self.page_size, **self.selectors(), "continue": token}
            elif at_least:
                query = {
                    "resourceVersion": str(at_least),
                    "resourceVersionMatch": "NotOlderThan",
                    **self.selectors(),
                }
            elif from_cache:
                query = first_list_query(self.page_size, self.selectors())
                if self.first_lists is not None:
                    answer = await self.first_lists.take(ListRequest.of(self.path, query, accept))
            else:
                query = {"limit": self.page_size, **self.selectors()}
            if answer is None:
                answer = await call(
                    self.api,
                    "GET",
                    self.path,
                    query=query,
                    request_timeout=self.timings.list_timeout,
                    accept=accept,
                )
            if answer.status == 410 and token:
                # The continue token outlived its snapshot: start the list over.
                items, failures, token = [], [], ""
                continue
            if answer.status != 200:
                raise ApiError.from_answer(answer)
            page = self.list_format.decode(answer.body)
            items.extend(page.items)
            failures.extend(page.failures)
            token = page.continue_token
            if not token:
                return items, failures, page.resource_version

    async def _list_and_sync(self) -> None:
        items, failures, version = await self._list()
        self._sync(items, failures, version)
        if self.has_synced.is_set():
            self.relists += 1
        self.has_synced.set()
        self.current.set()
        log.info("listed", extra={"resource": self.path, "count": len(self.store), "rv": version})

    def _sync(self, items: list[S], failures: list[DecodeFailure], version: str) -> None:
        """Make the store what a list says, telling consumers every difference."""
        seen: set[str] = set()
        for item in items:
            meta = item.metadata
            key = object_key(meta)
            seen.add(key)
            if key in self.store and self._versions.get(key) == meta.resource_version:
                continue  # unchanged since we last saw it
            self._upsert(key, meta.resource_version, self._convert(item))
        for failure in failures:
            key = object_key(failure.metadata)
            seen.add(key)
            if key in self.store and self._versions.get(key) == failure.metadata.resource_version:
                continue
            self._upsert(key, failure.metadata.resource_version, self._from_failure(failure))
        for key in [k for k in self.store if k not in seen]:
            self._remove(key, None)
        self._floor = 0
        self._advance(version)

    # --- catching up ---------------------------------------------------------------------------

    def reached(self, version: int) -> bool:
        """Whether the store holds every change up to revision `version`."""
        return not self.served or resource_version_number(self.resource_version) >= version

    def _advance(self, version: str) -> None:
        self.resource_version = version
        if self._waiters:
            number = resource_version_number(version)
            for wanted, waiter in self._waiters:
                if number >= wanted and not waiter.done():
                    waiter.set_result(None)

    async def catch_up(self, version: int) -> None:
        """Return once the store holds every change up to revision `version` (one the server has
        written, e.g. a Lease update). Events or a bookmark at or past it do; on a quiet stream
        none may come for minutes, so unless they come within the grace (timings.catch_up_grace)
        a list at or past it runs meanwhile, and whichever gets there first ends the wait (a list
        not needed any more is dropped)."""
        if self.reached(version):
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (version, waiter)
        self._waiters.append(entry)
        self._bookmark_catch_up = False
        lists_before = self.catch_up_lists
        lister = asyncio.create_task(self._list_until(version), name=f"catch-up {self.path}")
        try:
            await asyncio.wait({waiter, lister}, return_when=asyncio.FIRST_COMPLETED)
            if self._bookmark_catch_up and self.catch_up_lists == lists_before and self.reached(version):
                self.catch_up_bookmarks += 1
                log.info(
                    "caught up by a bookmark", extra={"resource": self.path, "rv": self.resource_version}
                )
        finally:
            self._waiters.remove(entry)
            waiter.cancel()
            lister.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lister

    async def _list_until(self, version: int) -> None:
        await self.sleep(self.timings.catch_up_grace)
        await self._until_following()
        if (
            not self.reached(version)
            and len(self.store) >= self.timings.catch_up_list_below
            and self._task is not None
            and not self._task.done()
        ):
            try:
                await self._catch_up_by_bookmark(version)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info(
                    "catch-up by bookmark failed; listing", extra={"resource": self.path, "error": repr(exc)}
                )
        backoff = Backoff(self.timings.retry)
        while not self.reached(version):
            await self._until_following()
            if self.reached(version):
                return
            try:
                listed = await self.list_at_least(version)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = backoff.next(exc.retry_after if isinstance(exc, ApiError) else None)
                log.warning(
                    "catch-up list failed; retrying",
                    extra={"resource": self.path, "error": repr(exc), "retry_in": round(delay, 2)},
                )
                await self.sleep(delay)
                continue
            if not self.reached(version):
                # A list older than the revision asked for (a server not honouring NotOlderThan):
                # try again, but never in a hot loop.
                delay = backoff.next()
                log.warning(
                    "catch-up list older than asked; retrying",
                    extra={"resource": self.path, "rv": listed, "wanted": version, "retry_in": delay},
                )
                await self.sleep(delay)

    async def _until_following(self) -> None:
        """While this informer's own loop is reconnecting (the server is down or unreachable),
        wait for it: a catch-up adds no second retry loop against the same collection, and the
        reconnected watch or relist may bring the store there by itself."""
        if self._task is not None and not self._task.done():
            await self.current.wait()

    async def _catch_up_by_bookmark(self, version: int) -> None:
        """Bring the store to revision `version` without listing the collection: make the API
        server's watch cache fresh at `version`, then reopen the watch from where the store is
        for one short stream whose bookmark carries the cache's revision.

        Why this is complete (k8s.io/apiserver pkg/storage/cacher): a list with
        resourceVersionMatch=NotOlderThan waits until the watch cache has reached `version`
        (GetList, waitUntilFreshAndBlock, which asks etcd for progress on a quiet resource), and a
        label selector nothing carries makes its answer empty. A watch from the store's own
        version gets every cached event after it (Cacher.Watch, getAllEventsSinceLocked) before
        anything newer (cacheWatcher.processInterval). Bookmarks are dispatched in line with events
        (Cacher.dispatchEvents) carrying the last revision dispatched, so one proves every event up
        to it has been sent. cacheWatcher.nextBookmarkTime schedules one two seconds before the
        watch's deadline (none if that has passed), in one-second buckets that the dispatcher's
        bookmark tick pops, so a watch of BOOKMARK_WATCH_TIMEOUT seconds gets one about a second
        after it opens instead of a minute later. A stream that merely closes at its timeout
        proves nothing: the handler may stop before the watcher has sent everything it holds.
        """
        await self._fresh_at(version)
        if self.reached(version):
            return
        self._bookmark_watch_ended.clear()
        self._bookmark_catch_up = True
        self._bookmark_watch_wanted = True
        self._restart_watch.set()
        reached = asyncio.create_task(self._until_reached(version))
        ended = asyncio.create_task(self._bookmark_watch_ended.wait())
        try:
            await asyncio.wait({reached, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            reached.cancel()
            ended.cancel()

    async def _until_reached(self, version: int) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (version, waiter)
        self._waiters.append(entry)
        try:
            if not self.reached(version):
                await waiter
        finally:
            self._waiters.remove(entry)

    async def _fresh_at(self, version: int) -> str:
        """Wait until the API server's watch cache of this collection holds revision `version`,
        by an empty list at that revision; its resourceVersion."""
        label_selector = ",".join(filter(None, [self.label_selector, NOTHING_CARRIES]))
        query: Query = {
            "resourceVersion": str(version),
            "resourceVersionMatch": "NotOlderThan",
            **self.selectors(),
            "labelSelector": label_selector,
        }
        answer = await call(
            self.api, "GET", self.path, query=query, request_timeout=self.timings.list_timeout
        )
        if answer.status != 200:
            raise ApiError.from_answer(answer)
        return self._decode_json_list(answer.body).resource_version

    async def list_at_least(self, version: int) -> str:
        """List the collection as of revision `version` or later and apply the list to the store,
        while the watch goes on, unless the watch has brought the store past it meanwhile; the
        list's resourceVersion. What catch_up does when no event gets there first."""
        items, failures, listed = await self._list(version)
        if self.reached(resource_version_number(listed)):
            return listed  # the watch got there first: the store is newer than this list
        self._sync(items, failures, listed)
        # The open watch still delivers what this list already holds: skip those events.
        self._floor = resource_version_number(listed)
        self.catch_up_lists += 1
        log.info("caught up by a list", extra={"resource": self.path, "count": len(self.store), "rv": listed})
        return listed

    # --- watch ---------------------------------------------------------------------------------

    async def _watch_until_restarted(self) -> None:
        """One watch, cut short if catch_up asks for a bookmark watch meanwhile."""
        bookmark_watch, self._bookmark_watch_wanted = self._bookmark_watch_wanted, False
        self._restart_watch.clear()
        watching = asyncio.create_task(self._watch(bookmark_watch=bookmark_watch), name=f"watch {self.path}")
        restart = asyncio.create_task(self._restart_watch.wait())
        try:
            done, _ = await asyncio.wait({watching, restart}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            restart.cancel()
            if not watching.done():
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watching
            if bookmark_watch:
                self._bookmark_watch_ended.set()
        if watching in done:
            watching.result()

    async def _watch(self, *, bookmark_watch: bool = False) -> None:
        # Like the reflector, spread watch lifetimes over [t, 2t) so reconnects don't align.
        timeout_seconds = int(self.timings.watch_timeout * (1.0 + random.random()))
        if bookmark_watch:
            timeout_seconds = BOOKMARK_WATCH_TIMEOUT
        query: Query = {
            "watch": True,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout_seconds,
            **self.selectors(),
        }
        started = time.monotonic()
        received = False
        async with stream(
            self.api, self.path, query=query, read_timeout=timeout_seconds + self.timings.watch_read_slack
        ) as resp:
            if resp.status == 410:
                raise _Gone
            if resp.status != 200:
                retry_after = parse_retry_after(resp.headers.get("Retry-After"), time.time())
                raise ApiError.from_response(resp.status, await resp.read(), retry_after)
            self._floor = 0  # a watch from our version never sends anything older
            self.current.set()
            try:
                async for line in iter_lines(resp):
                    self._handle_line(line)
                    if not received:
                        received = True
                        self.backoff.reset()
            finally:
                self.current.clear()
        if bookmark_watch:
            return
        if not received and time.monotonic() - started < self.timings.min_healthy_watch:
            raise ConnectionError("watch closed immediately")

    def _handle_line(self, line: bytes) -> None:
        try:
            event = decode_watch_event(line, self.item_type)
        except msgspec.DecodeError as exc:
            raise ValueError(f"undecodable watch line: {line[:200]!r}") from exc
        if isinstance(event, structs.Status):
            if event.code == 410:
                raise _Gone
            raise ApiError(event.code, event.reason, event.message)
        if isinstance(event, DecodeFailure):
            meta, kind = event.metadata, event.event_type
        else:
            meta, kind = event.object.metadata, event.type
        if self._floor and resource_version_number(meta.resource_version) <= self._floor:
            return  # already in the store by a catch-up list
        if kind == "BOOKMARK":
            if meta.resource_version:
                self._advance(meta.resource_version)
            return
        key = object_key(meta)
        if kind in ("ADDED", "MODIFIED"):
            self._upsert(key, meta.resource_version, self._value(event))
        elif kind == "DELETED":
            # Consumers get the object they were told about; the event's copy only if there is none.
            self._remove(key, None if key in self.store else self._value(event))
        else:
            log.warning("unknown watch event type", extra={"resource": self.path, "type": kind})
        if meta.resource_version:
            self._advance(meta.resource_version)

    # --- store and callbacks ---------------------------------------------------------------------

    def _value(self, event: structs.WatchEvent[S] | DecodeFailure) -> V | None:
        if isinstance(event, DecodeFailure):
            return self._from_failure(event)
        return self._convert(event.object)

    def _convert(self, item: S) -> V | None:
        try:
            return self.convert(item)
        except Exception as exc:
            log.warning(
                "cannot convert object; ignoring it",
                extra={"resource": self.path, "object": object_key(item.metadata), "error": str(exc)},
            )
            return None

    def _from_failure(self, failure: DecodeFailure) -> V | None:
        if self.on_decode_failure is not None:
            value = self.on_decode_failure(failure)
            if value is not None:
                return value
        log.warning(
            "cannot decode object; ignoring it",
            extra={
                "resource": self.path,
                "object": object_key(failure.metadata),
                "error": failure.describe(self.path),
            },
        )
        return None

    def _upsert(self, key: str, version: str, value: V | None) -> None:
        if value is None:
            # Now unreadable: stop pretending the old version is current.
            self._remove(key, None)
            return
        old = self.store.get(key)
        self.store[key] = value
        self._versions[key] = version
        if old is None:
            self._call(self.on_add, value)
        else:
            self._call(self.on_update, old, value)

    def _remove(self, key: str, fallback: V | None) -> None:
        old = self.store.pop(key, None)
        self._versions.pop(key, None)
        gone = old if old is not None else fallback
        if gone is not None:
            self._call(self.on_delete, gone)

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        # A failing consumer must not stall the stream for everyone else.
        try:
            callback(*args)
        except Exception:
            log.exception("informer callback failed", extra={"resource": self.path})
