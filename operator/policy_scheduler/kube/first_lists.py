"""The first lists of nodes and pods, asked for before the operator's modules are imported.

On a big cluster the API server takes about as long to prepare the node list as this process
takes to import the operator (docs/benchmarks.md). The start-up asks for both lists as soon as it
has an API client and imports the rest while they come (service/startup.py). The informers of
nodes and pods take these answers for their first list if they ask exactly the same (path,
query, Accept); otherwise, or if the early request failed, they list as usual. Nothing else
changes: the answer is the watch-cache snapshot their own first list would be, and the watch
that follows brings it up to date.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from policy_scheduler.kube.client import Query, QueryValue, call
from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.kube.paths import NODES, POD_FIELD_SELECTOR, PODS
from policy_scheduler.kube.retry import Answer

log = logging.getLogger(__name__)


class ListRequest(NamedTuple):
    path: str
    query: tuple[tuple[str, QueryValue], ...]  # sorted: requests compare equal by content
    accept: str

    @classmethod
    def of(cls, path: str, query: Query, accept: str) -> ListRequest:
        return cls(path, tuple(sorted(query.items())), accept)


def first_list_query(page_size: int, selectors: Mapping[str, QueryValue]) -> dict[str, QueryValue]:
    """An informer's first list: from the API server's watch cache (resourceVersion=0, as
    client-go's reflector; the server then ignores the page limit)."""
    return {"limit": page_size, **selectors, "resourceVersion": "0"}


# The big lists, as the informers ask for them: nodes as protobuf (the API server encodes a big
# node list in a quarter of JSON's time), pods without the terminal ones.
NODE_LIST_ACCEPT = PROTOBUF_OR_JSON
POD_LIST_SELECTORS: Mapping[str, QueryValue] = {"fieldSelector": POD_FIELD_SELECTOR}


def node_and_pod_lists(page_size: int) -> list[ListRequest]:
    return [
        ListRequest.of(NODES, first_list_query(page_size, {}), NODE_LIST_ACCEPT),
        ListRequest.of(PODS, first_list_query(page_size, POD_LIST_SELECTORS), JSON),
    ]


class FirstLists:
    """Sends `requests` at once, as tasks on the running loop; each answer is taken once."""

    def __init__(self, api: Any, requests: Iterable[ListRequest], timeout: float) -> None:
        self._answers: dict[ListRequest, asyncio.Task[Answer]] = {
            request: asyncio.create_task(
                call(
                    api,
                    "GET",
                    request.path,
                    query=dict(request.query),
                    accept=request.accept,
                    request_timeout=timeout,
                ),
                name=f"first list {request.path}",
            )
            for request in requests
        }

    async def take(self, request: ListRequest) -> Answer | None:
        """The answer to exactly this request, once; None if there is none or if it failed (the
        caller then asks itself)."""
        answer = self._answers.pop(request, None)
        if answer is None:
            return None
        try:
            return await answer
        except Exception as exc:
            log.debug("early list unusable", extra={"resource": request.path, "error": repr(exc)})
            return None

    async def close(self) -> None:
        """Drops the answers nobody took."""
        for answer in self._answers.values():
            answer.cancel()
        for answer in self._answers.values():
            with contextlib.suppress(BaseException):
                await answer
        self._answers.clear()
