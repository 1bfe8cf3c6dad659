"""The benchmark's client retries a GET whose answer was cut short by the API server.

A 5000-node run ended in a traceback when the server closed a connection in the middle of a
DELETE's answer: ClientPayloadError is not a ClientConnectionError."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from policy_scheduler.bench_e2e import api
from policy_scheduler.kube.retry import RetryPolicy

CUT_SHORT = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}"
WHOLE = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{"ok": true}'


async def test_an_answer_cut_short_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [CUT_SHORT, WHOLE]
    served: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        answer = answers.pop(0)
        served.append(answer)
        writer.write(answer)
        await writer.drain()
        writer.close()  # the cut-short answer ends here, 98 bytes early

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(api, "HARNESS_RETRY", RetryPolicy(initial=0.001, cap=0.001, max_attempts=3))
    client = api.Client.__new__(api.Client)
    client.creds = api.Credentials(f"http://127.0.0.1:{port}", "token", b"")
    client._session = aiohttp.ClientSession()
    try:
        assert await client.get("/api/v1/namespaces/x") == {"ok": True}
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert served == [CUT_SHORT, WHOLE]
