"""Informer bookkeeping: watch lines and relist diffs applied to the store, without a server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from policy_scheduler.apiobjects import convert, convert_cluster, structs
from policy_scheduler.apiobjects.decode import DecodeFailure
from policy_scheduler.apiobjects.dra import ResourceSlice, slice_from_api
from policy_scheduler.kube import client
from policy_scheduler.kube import informer as informer_module
from policy_scheduler.kube.informer import Informer, _Gone, object_key
from policy_scheduler.kube.paths import RESOURCE_SLICES
from policy_scheduler.kube.retry import Answer
from policy_scheduler.scheduler import model
from tests.aio import settle
from tests.no_api import NO_API


def pod(name: str, rv: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv},
        "spec": {"containers": [{"name": "c"}], **spec},
    }


def line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def add(self, p: model.Pod) -> None:
        self.calls.append(("add", f"{p.name}@{p.resource_version}"))

    def update(self, old: model.Pod, new: model.Pod) -> None:
        self.calls.append(("update", f"{old.name}@{old.resource_version}->{new.resource_version}"))

    def delete(self, p: model.Pod) -> None:
        self.calls.append(("delete", f"{p.name}@{p.resource_version}"))


class ListedInformer(Informer[structs.Pod, model.Pod]):
    """An informer whose LIST answer is set by the test."""

    listing: tuple[list[structs.Pod], list[DecodeFailure], str] = ([], [], "")

    async def _list(self, at_least: int = 0) -> tuple[list[structs.Pod], list[DecodeFailure], str]:
        return self.listing


def make(kind: type[ListedInformer] = ListedInformer) -> tuple[ListedInformer, Recorder]:
    rec = Recorder()
    inf = kind(
        NO_API,
        "/api/v1/pods",
        structs.Pod,
        convert.pod_from_api_or_malformed,
        on_add=rec.add,
        on_update=rec.update,
        on_delete=rec.delete,
        on_decode_failure=convert.pod_from_decode_failure,
    )
    return inf, rec


def structs_of(*bodies: dict[str, Any]) -> list[structs.Pod]:
    import msgspec

    return [msgspec.convert(b, structs.Pod) for b in bodies]


def test_object_key() -> None:
    assert object_key(structs.ObjectMeta(name="a", namespace="ns")) == "ns/a"
    assert object_key(structs.ObjectMeta(name="n1")) == "n1"


def test_watch_events_apply_to_store() -> None:
    inf, rec = make()
    inf._handle_line(line("ADDED", pod("a", "1")))
    inf._handle_line(line("MODIFIED", pod("a", "2")))
    inf._handle_line(line("MODIFIED", pod("b", "3")))  # unseen: an add
    inf._handle_line(line("DELETED", pod("a", "4")))
    inf._handle_line(line("DELETED", pod("zzz", "5")))  # never seen: still reported
    assert rec.calls == [
        ("add", "a@1"),
        ("update", "a@1->2"),
        ("add", "b@3"),
        ("delete", "a@2"),
        ("delete", "zzz@5"),
    ]
    assert set(inf.store) == {"ns/b"}
    assert inf.resource_version == "5"


def test_bookmark_only_moves_version() -> None:
    inf, rec = make()
    inf._handle_line(b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"77"}}}')
    assert inf.resource_version == "77"
    assert rec.calls == []
    assert inf.store == {}


@pytest.mark.parametrize(
    "payload",
    [
        b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}',
        b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Gone"}}',
    ],
)
def test_gone_error_event_requests_relist(payload: bytes) -> None:
    inf, _ = make()
    with pytest.raises(_Gone):
        inf._handle_line(payload)


def test_other_error_event_raises_api_error() -> None:
    inf, _ = make()
    with pytest.raises(client.ApiError) as info:
        inf._handle_line(b'{"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError"}}')
    assert info.value.status == 500


def test_undecodable_pod_becomes_malformed_pod() -> None:
    inf, rec = make()
    inf._handle_line(line("ADDED", pod("bad", "1", priority="high")))
    assert rec.calls == [("add", "bad@1")]
    stored = inf.store["ns/bad"]
    assert stored.malformed is not None
    assert "spec.priority" in stored.malformed


def test_invalid_quantity_pod_is_kept_as_malformed() -> None:
    inf, _ = make()
    bad = pod("q", "1", containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}])
    inf._handle_line(line("ADDED", bad))
    assert (
        inf.store["ns/q"].malformed
        == 'Pod ns/q: spec.containers[0].resources.requests.cpu: invalid quantity "lots"'
    )


def test_converter_failure_drops_object() -> None:
    calls: list[str] = []

    def strict(p: structs.Node) -> model.Node:
        return convert_cluster.node_from_api(p)

    inf: Informer[structs.Node, model.Node] = Informer(
        NO_API,
        "/api/v1/nodes",
        structs.Node,
        strict,
        on_add=lambda n: calls.append(f"add {n.name}"),
        on_delete=lambda n: calls.append(f"delete {n.name}"),
    )
    good = {"metadata": {"name": "n1", "resourceVersion": "1"}, "status": {"allocatable": {"cpu": "1"}}}
    bad = {"metadata": {"name": "n1", "resourceVersion": "2"}, "status": {"allocatable": {"cpu": "x"}}}
    inf._handle_line(line("ADDED", good))
    inf._handle_line(line("MODIFIED", bad))
    assert calls == ["add n1", "delete n1"]
    assert inf.store == {}


def test_callback_errors_do_not_break_the_stream() -> None:
    def boom(_: model.Pod) -> None:
        raise RuntimeError("consumer bug")

    inf = Informer(NO_API, "/api/v1/pods", structs.Pod, convert.pod_from_api_or_malformed, on_add=boom)
    inf._handle_line(line("ADDED", pod("a", "1")))
    assert "ns/a" in inf.store


async def test_relist_diffs_against_store() -> None:
    inf, rec = make()
    inf.listing = (structs_of(pod("a", "1"), pod("b", "1"), pod("c", "1")), [], "10")
    await inf._list_and_sync()
    assert inf.has_synced.is_set()
    assert inf.resource_version == "10"
    assert inf.relists == 0
    rec.calls.clear()
    # a unchanged, b changed, c vanished, d new.
    inf.listing = (structs_of(pod("a", "1"), pod("b", "2"), pod("d", "1")), [], "20")
    await inf._list_and_sync()
    assert sorted(rec.calls) == [("add", "d@1"), ("delete", "c@1"), ("update", "b@1->2")]
    assert set(inf.store) == {"ns/a", "ns/b", "ns/d"}
    assert inf.resource_version == "20"
    assert inf.relists == 1


async def test_relist_keeps_undecodable_items() -> None:
    inf, rec = make()
    failure = DecodeFailure(
        structs.ObjectMeta(name="x", namespace="ns", resource_version="3"), "boom - at `$.spec`"
    )
    inf.listing = ([], [failure], "5")
    await inf._list_and_sync()
    assert rec.calls == [("add", "x@3")]
    assert inf.store["ns/x"].malformed == "Pod ns/x: spec: boom"


class FakeContent:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class FakeResponse:
    def __init__(self, chunks: list[bytes]) -> None:
        self.content = FakeContent(chunks)


async def test_iter_lines_reassembles_split_and_long_lines() -> None:
    long = b"x" * (3 << 20)  # longer than aiohttp's line buffer
    chunks = [b'{"a":', b"1}\n{", b'"b":2}\n\n', long[:1000], long[1000:], b"\n", b"tail"]
    lines = [ln async for ln in client.iter_lines(FakeResponse(chunks))]  # type: ignore[arg-type]
    assert lines == [b'{"a":1}', b'{"b":2}', long, b"tail"]


async def test_list_failure_waits_at_least_the_servers_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [
        Answer(429, b'{"kind":"Status","message":"slow down"}', 12.0),
        Answer(500, b"oops"),
        Answer(200, b'{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]}'),
    ]
    slept: list[float] = []

    async def fake_call(*_: Any, **__: Any) -> Answer:
        return answers.pop(0)

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def stop_watching(**_: Any) -> None:
        raise asyncio.CancelledError

    monkeypatch.setattr(informer_module, "call", fake_call)
    inf = Informer(NO_API, "/api/v1/pods", structs.Pod, convert.pod_from_api_or_malformed, sleep=fake_sleep)
    monkeypatch.setattr(inf, "_watch", stop_watching)
    with pytest.raises(asyncio.CancelledError):
        await inf.run()
    assert len(slept) == 2
    assert slept[0] == 12.0  # the jittered backoff (< 1.6 s) is shorter than Retry-After
    assert 1.6 <= slept[1] < 3.2  # the reflector's second delay, in [d, 2d) with d = 1.6 s
    assert inf.has_synced.is_set()
    assert inf.resource_version == "5"


async def test_first_list_reads_the_watch_cache_and_relists_read_etcd(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """resourceVersion=0 on the first page of the first list only (as the reflector): later pages
    carry just the continue token, and a relist after 410 Gone is a consistent read."""
    pages = {
        "": b'{"kind":"PodList","metadata":{"resourceVersion":"5","continue":"t1"},"items":[]}',
        "t1": b'{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]}',
    }
    queries: list[dict[str, Any]] = []

    async def fake_call(*_: Any, query: dict[str, Any], **__: Any) -> Answer:
        queries.append(query)
        return Answer(200, pages[str(query.get("continue", ""))])

    monkeypatch.setattr(informer_module, "call", fake_call)
    inf = Informer(NO_API, "/api/v1/pods", structs.Pod, convert.pod_from_api_or_malformed)
    await inf._list_and_sync()
    await inf._list_and_sync()  # the relist after 410 Gone
    assert [(q.get("resourceVersion"), q.get("continue")) for q in queries] == [
        ("0", None),
        (None, "t1"),
        (None, None),
        (None, "t1"),
    ]
    assert all(q["limit"] == 500 for q in queries)


class ControlledWatch:
    """A watch response whose opening and chunks the test releases one by one."""

    status = 200
    headers: dict[str, str] = {}

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()

    @property
    def content(self) -> ControlledWatch:
        return self

    async def iter_any(self) -> AsyncIterator[bytes]:
        while (chunk := await self.chunks.get()) is not None:
            yield chunk


async def _settle(condition: Any) -> None:
    for _ in range(100):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def test_the_store_is_current_after_a_list_and_while_a_watch_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watches = [ControlledWatch(), ControlledWatch()]
    opened: list[ControlledWatch] = []
    versions: list[str] = []

    async def fake_call(*_: Any, **__: Any) -> Answer:
        return Answer(200, b'{"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[]}')

    @contextlib.asynccontextmanager
    async def fake_stream(*_: Any, query: dict[str, Any], **__: Any) -> AsyncIterator[ControlledWatch]:
        versions.append(query["resourceVersion"])
        watch = watches[len(opened)]
        await watch.opened.wait()
        opened.append(watch)
        yield watch

    async def no_sleep(_: float) -> None:
        return None

    monkeypatch.setattr(informer_module, "call", fake_call)
    monkeypatch.setattr(informer_module, "stream", fake_stream)
    inf = Informer(NO_API, "/api/v1/pods", structs.Pod, convert.pod_from_api_or_malformed, sleep=no_sleep)
    task = asyncio.create_task(inf.run())
    try:
        await _settle(inf.has_synced.is_set)
        assert inf.current.is_set()  # just listed, the watch not open yet
        watches[0].opened.set()
        await _settle(lambda: opened == watches[:1])
        assert inf.current.is_set()
        pod = {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "6"}, "spec": {}}
        watches[0].chunks.put_nowait(json.dumps({"type": "ADDED", "object": pod}).encode() + b"\n")
        await _settle(lambda: "ns/p" in inf.store)
        watches[0].chunks.put_nowait(None)  # the server ends the watch
        await _settle(lambda: not inf.current.is_set())
        await asyncio.sleep(0)
        assert not inf.current.is_set()  # the next watch has not opened: events may be missed
        watches[1].opened.set()
        await _settle(inf.current.is_set)
        assert versions == ["5", "6"]  # it resumed where the first watch stopped, no relist
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


# ---- catching up to a resourceVersion (a new leader's first cycle) ----------------------------------


class GatedInformer(ListedInformer):
    """Its list waits for the test's go, and says so when it starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.go = asyncio.Event()
        self.lists_started = 0
        self.asked: list[int] = []

    async def _list(self, at_least: int = 0) -> tuple[list[structs.Pod], list[DecodeFailure], str]:
        self.lists_started += 1
        self.asked.append(at_least)
        await self.go.wait()
        return self.listing


def gated() -> tuple[GatedInformer, Recorder]:
    inf, rec = make(GatedInformer)
    assert isinstance(inf, GatedInformer)
    inf.timings = dataclasses.replace(inf.timings, catch_up_grace=0.0)  # list at once
    return inf, rec


async def test_catch_up_returns_at_once_when_the_store_is_there() -> None:
    inf, _ = gated()
    inf._handle_line(line("ADDED", pod("a", "50")))
    await asyncio.wait_for(inf.catch_up(50), 1)
    assert inf.lists_started == 0


async def test_catch_up_by_events_drops_the_list_it_started() -> None:
    inf, rec = gated()
    inf._handle_line(line("ADDED", pod("a", "10")))
    waiting = asyncio.create_task(inf.catch_up(40))
    await settle()
    assert inf.lists_started == 1
    assert not waiting.done()
    inf._handle_line(b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"41"}}}')
    await asyncio.wait_for(waiting, 1)
    inf.go.set()  # the list would answer now: it is gone, nothing changes
    await asyncio.sleep(0)
    assert inf.catch_up_lists == 0
    assert rec.calls == [("add", "a@10")]


async def test_catch_up_on_a_quiet_stream_by_a_consistent_list() -> None:
    inf, rec = gated()
    inf._handle_line(line("ADDED", pod("a", "1")))
    inf._handle_line(line("ADDED", pod("b", "2")))
    rec.calls.clear()
    inf.listing = (structs_of(pod("a", "5"), pod("c", "6")), [], "9")
    waiting = asyncio.create_task(inf.catch_up(8))
    await settle()
    inf.go.set()
    await asyncio.wait_for(waiting, 1)
    assert sorted(rec.calls) == [("add", "c@6"), ("delete", "b@2"), ("update", "a@1->5")]
    assert inf.asked == [8]  # a list that holds every change up to the version asked for
    assert inf.resource_version == "9"
    assert inf.catch_up_lists == 1
    # The watch that stayed open still delivers what the list already had: skipped.
    rec.calls.clear()
    inf._handle_line(line("MODIFIED", pod("a", "5")))
    inf._handle_line(line("DELETED", pod("b", "7")))
    inf._handle_line(line("ADDED", pod("d", "10")))
    assert rec.calls == [("add", "d@10")]
    assert inf.resource_version == "10"


async def test_a_list_older_than_what_the_watch_brought_meanwhile_is_dropped() -> None:
    inf, _ = gated()
    inf._handle_line(line("ADDED", pod("a", "1")))
    inf.listing = (structs_of(pod("a", "1")), [], "5")  # taken before "b" was added
    waiting = asyncio.create_task(inf.catch_up(4))
    await settle()
    inf._handle_line(line("ADDED", pod("b", "6")))  # reaches 4 first
    inf.go.set()
    await asyncio.wait_for(waiting, 1)
    await asyncio.sleep(0)
    assert "ns/b" in inf.store
    assert inf.catch_up_lists == 0
    assert inf.resource_version == "6"


async def test_a_catch_up_does_not_list_while_the_informer_is_reconnecting() -> None:
    """During an outage the informer's own loop retries with its backoff; a catch-up waits for it
    instead of retrying a list of the same collection in a second loop."""
    inf, _ = gated()
    inf._handle_line(line("ADDED", pod("a", "10")))

    async def reconnect_for_ever() -> None:  # the informer's own loop, its watch down
        await asyncio.Event().wait()

    reconnecting = asyncio.create_task(reconnect_for_ever())
    inf._task = reconnecting
    inf.current.clear()
    inf.listing = (structs_of(pod("a", "10")), [], "45")
    waiting = asyncio.create_task(inf.catch_up(40))
    await settle()
    assert inf.lists_started == 0
    inf.current.set()  # the watch is open again
    await settle()
    assert inf.lists_started == 1
    inf.go.set()
    await asyncio.wait_for(waiting, 1)
    assert inf.catch_up_lists == 1
    inf._task = None
    reconnecting.cancel()


async def test_a_catch_up_lists_only_after_its_grace() -> None:
    """On a busy cluster events get there within the grace: no list costs the server anything."""
    inf, _ = make(GatedInformer)
    assert isinstance(inf, GatedInformer)
    slept: list[float] = []
    gate = asyncio.Event()

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await gate.wait()

    inf.sleep = sleep
    inf._handle_line(line("ADDED", pod("a", "10")))
    waiting = asyncio.create_task(inf.catch_up(40))
    await settle()
    assert slept == [inf.timings.catch_up_grace]
    assert inf.lists_started == 0
    inf._handle_line(line("MODIFIED", pod("a", "45")))
    await asyncio.wait_for(waiting, 1)
    assert inf.lists_started == 0


def test_an_undecodable_object_is_logged_by_its_name_and_field(caplog: pytest.LogCaptureFixture) -> None:
    slices: Informer[ResourceSlice, Any] = Informer(NO_API, RESOURCE_SLICES, ResourceSlice, slice_from_api)
    bad = {
        "metadata": {"name": "gpu-node-1", "resourceVersion": "3"},
        "spec": {
            "driver": "gpu.example.com",
            "devices": [{"name": "gpu-0", "consumesCounters": [{"counterSet": 1}]}],
        },
    }
    with caplog.at_level("WARNING", logger=informer_module.__name__):
        slices._handle_line(line("ADDED", bad))
    assert slices.store == {}
    (record,) = caplog.records
    assert record.error.startswith(  # type: ignore[attr-defined]
        "resourceslices/gpu-node-1: spec.devices[0].consumesCounters[0].counterSet: Expected `str`, got `int`"
    )


class BookmarkWatchInformer(GatedInformer):
    """Its watch is played by the test: each one records its kind and waits to be ended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watches: list[bool] = []  # bookmark_watch of each watch opened
        self.freshness_asked: list[int] = []
        self.end_watch = asyncio.Event()

    async def _fresh_at(self, version: int) -> str:
        self.freshness_asked.append(version)
        return str(version + 1)

    async def _watch(self, *, bookmark_watch: bool = False) -> None:
        self.watches.append(bookmark_watch)
        self.current.set()
        try:
            await self.end_watch.wait()
        finally:
            self.current.clear()
        self.end_watch.clear()


async def watching_bookmark_informer() -> tuple[BookmarkWatchInformer, Recorder]:
    """Listed (empty) and watching; catch-ups ask for a bookmark watch at once."""
    inf, rec = make(BookmarkWatchInformer)
    assert isinstance(inf, BookmarkWatchInformer)
    inf.timings = dataclasses.replace(inf.timings, catch_up_grace=0.0, catch_up_list_below=0)
    inf.go.set()  # lists answer at once
    inf.start()
    await settle()
    return inf, rec


async def test_a_quiet_stream_catches_up_by_a_bookmark_watch_without_listing() -> None:
    inf, rec = await watching_bookmark_informer()
    assert inf.watches == [False]
    inf._handle_line(line("ADDED", pod("a", "10")))
    waiting = asyncio.create_task(inf.catch_up(40))
    await settle()
    assert inf.freshness_asked == [40]
    assert inf.watches == [False, True]  # the open watch was replaced by a bookmark watch
    assert not waiting.done()
    inf._handle_line(line("ADDED", pod("b", "30")))  # replayed from the cache first
    inf._handle_line(b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"41"}}}')
    await asyncio.wait_for(waiting, 1)
    assert inf.asked == [0]  # the first list only
    assert inf.catch_up_bookmarks == 1
    assert rec.calls == [("add", "a@10"), ("add", "b@30")]
    inf.end_watch.set()  # the short watch times out: an ordinary watch follows
    await settle()
    assert inf.watches == [False, True, False]
    await inf.stop()


async def test_a_bookmark_watch_that_ends_without_a_bookmark_falls_back_to_a_list() -> None:
    inf, _ = await watching_bookmark_informer()
    inf._handle_line(line("ADDED", pod("a", "10")))
    inf.listing = (structs_of(pod("a", "10")), [], "45")
    waiting = asyncio.create_task(inf.catch_up(40))
    await settle()
    assert inf.watches == [False, True]
    inf.end_watch.set()  # closed at its timeout, no bookmark: proves nothing
    await asyncio.wait_for(waiting, 1)
    assert inf.asked == [0, 40]
    assert inf.catch_up_lists == 1
    assert inf.catch_up_bookmarks == 0
    await inf.stop()


async def test_a_small_quiet_store_catches_up_by_a_list_not_a_bookmark_watch() -> None:
    """Below `catch_up_list_below` objects a list at the revision is cheaper than a bookmark tick."""
    inf, _ = await watching_bookmark_informer()
    inf.timings = dataclasses.replace(inf.timings, catch_up_list_below=2)
    inf._handle_line(line("ADDED", pod("a", "10")))
    inf.listing = (structs_of(pod("a", "10")), [], "45")
    await asyncio.wait_for(inf.catch_up(40), 1)
    assert inf.freshness_asked == []
    assert inf.watches == [False]  # the open watch goes on; no bookmark watch
    assert inf.asked == [0, 40]
    assert inf.catch_up_lists == 1
    await inf.stop()


async def test_a_list_older_than_asked_is_retried_after_a_backoff_not_in_a_hot_loop() -> None:
    inf, _ = gated()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            inf.listing = (structs_of(pod("a", "10")), [], "45")
        await asyncio.sleep(0)

    inf.sleep = sleep
    inf.go.set()
    inf.listing = (structs_of(pod("a", "10")), [], "30")  # below the 40 asked for
    await asyncio.wait_for(inf.catch_up(40), 1)
    assert slept[0] == inf.timings.catch_up_grace
    assert len(slept) == 3
    assert all(delay >= inf.timings.retry.initial * 0.5 for delay in slept[1:])
    assert inf.resource_version == "45"
