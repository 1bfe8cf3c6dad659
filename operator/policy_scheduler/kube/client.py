"""The API client and raw HTTP helpers every adapter goes through.

kubernetes-asyncio supplies configuration (kubeconfig, in-cluster service account, token
refresh) and its connection pools (TLS settings from the configuration); requests are made on
aiohttp sessions of ours over those pools, so that bodies stay bytes for msgspec, and so that a
non-2xx answer is a status code to look at rather than an exception (its typed
`create_namespaced_binding` raises even on success, because the server answers a Status where it
expects a Binding).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import aiohttp
import msgspec
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client import rest as k8s_rest
from yarl import URL

from policy_scheduler.apiobjects.decode import decode_status
from policy_scheduler.kube.fence import Fence, FencedBody
from policy_scheduler.kube.fence import check as fence_check
from policy_scheduler.kube.kubeconfig import load_configuration
from policy_scheduler.kube.media_types import JSON
from policy_scheduler.kube.retry import Answer, parse_retry_after
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.observability import metrics

log = logging.getLogger(__name__)

USER_AGENT = "policy-scheduler/0.1"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
DEFAULT_TIMEOUT = DEFAULTS.api.request_timeout
REQUEST_CONNECTIONS = DEFAULTS.api.request_connections

# Errors that say nothing about the request itself: the connection, not the server, failed.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, ConnectionError)

# As kubernetes_asyncio's own session: a watch event carries a whole object (up to etcd's 1.5 MiB).
WATCH_READ_BUFFER = 2**21

QueryValue = str | int | bool
Query = Mapping[str, QueryValue]


class ApiError(Exception):
    """A non-2xx answer, with the server's Status reason and message when it sent one."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after  # seconds the server asked us to wait, if it did
        super().__init__(f"{status} {reason}: {message}")

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @classmethod
    def from_response(cls, status: int, body: bytes, retry_after: float | None = None) -> ApiError:
        st = decode_status(body)
        if st is not None and (st.reason or st.message):
            return cls(status, st.reason, st.message, retry_after)
        return cls(status, "", body[:500].decode("utf-8", "replace"), retry_after)

    @classmethod
    def from_answer(cls, answer: Answer) -> ApiError:
        return cls.from_response(answer.status, answer.body, answer.retry_after)


@dataclass(frozen=True, slots=True)
class Route:
    """How every request reaches the API server: the proxy and the TLS server name, as aiohttp's
    per-request options."""

    proxy: str | None = None
    proxy_headers: Mapping[str, str] | None = None
    server_hostname: str | None = None

    @classmethod
    def from_configuration(cls, configuration: Any) -> Route:
        """The kubeconfig's proxy, else the environment's (HTTPS_PROXY, NO_PROXY, ...) for the
        API server, read once: aiohttp would look it up again for every request (and read
        ~/.netrc), in a worker thread."""
        proxy, headers = configuration.proxy, dict(configuration.proxy_headers or {})
        if not proxy:
            with suppress(LookupError):
                env_proxy, auth = aiohttp.helpers.get_env_proxy_for_url(URL(str(configuration.host)))
                proxy = str(env_proxy)
                if auth is not None:
                    headers["Proxy-Authorization"] = auth.encode()
        return cls(proxy or None, headers or None, configuration.tls_server_name or None)

    def options(self) -> dict[str, Any]:
        options = {"proxy": self.proxy, "proxy_headers": self.proxy_headers}
        if self.server_hostname:
            options["server_hostname"] = self.server_hostname
        return options


class RestClientMetrics:
    """client-go's rest_client_request_duration_seconds and rest_client_requests_total for one API
    server: latency until the answer's headers (a watch's too), and the answer's code, or
    "<error>" when there was none."""

    def __init__(self, server: URL) -> None:
        self.host = f"{server.host}:{server.port}" if server.port is not None else str(server.host)
        self._latency: dict[str, Any] = {}
        self._results: dict[tuple[str, str], Any] = {}

    def observe(self, method: str, code: int | None, seconds: float) -> None:
        # Looked up once per verb and code: every request passes here.
        latency = self._latency.get(method)
        if latency is None:
            latency = self._latency[method] = metrics.rest_client_request_duration.labels(method, self.host)
        latency.observe(seconds)
        key = (str(code) if code is not None else "<error>", method)
        result = self._results.get(key)
        if result is None:
            result = self._results[key] = metrics.rest_client_requests.labels(key[0], method, self.host)
        result.inc()


def _session(rest: Any) -> aiohttp.ClientSession:
    """A session on the connections of kubernetes_asyncio's pool `rest` (its TLS settings from the
    configuration, its connection limit) that reads nothing from the environment per request:
    the Route says where requests go."""
    return aiohttp.ClientSession(
        connector=rest.pool_manager.connector,
        connector_owner=False,
        trust_env=False,
        read_bufsize=WATCH_READ_BUFFER,
    )


class ApiClient(k8s_client.ApiClient):
    """kubernetes_asyncio's ApiClient (configuration, auth and its typed calls), and our sessions.

    A watch holds its connection for as long as it runs: watches go through the library's pool
    (up to 100 connections), `call` through a second one bounded to `request_connections`, so a
    burst of binds and events waits for a free connection instead of opening (and
    TLS-handshaking, on both sides) up to 100 new ones.
    """

    def __init__(self, configuration: Any, request_connections: int = REQUEST_CONNECTIONS) -> None:
        super().__init__(configuration=configuration)
        self.route = Route.from_configuration(configuration)
        self.metrics = RestClientMetrics(URL(str(configuration.host)))
        self._request_pool = k8s_rest.RESTClientObject(configuration, maxsize=request_connections)
        self.watch_session = _session(self.rest_client)
        self.request_session = _session(self._request_pool)

    async def close(self) -> None:
        try:
            await self.request_session.close()
            await self.watch_session.close()
            await self._request_pool.close()
        finally:
            await super().close()


async def make_api_client(
    kubeconfig: str | None = None, request_connections: int = REQUEST_CONNECTIONS
) -> ApiClient:
    """An ApiClient from the kubeconfig file (argument, else $KUBECONFIG), else in-cluster config,
    else ~/.kube/config (kube/kubeconfig.py), with up to `request_connections` connections for
    requests. KubeconfigError, in one line, if none can be loaded."""
    configuration = await load_configuration(kubeconfig)
    api = ApiClient(configuration, request_connections)
    api.user_agent = USER_AGENT
    log.info("api client ready", extra={"host": configuration.host})
    return api


def _query(query: Query | None) -> dict[str, str] | None:
    if not query:
        return None
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(v) for k, v in query.items()}


async def _prepare(
    api: ApiClient, path: str, content_type: str | None, *, watch: bool = False, accept: str = JSON
) -> tuple[aiohttp.ClientSession, str, dict[str, str], dict[str, Any]]:
    headers: dict[str, str] = dict(api.default_headers)
    headers["Accept"] = accept
    if content_type:
        headers["Content-Type"] = content_type
    # Bearer tokens come from the configuration's auth settings, which also run the token
    # refresh hook (in-cluster projected tokens rotate).
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    session: aiohttp.ClientSession = api.watch_session if watch else api.request_session
    return session, str(api.configuration.host) + path, headers, api.route.options()


async def authorization(api: ApiClient) -> str | None:
    """The Authorization header the client sends (a bearer token), if its credentials are one."""
    headers: dict[str, str] = {}
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    return headers.get("Authorization") or headers.get("authorization")


def _body(body: Any) -> bytes | None:
    if body is None or isinstance(body, bytes):
        return body
    return msgspec.json.encode(body)


async def call(
    api: ApiClient,
    method: str,
    path: str,
    *,
    query: Query | None = None,
    body: Any = None,
    content_type: str | None = None,
    request_timeout: float = DEFAULT_TIMEOUT,
    accept: str = JSON,
    sink: Callable[[bytes], None] | None = None,
    headers: Mapping[str, str] | None = None,
    fence: Fence | None = None,
) -> Answer:
    """One request; returns its Answer (status, body bytes, Retry-After) whatever the status.

    `body` is bytes as is, or anything msgspec can encode as JSON. `accept`: the answer's
    content types (kube.media_types). With `sink`, a successful (2xx) answer's body goes to it
    piece by piece as it arrives, and the Answer's body is empty. `headers` are added to the
    request's own. Connection failures raise (see CONNECTION_ERRORS). With `fence` (a write only
    the leader makes), the request goes out only while the fence allows it, checked at the start
    and again as the body is written (kube.fence); otherwise NotLeading is raised and the server
    never sees the request.
    """
    data = _body(body)
    if data is not None and content_type is None:
        content_type = JSON
    payload: bytes | FencedBody | None = data
    if fence is not None:
        fence_check(fence, path)
        if data is not None:
            payload = FencedBody(data, fence, path, content_type=content_type)
    session, url, request_headers, extra = await _prepare(api, path, content_type, accept=accept)
    request_headers.update(headers or {})
    started = time.perf_counter()
    code: int | None = None
    try:
        async with session.request(
            method,
            url,
            params=_query(query),
            data=payload,
            headers=request_headers,
            timeout=aiohttp.ClientTimeout(total=request_timeout),
            **extra,
        ) as resp:
            code = resp.status
            api.metrics.observe(method, code, time.perf_counter() - started)
            retry_after = parse_retry_after(resp.headers.get("Retry-After"), time.time())
            if sink is not None and 200 <= resp.status < 300:
                async for piece in resp.content.iter_any():
                    sink(piece)
                return Answer(resp.status, b"", retry_after)
            return Answer(resp.status, await resp.read(), retry_after)
    except aiohttp.ClientError as exc:
        # aiohttp reports a body that refused to be written as a connection error.
        if isinstance(payload, FencedBody) and payload.refused is not None:
            raise payload.refused from exc
        if code is None:
            api.metrics.observe(method, None, time.perf_counter() - started)
        raise
    except TimeoutError:
        if code is None:
            api.metrics.observe(method, None, time.perf_counter() - started)
        raise


class CallOptions(TypedDict, total=False):
    """`call`'s keyword options, which `request` and `request_ok` pass through."""

    query: Query | None
    body: Any
    content_type: str | None
    request_timeout: float
    accept: str
    headers: Mapping[str, str] | None
    fence: Fence | None


async def request(
    api: ApiClient, method: str, path: str, **options: Unpack[CallOptions]
) -> tuple[int, bytes]:
    """Like `call`, as (HTTP status, body bytes)."""
    answer = await call(api, method, path, **options)
    return answer.status, answer.body


async def request_ok(api: ApiClient, method: str, path: str, **options: Unpack[CallOptions]) -> bytes:
    """Like `request`, but raises ApiError on a non-2xx status."""
    status, data = await request(api, method, path, **options)
    if not 200 <= status < 300:
        raise ApiError.from_response(status, data)
    return data


@asynccontextmanager
async def stream(
    api: ApiClient, path: str, *, query: Query | None = None, read_timeout: float | None = None
) -> AsyncIterator[aiohttp.ClientResponse]:
    """A GET whose response is read incrementally (watches). No total timeout, only idle time."""
    session, url, headers, extra = await _prepare(api, path, None, watch=True)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=DEFAULT_TIMEOUT, sock_read=read_timeout)
    started = time.perf_counter()
    answered = False
    try:
        async with session.get(url, params=_query(query), headers=headers, timeout=timeout, **extra) as resp:
            answered = True
            api.metrics.observe("GET", resp.status, time.perf_counter() - started)
            yield resp
    except (aiohttp.ClientError, TimeoutError):
        if not answered:
            api.metrics.observe("GET", None, time.perf_counter() - started)
        raise


async def iter_lines(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """Newline-delimited chunks of a streaming body, with no line-length limit.

    aiohttp's readline() gives up on lines longer than its buffer, and a watch event carries a
    whole object (up to etcd's 1.5 MiB), so lines are assembled by hand.
    """
    pending = bytearray()
    async for chunk in resp.content.iter_any():
        pending += chunk
        if b"\n" not in chunk:
            continue
        *lines, rest = bytes(pending).split(b"\n")
        pending = bytearray(rest)
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield bytes(pending)
