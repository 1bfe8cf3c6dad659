"""A fault-injecting HTTP proxy in front of the real API server (test-only, loopback).

The operator under test talks plain HTTP to 127.0.0.1:<port>; the proxy forwards each request
over TLS to the API server and streams the answer back (watches included). Rules make chosen
requests fail: answered with an error status without reaching the server, answered after a
delay (a gateway timeout), forwarded but answered with an error anyway (the response was
lost), or held until the test releases them. Every request is recorded, so a test can count
retries and requests per second.

It runs its own event loop in a daemon thread; the test thread configures it through
thread-safe methods.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import ssl
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

# Hop-by-hop and framing headers: each side of the proxy sets its own.
_REQUEST_DROP = {
    "host",
    "connection",
    "keep-alive",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
_RESPONSE_DROP = {"connection", "keep-alive", "transfer-encoding", "content-length"}

BINDING = re.compile(r"^/api/v1/namespaces/[^/]+/pods/[^/]+/binding$")
POD_STATUS = re.compile(r"^/api/v1/namespaces/[^/]+/pods/[^/]+/status$")


@dataclass
class Rule:
    """What to do with requests whose method and path match.

    action: "status" answers `status` without forwarding; "lost" forwards, then answers `status`
    anyway; "hold" waits until `release()`d, then forwards; "delay" forwards after `delay`. `delay` is waited first (a slow or
    timing-out gateway). `probability` picks a random share of the matching requests; `limit`
    stops the rule after that many hits (later requests go to the next matching rule).
    """

    method: str
    path: re.Pattern[str]
    action: str = "status"
    status: int = 503
    delay: float = 0.0
    probability: float = 1.0
    limit: int | None = None
    released: threading.Event = field(default_factory=threading.Event)
    gate: asyncio.Event | None = None  # in the proxy's loop: set once released
    hits: int = 0
    held: list[tuple[str, bytes]] = field(default_factory=list)  # (path, body) of held requests


@dataclass(frozen=True)
class Record:
    at: float  # time.monotonic() when the request arrived
    method: str
    path: str
    status: int  # what the client got (0: connection dropped)
    injected: bool  # the status came from a rule, not from the API server
    body: bytes = b""  # request body of POSTs (bindings name their node)


def _status_body(code: int, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}
    ).encode()


class FaultProxy:
    def __init__(self, upstream: str, ca_file: Path, *, seed: int = 0, token: str | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.ca_file = ca_file
        # Sent for clients that send no credentials: client-go sends none to a plain-http server.
        self.token = token
        self.port = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self._records: list[Record] = []
        # Every request as it arrives, forwarded or not (a client may give up before its answer).
        self._arrivals: list[tuple[float, str, str]] = []
        self._held = 0
        # Responses being streamed, by id (requests are unhashable); only touched in the loop.
        self._streams: dict[int, tuple[web.Request, aiohttp.ClientResponse]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        # A partition (loop side): while `_healed` is unset nothing passes either way.
        self._healed: asyncio.Event | None = None
        self._doomed: set[int] = set()  # streams open when the partition began
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="fault-proxy", daemon=True)

    # ---- lifecycle (test thread) ---------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("fault proxy did not start")

    def stop(self) -> None:
        self.release_all()
        if self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    # ---- rules and records (test thread) -------------------------------------------------------

    def add(self, method: str, path: str | re.Pattern[str], **kwargs: object) -> Rule:
        pattern = re.compile(path) if isinstance(path, str) else path
        rule = Rule(method, pattern, **kwargs)  # type: ignore[arg-type]
        with self._lock:
            self._rules.append(rule)
        return rule

    def release(self, rule: Rule) -> None:
        rule.released.set()
        if self._loop is not None:

            def open_gate() -> None:  # in the loop's thread, where the gate is made
                if rule.gate is not None:
                    rule.gate.set()

            self._loop.call_soon_threadsafe(open_gate)

    def remove(self, rule: Rule) -> None:
        self.release(rule)
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self) -> None:
        with self._lock:
            rules, self._rules = self._rules, []
        for rule in rules:
            self.release(rule)

    def release_all(self) -> None:
        with self._lock:
            rules = list(self._rules)
        for rule in rules:
            self.release(rule)

    def cut_streams(self) -> int:
        """Break every response still being streamed (watches) on both sides, as a network
        failure would; returns how many. Whatever the server sends afterwards reaches nobody."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(self._cut(), self._loop).result(10)

    def partition(self) -> None:
        """Cut the client off as a network partition does: from now on nothing it sends reaches
        the server and nothing the server sends reaches it. Requests and open streams (watches)
        just go silent; they are not refused."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._partition(), self._loop).result(10)

    def heal(self) -> None:
        """End the partition. The connections it silenced are dead (as TCP gives up on them):
        the client sees them reset, and what they carried is never delivered; new requests pass."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._heal(), self._loop).result(10)

    async def _partition(self) -> None:
        self._healed = asyncio.Event()
        self._doomed = set(self._streams)

    async def _heal(self) -> None:
        healed, self._healed = self._healed, None
        for ident in self._doomed:
            stream = self._streams.pop(ident, None)
            if stream is not None:
                request, upstream = stream
                upstream.close()
                if request.transport is not None:
                    request.transport.abort()
        self._doomed = set()
        if healed is not None:
            healed.set()

    async def _silenced(self, request: web.Request, at: float, body: bytes) -> web.StreamResponse:
        """A request sent during a partition: it never arrives; its connection dies at the heal."""
        self._record(at, request, 0, True, body)
        if self._healed is not None:
            await self._healed.wait()
        return self._drop(request)

    async def _cut(self) -> int:
        streams, self._streams = self._streams, {}
        for request, upstream in streams.values():
            upstream.close()
            if request.transport is not None:
                request.transport.abort()
        return len(streams)

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def records(
        self, method: str | None = None, path: re.Pattern[str] | None = None, since: float = 0.0
    ) -> list[Record]:
        with self._lock:
            records = list(self._records)
        return [
            r
            for r in records
            if r.at >= since
            and (method is None or r.method == method)
            and (path is None or path.match(r.path))
        ]

    def arrivals(self, method: str, path: re.Pattern[str], since: float = 0.0) -> list[float]:
        """When each matching request arrived, whatever became of it."""
        with self._lock:
            arrivals = list(self._arrivals)
        return [at for at, m, p in arrivals if at >= since and m == method and path.match(p)]

    @staticmethod
    def peak_rate(records: list[Record], window: float = 1.0) -> int:
        """The most requests among `records` in any `window` seconds."""
        times = sorted(r.at for r in records)
        best, start = 0, 0
        for end, t in enumerate(times):
            while t - times[start] > window:
                start += 1
            best = max(best, end - start + 1)
        return best

    @staticmethod
    def per_pod(records: list[Record]) -> Counter[str]:
        """Requests per pod (namespace/name) among pod subresource `records`."""
        return Counter("/".join(r.path.split("/")[4:7:2]) for r in records)

    # ---- the proxy (its own thread and loop) --------------------------------------------------------

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        context = ssl.create_default_context(cafile=str(self.ca_file))
        # Bodies pass through still compressed, with their Content-Encoding.
        connector = aiohttp.TCPConnector(ssl=context, limit=0)
        async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
            self._session = session
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert isinstance(server, asyncio.Server)
            self.port = int(server.sockets[0].getsockname()[1])
            self._ready.set()
            await self._stopped.wait()
            await runner.cleanup()

    def _match(self, method: str, path: str) -> Rule | None:
        with self._lock:
            for rule in self._rules:
                # Each matching rule draws in turn: rules of 0.3 and 0.2 hit 30% and 14%.
                if (
                    rule.method in (method, "*")
                    and rule.path.match(path)
                    and (rule.limit is None or rule.hits < rule.limit)
                    and self._rng.random() < rule.probability
                ):
                    rule.hits += 1
                    return rule
        return None

    def _record(self, at: float, request: web.Request, status: int, injected: bool, body: bytes) -> None:
        with self._lock:
            self._records.append(
                Record(
                    at,
                    request.method,
                    request.path,
                    status,
                    injected,
                    body if request.method == "POST" else b"",
                )
            )

    async def _wait(self, rule: Rule) -> None:
        with self._lock:
            self._held += 1
        if rule.gate is None:
            rule.gate = asyncio.Event()
        try:
            if not rule.released.is_set():
                await rule.gate.wait()
        finally:
            with self._lock:
                self._held -= 1

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        at = time.monotonic()
        with self._lock:
            self._arrivals.append((at, request.method, request.path))
        body = await request.read()
        if self._healed is not None:
            return await self._silenced(request, at, body)
        rule = self._match(request.method, request.path)
        if rule is not None:
            if rule.delay:
                await asyncio.sleep(rule.delay)
                if self._healed is not None:  # partitioned meanwhile: lost on the way
                    return await self._silenced(request, at, body)
            if rule.action == "hold":
                with self._lock:
                    rule.held.append((request.path, body))
                await self._wait(rule)
            elif rule.action == "status":
                self._record(at, request, rule.status, True, body)
                return web.Response(
                    status=rule.status,
                    body=_status_body(rule.status, "injected by the fault proxy"),
                    content_type="application/json",
                )
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _REQUEST_DROP}
        if self.token and "Authorization" not in request.headers:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream + request.path_qs,
                data=body or None,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
            )
        except (aiohttp.ClientError, OSError):
            # The API server is down: the client sees its connection dropped, as it would.
            self._record(at, request, 0, False, body)
            return self._drop(request)
        async with upstream:
            if rule is not None and rule.action == "lost":
                await upstream.read()
                self._record(at, request, rule.status, True, body)
                return web.Response(
                    status=rule.status,
                    body=_status_body(rule.status, "response lost by the fault proxy"),
                    content_type="application/json",
                )
            self._record(at, request, upstream.status, False, body)
            response = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in _RESPONSE_DROP},
            )
            await response.prepare(request)
            self._streams[id(request)] = (request, upstream)
            try:
                async for chunk in upstream.content.iter_any():
                    if self._healed is not None:  # partitioned: this and the rest never arrive
                        await self._healed.wait()
                        return self._drop(request)
                    await response.write(chunk)
            except (TimeoutError, aiohttp.ClientError, OSError):
                # The server went away mid-stream (a watch): break the client's stream too.
                return self._drop(request)
            finally:
                self._streams.pop(id(request), None)
            await response.write_eof()
            return response

    @staticmethod
    def _drop(request: web.Request) -> web.StreamResponse:
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=502)


def bound_node(record: Record) -> str:
    """The node a binding request named."""
    target: dict[str, str] = json.loads(record.body)["target"]
    return target["name"]
