"""The first lists of nodes and pods, asked for while the rest of the operator is imported.

Start-up to first bind (issue 12): importing kopf, pydantic, numpy and the scheduling core takes
about a second of CPU, and on a big cluster the API server needs as long again to answer the
first lists. `start` sends those lists from a thread with its own event loop before the heavy
imports, so the two overlap (the thread mostly waits on the socket). The informers of nodes and
pods take the answer for their first list (`take`) if the request was the one they would make
(`first_list_query`, with the same Accept); otherwise, or if it failed, they list as usual.
Nothing else changes: the answer is a watch-cache snapshot as their own first list would be,
and the watch that follows brings it up to date. The node list, the big one (11 MB of protobuf
at 5000 nodes), is decoded by the thread as it arrives, and handed over `Decoded`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policy_scheduler.apiobjects.decode import ListResult
    from policy_scheduler.apiobjects.node_protobuf import NodeListDecoder
    from policy_scheduler.kube.paths import FirstList
    from policy_scheduler.kube.retry import Answer

log = logging.getLogger(__name__)

QueryValue = str | int | bool
_Key = tuple[str, str, tuple[tuple[str, QueryValue], ...]]  # path, accept, query


@dataclass(frozen=True, slots=True)
class Decoded:
    """A first list the early thread decoded as it arrived (a successful answer only)."""

    page: ListResult[Any]


# path, query, accept, and where its answer goes
_Request = tuple[str, dict[str, QueryValue], str, "concurrent.futures.Future[Answer | Decoded]"]
# Connections for the early lists: the nodes and pods each have one, the small lists share the
# rest. One per list would be ~20 TLS handshakes at once on both sides of a busy machine, and
# the node list's request would leave only when they were all done (issue 12).
EARLY_CONNECTIONS = 4
_pending: dict[_Key, concurrent.futures.Future[Answer | Decoded]] = {}
_lock = threading.Lock()


def first_list_query(page_size: int, selectors: Mapping[str, QueryValue]) -> dict[str, QueryValue]:
    """An informer's first list: from the API server's watch cache (resourceVersion=0, as
    client-go's reflector; the server then ignores the page limit)."""
    return {"limit": page_size, **selectors, "resourceVersion": "0"}


def _key(path: str, query: Mapping[str, QueryValue], accept: str) -> _Key:
    return path, accept, tuple(sorted(query.items()))


def start(
    kubeconfig: str | None, lists: Mapping[str, FirstList], page_size: int, timeout: float
) -> threading.Thread:
    """Ask for the first list of each path, with its selectors and Accept, from a daemon thread;
    returns the thread."""
    # The client is imported here, before the thread starts: imported in the thread it would
    # share the interpreter with the caller's imports and the requests would leave later.
    from policy_scheduler.kube import client  # noqa: F401

    requests: list[_Request] = []
    with _lock:
        for path, (selectors, accept) in lists.items():
            query = first_list_query(page_size, selectors)
            future: concurrent.futures.Future[Answer | Decoded] = concurrent.futures.Future()
            _pending[_key(path, query, accept)] = future
            requests.append((path, query, accept, future))
    thread = threading.Thread(
        target=asyncio.run,
        args=(_fetch(kubeconfig, requests, timeout),),
        name="first lists",
        daemon=True,
    )
    thread.start()
    return thread


def take(
    path: str, query: Mapping[str, QueryValue], accept: str
) -> concurrent.futures.Future[Answer | Decoded] | None:
    """The prefetched answer to exactly this request, once (None if there is none)."""
    with _lock:
        return _pending.pop(_key(path, query, accept), None)


async def answer(path: str, query: Mapping[str, QueryValue], accept: str) -> Answer | Decoded | None:
    """The prefetched answer to exactly this request, once; None if there is none or if that
    request failed (the caller then asks itself)."""
    future = take(path, query, accept)
    if future is None:
        return None
    try:
        # An answer already in is returned at once: wrapping it would cost a turn of the loop,
        # and that turn may first run the decoding of a big list (issue 12).
        if future.done():
            return future.result()
        return await asyncio.wrap_future(future)
    except Exception as exc:
        log.debug("early list unusable", extra={"resource": path, "error": repr(exc)})
        return None


def discard() -> None:
    """Forget answers nobody took (tests). `run` asks exactly what its informers will ask (the
    same config.informer), so in the operator every answer is taken."""
    with _lock:
        _pending.clear()


async def _fetch(kubeconfig: str | None, requests: Sequence[_Request], request_timeout: float) -> None:
    from policy_scheduler.kube.client import call, make_api_client

    try:
        api = await make_api_client(kubeconfig, EARLY_CONNECTIONS)
    except Exception as exc:  # the operator reports its own configuration error
        for *_, future in requests:
            future.set_exception(exc)
        return
    try:

        async def one(
            path: str,
            query: Mapping[str, QueryValue],
            accept: str,
            future: concurrent.futures.Future[Answer | Decoded],
        ) -> None:
            try:
                decoder = _decoder(path, accept)
                answer = await call(
                    api,
                    "GET",
                    path,
                    query=query,
                    request_timeout=request_timeout,
                    accept=accept,
                    sink=None if decoder is None else decoder.feed,
                )
                if decoder is not None and 200 <= answer.status < 300:
                    future.set_result(Decoded(decoder.result()))
                else:
                    future.set_result(answer)
            except Exception as exc:
                log.debug("early list failed; the informer lists again", extra={"resource": path})
                future.set_exception(exc)

        await asyncio.gather(*(one(*request) for request in requests))
    finally:
        await api.close()


def _decoder(path: str, accept: str) -> NodeListDecoder | None:
    """How this list is decoded as it arrives, if it is: the node list as protobuf."""
    from policy_scheduler.kube.media_types import PROTOBUF_OR_JSON
    from policy_scheduler.kube.paths import NODES

    if path != NODES or accept != PROTOBUF_OR_JSON:
        return None
    # Imported in this thread while the main thread imports the operator. The two can wait on
    # each other's module locks only if a module node_protobuf imports came back to it; none does.
    from policy_scheduler.apiobjects.node_protobuf import NodeListDecoder

    return NodeListDecoder()
