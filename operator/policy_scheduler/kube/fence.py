"""Fencing: the writes only the leader makes go out only while this replica may act as the leader.

A replica that was paused (a long garbage collection, a frozen VM, SIGSTOP, a CPU-starved
container) or cut off from the API server can wake up believing it still leads, while a standby
has taken the lease and changed the cluster meanwhile. Each write only the leader makes (binds,
evictions, nominations and pod conditions, our CRs' status, PreBind's volume and claim writes,
PriorityClass mirrors) names a Fence; `client.call` asks it twice:

- before the request starts, so that a refused write never takes a connection;
- as the body is handed to the connection (`FencedBody`), after the wait for a pooled connection
  and the headers, which aiohttp holds back until the body's first write. A pause anywhere
  before that is caught; only the few statements between that check and the socket write remain.

A refused write raises NotLeading and never reaches the server (not even its headers).
"""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp.abc import AbstractStreamWriter
from aiohttp.payload import BytesPayload

from policy_scheduler.observability import metrics
from policy_scheduler.scheduler.framework.interfaces import NotLeading

__all__ = ["UNFENCED", "Fence", "FencedBody", "NotLeading", "check", "resource_of"]


class Fence(Protocol):
    def may_act(self) -> bool:
        """Whether this replica may act as the leader now."""
        ...

    def check(self) -> None:
        """Raise NotLeading unless this replica may act as the leader now."""
        ...


class _Unfenced:
    """For tools and tests that write without leader election: every write may go."""

    def may_act(self) -> bool:
        return True

    def check(self) -> None:
        return None


UNFENCED: Fence = _Unfenced()


def resource_of(path: str) -> str:
    """The resource (and subresource) a request path names, for the refusals' metric:
    `/api/v1/namespaces/ns/pods/p/binding` -> `pods/binding`."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "unknown"
    return rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"


def check(fence: Fence, path: str) -> None:
    """fence.check(), counting a refusal."""
    try:
        fence.check()
    except NotLeading:
        metrics.fenced_writes.labels(resource_of(path)).inc()
        raise


class FencedBody(BytesPayload):
    """A request body that is written only if the fence allows it at that moment. A refusal is
    kept in `refused` (aiohttp reports it as a connection error) and the request goes no further."""

    def __init__(self, value: bytes, fence: Fence, path: str, **kwargs: Any) -> None:
        super().__init__(value, **kwargs)
        self.fence = fence
        self.path = path
        self.refused: NotLeading | None = None

    def _check(self) -> None:
        try:
            check(self.fence, self.path)
        except NotLeading as refusal:
            self.refused = refusal
            raise

    async def write(self, writer: AbstractStreamWriter) -> None:
        self._check()
        await super().write(writer)

    async def write_with_length(self, writer: AbstractStreamWriter, content_length: int | None) -> None:
        self._check()
        await super().write_with_length(writer, content_length)
