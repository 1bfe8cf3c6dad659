"""kube.prefetch: the early lists share a few connections, and an answer already in is handed
over without a turn of the event loop (that turn could first run a big list's decoding)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from policy_scheduler.kube import client, prefetch
from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.kube.paths import NODES, FirstList
from policy_scheduler.kube.retry import Answer
from tests.test_node_protobuf import NODES as NODE_DICTS
from tests.test_node_protobuf import protobuf_list

PATH = "/api/v1/namespaces"


class NoCluster(Exception):
    pass


@pytest.fixture(autouse=True)
def nothing_pending() -> Iterator[None]:
    prefetch.discard()
    yield
    prefetch.discard()


def pending(path: str) -> concurrent.futures.Future[Answer | prefetch.Decoded]:
    query = prefetch.first_list_query(500, {})
    future: concurrent.futures.Future[Answer | prefetch.Decoded] = concurrent.futures.Future()
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


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""


@pytest_asyncio.fixture
async def api_server(tmp_path: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """A stand-in API server: the node list as protobuf in small pieces, flushed one by one (as
    a big answer arrives), the namespaces as JSON, and a refusal for the PVs. Yields the
    kubeconfig's path and the Accept headers it was asked with."""
    body = protobuf_list(NODE_DICTS, "42")
    accepts: list[str] = []

    async def nodes(request: web.Request) -> web.StreamResponse:
        accepts.append(request.headers["Accept"])
        response = web.StreamResponse(headers={"Content-Type": "application/vnd.kubernetes.protobuf"})
        await response.prepare(request)
        for start in range(0, len(body), 97):
            await response.write(body[start : start + 97])
        await response.write_eof()
        return response

    async def namespaces(request: web.Request) -> web.Response:
        return web.json_response({"metadata": {"resourceVersion": "7"}, "items": []})

    async def refused(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 403}, status=403)

    app = web.Application()
    app.router.add_get(NODES, nodes)
    app.router.add_get(PATH, namespaces)
    app.router.add_get("/api/v1/persistentvolumes", refused)
    server = TestServer(app)
    await server.start_server()
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=str(server.make_url("")).rstrip("/")))
    try:
        yield str(path), accepts
    finally:
        await server.close()


async def test_the_node_list_is_decoded_as_it_arrives_and_other_answers_are_kept(
    api_server: tuple[str, list[str]],
) -> None:
    kubeconfig, accepts = api_server
    lists = {
        NODES: FirstList({}, PROTOBUF_OR_JSON),
        PATH: FirstList({}, JSON),
        "/api/v1/persistentvolumes": FirstList({}, JSON),
    }
    thread = prefetch.start(kubeconfig, lists, 500, 10.0)
    await asyncio.to_thread(thread.join, 30)
    query = prefetch.first_list_query(500, {})

    nodes = await prefetch.answer(NODES, query, PROTOBUF_OR_JSON)
    assert isinstance(nodes, prefetch.Decoded)
    assert [n.metadata.name for n in nodes.page.items] == [n["metadata"]["name"] for n in NODE_DICTS]
    assert nodes.page.resource_version == "42"
    assert accepts == [PROTOBUF_OR_JSON]

    namespaces = await prefetch.answer(PATH, query, JSON)
    assert isinstance(namespaces, Answer)
    assert namespaces.status == 200
    assert json.loads(namespaces.body) == {"metadata": {"resourceVersion": "7"}, "items": []}
    refused = await prefetch.answer("/api/v1/persistentvolumes", query, JSON)
    assert isinstance(refused, Answer)
    assert refused.status == 403
    assert b"Status" in refused.body  # an error keeps its body, for the informer's ApiError
