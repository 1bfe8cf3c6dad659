"""Every informer's first list, asked for before the operator's modules are imported.

On a big cluster the API server takes about as long to prepare the node list as this process
takes to import the operator (docs/benchmarks.md). The start-up asks for every first list as
soon as it has an API client and imports the rest while they come (service/startup.py); asked
for by the informers themselves, the small lists would also wait behind the decoding of the node
list. An informer takes the answer for its first list if it asks exactly the same (path, query,
Accept); otherwise, or if the early request failed, it lists as usual. Nothing else changes: the
answer is the watch-cache snapshot its own first list would be, and the watch that follows
brings it up to date.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from policy_scheduler.kube import paths
from policy_scheduler.kube.client import Query, QueryValue, call
from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.kube.retry import Answer

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

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


# As the informers ask for them: nodes as protobuf (the API server encodes a big node list in a
# quarter of JSON's time), pods without the terminal ones, the rest as JSON with no selector.
# tests/kube/test_kube_first_lists.py holds this equal to the operator's informers.
NODE_LIST_ACCEPT = PROTOBUF_OR_JSON
OTHER_LISTS = (
    paths.NAMESPACES,
    paths.PDBS,
    paths.SERVICES,
    paths.REPLICATION_CONTROLLERS,
    paths.REPLICA_SETS,
    paths.STATEFUL_SETS,
    paths.PERSISTENT_VOLUMES,
    paths.PERSISTENT_VOLUME_CLAIMS,
    paths.STORAGE_CLASSES,
    paths.CSI_NODES,
    paths.CSI_DRIVERS,
    paths.CSI_STORAGE_CAPACITIES,
    paths.VOLUME_ATTACHMENTS,
    paths.DEVICE_CLASSES,
    paths.RESOURCE_SLICES,
    paths.RESOURCE_CLAIMS,
    paths.DEVICE_TAINT_RULES,
    paths.PODGROUPS,
    # Not the Workload API's: each release serves at most one of its versions, and only with
    # GenericWorkload on (off by default), so asking early would mostly fetch 404s. Its informer
    # lists for itself once discovery has found the version served.
    paths.EVICTION_POLICIES,
    paths.SCHEDULING_PROFILES,
)
# Connections for these requests: one per list would be some twenty TLS handshakes at once, and
# the node list's request would leave only once they were done. The small lists share what the
# big ones leave.
EARLY_CONNECTIONS = 4


def informer_first_lists(page_size: int) -> list[ListRequest]:
    """The big lists first: their requests leave first."""
    return [
        ListRequest.of(paths.NODES, first_list_query(page_size, {}), NODE_LIST_ACCEPT),
        ListRequest.of(
            paths.PODS, first_list_query(page_size, {"fieldSelector": paths.POD_FIELD_SELECTOR}), JSON
        ),
        *(ListRequest.of(path, first_list_query(page_size, {}), JSON) for path in OTHER_LISTS),
    ]


class FirstLists:
    """Sends `requests` in order, as tasks on the running loop, over EARLY_CONNECTIONS connections
    at most; each answer is taken once."""

    def __init__(self, api: ApiClient, requests: Iterable[ListRequest], request_timeout: float) -> None:
        self._slots = asyncio.Semaphore(EARLY_CONNECTIONS)
        self._answers: dict[ListRequest, asyncio.Task[Answer]] = {
            request: asyncio.create_task(
                self._ask(api, request, request_timeout), name=f"first list {request.path}"
            )
            for request in requests
        }

    async def _ask(self, api: ApiClient, request: ListRequest, request_timeout: float) -> Answer:
        async with self._slots:
            return await call(
                api,
                "GET",
                request.path,
                query=dict(request.query),
                accept=request.accept,
                request_timeout=request_timeout,
            )

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
