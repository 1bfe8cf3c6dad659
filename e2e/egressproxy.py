"""A test-only stand-in for konnectivity: the API server's "cluster" egress (pods/proxy, among
others) as an HTTP CONNECT proxy on a UNIX socket that sends every tunnel to the same port on
127.0.0.1. Pod addresses are kwok's, not this machine's, so nothing is ever dialled but loopback;
the API server refuses to proxy to a loopback pod address itself ("address not allowed").

    proxy = EgressProxy(workdir / "egress.sock"); proxy.start()
    DevCluster(..., apiserver_flags=[f"--egress-selector-config-file={proxy.write_config(workdir)}"])
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

import yaml

LOOPBACK = "127.0.0.1"


class EgressProxy:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.targets: list[str] = []  # host:port of every CONNECT, in order
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="egress-proxy", daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def write_config(self, directory: Path) -> Path:
        """An EgressSelectorConfiguration routing the "cluster" egress through this proxy."""
        path = directory / "egress-selector.yaml"
        config = {
            "apiVersion": "apiserver.k8s.io/v1beta1",
            "kind": "EgressSelectorConfiguration",
            "egressSelections": [
                {
                    "name": "cluster",
                    "connection": {
                        "proxyProtocol": "HTTPConnect",
                        "transport": {"uds": {"udsName": str(self.socket_path)}},
                    },
                }
            ],
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_unix_server(self._tunnel, path=str(self.socket_path))

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                return
            self.targets.append(target)
            port = int(target.rsplit(":", 1)[1])
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, port)
            except OSError:
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
                return
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(ConnectionError, RuntimeError):
            writer.close()
