"""A small asyncio Kubernetes client for the benchmark: bulk creates, deletes, bindings and watches.

aiohttp with one keep-alive connection pool: creating thousands of pods one TLS handshake at a
time would measure the handshakes, not the scheduler.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import yaml

from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries

JSON = dict[str, Any]
IDEMPOTENT = frozenset({"GET", "DELETE"})
HARNESS_RETRY = RetryPolicy(initial=0.5, cap=5.0, max_attempts=5)
# No answer, or an answer cut short (ClientPayloadError is not a ClientConnectionError).
RETRIED_ERRORS: tuple[type[Exception], ...] = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:300]}")
        self.status = status


@dataclass(frozen=True)
class Credentials:
    server: str
    token: str
    ca_pem: bytes

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Credentials:
        """The dev cluster's kubeconfig shape: one cluster with CA data, one bearer token."""
        doc = yaml.safe_load(path.read_text())
        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        ca = base64.b64decode(cluster["certificate-authority-data"])
        return cls(str(cluster["server"]).rstrip("/"), str(user["token"]), ca)


class Client:
    def __init__(self, creds: Credentials, *, connections: int = 32) -> None:
        self.creds = creds
        context = ssl.create_default_context(cadata=creds.ca_pem.decode())
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=context, limit=connections),
            headers={"Authorization": f"Bearer {creds.token}", "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            read_bufsize=2**21,  # one watch event per line; pods with long specs exceed 64 KiB rarely
        )

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self, method: str, path: str, body: JSON | None = None, *, params: dict[str, str] | None = None
    ) -> JSON:
        url = self.creds.server + path + (f"?{urlencode(params)}" if params else "")

        async def send() -> Answer:
            async with self._session.request(method, url, json=body) as response:
                return Answer(response.status, await response.read())

        # The API server may close a kept-alive connection under the load of a big cluster, even
        # in the middle of an answer: GETs and DELETEs are retried (POSTs would double-create, and
        # say so with a 409 anyway).
        if method in IDEMPOTENT:
            answer = await with_retries(send, HARNESS_RETRY, connection_errors=RETRIED_ERRORS, what=method)
        else:
            answer = await send()
        text = answer.body.decode()
        if answer.status >= 400:
            raise ApiError(method, path, answer.status, text)
        result: JSON = json.loads(text) if text else {}
        return result

    async def get(self, path: str, **params: str) -> JSON:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: JSON) -> JSON:
        return await self.request("POST", path, body)

    async def create(self, path: str, body: JSON, *, exist_ok: bool = False) -> None:
        try:
            await self.post(path, body)
        except ApiError as exc:
            if not (exist_ok and exc.status == 409):
                raise

    async def delete(self, path: str, **params: str) -> None:
        try:
            await self.request("DELETE", path, params=params or None)
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def watch(self, path: str, resource_version: str, **params: str) -> AsyncIterator[JSON]:
        """Watch events from `resource_version` until the server closes the stream."""
        query = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "false", **params}
        url = f"{self.creds.server}{path}?{urlencode(query)}"
        async with self._session.get(url) as response:
            if response.status >= 400:
                raise ApiError("WATCH", path, response.status, await response.text())
            async for line in response.content:
                if line.strip():
                    event: JSON = json.loads(line)
                    yield event
