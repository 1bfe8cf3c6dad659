"""kube.prefetch: the early lists share a few connections, and an answer already in is handed
over without a turn of the event loop (that turn could first run a big list's decoding)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from typing import Any

import pytest

from policy_scheduler.kube import client, prefetch
from policy_scheduler.kube.media_types import JSON
from policy_scheduler.kube.paths import FirstList
from policy_scheduler.kube.retry import Answer

PATH = "/api/v1/namespaces"


class NoCluster(Exception):
    pass


@pytest.fixture(autouse=True)
def nothing_pending() -> Iterator[None]:
    prefetch.discard()
    yield
    prefetch.discard()


def pending(path: str) -> concurrent.futures.Future[Answer]:
    query = prefetch.first_list_query(500, {})
    future: concurrent.futures.Future[Answer] = concurrent.futures.Future()
    with prefetch._lock:
        prefetch._pending[prefetch._key(path, query, JSON)] = future
    return future


def test_an_answer_already_in_is_returned_without_suspending() -> None:
    answer = Answer(200, b"{}", None)
    pending(PATH).set_result(answer)
    coroutine = prefetch.answer(PATH, prefetch.first_list_query(500, {}), JSON)
    with pytest.raises(StopIteration) as returned:
        coroutine.send(None)  # runs to the end at once: no await of a future
    assert returned.value.value is answer
    assert prefetch.take(PATH, prefetch.first_list_query(500, {}), JSON) is None  # once only


def test_a_failed_early_list_already_in_is_none() -> None:
    pending(PATH).set_exception(ConnectionError("reset"))
    coroutine = prefetch.answer(PATH, prefetch.first_list_query(500, {}), JSON)
    with pytest.raises(StopIteration) as returned:
        coroutine.send(None)
    assert returned.value.value is None


async def test_an_answer_still_coming_is_awaited() -> None:
    future = pending(PATH)
    waiting = asyncio.create_task(prefetch.answer(PATH, prefetch.first_list_query(500, {}), JSON))
    await asyncio.sleep(0)
    assert not waiting.done()
    answer = Answer(200, b"{}", None)
    future.set_result(answer)
    assert await waiting is answer


def test_the_early_lists_share_a_few_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[Any, ...]] = []

    async def refuse(*args: Any) -> Any:
        asked.append(args)
        raise NoCluster("no cluster here")

    monkeypatch.setattr(client, "make_api_client", refuse)
    thread = prefetch.start("/nowhere/kubeconfig", {PATH: FirstList({}, JSON)}, 500, 1.0)
    thread.join(timeout=30)
    assert asked == [("/nowhere/kubeconfig", prefetch.EARLY_CONNECTIONS)]
    assert prefetch.EARLY_CONNECTIONS < client.REQUEST_CONNECTIONS
    future = prefetch.take(PATH, prefetch.first_list_query(500, {}), JSON)
    assert future is not None
    with pytest.raises(NoCluster):
        future.result()
