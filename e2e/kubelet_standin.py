"""A test-only stand-in for the kubelet API that kwok does not serve: `/stats/summary` (the
Summary API) and `/configz`, over HTTPS on loopback, one port per node.

The API server reaches a node's kubelet at its InternalIP and `status.daemonEndpoints.
kubeletEndpoint.Port`; a kwok node's InternalIP is not on this machine, so the API server's
"cluster" egress goes through e2e/egressproxy.py, which sends every tunnel to the same port on
127.0.0.1: a port per node tells the nodes apart. What each node answers is what the test sets: a Summary is made at each request (so its times
are fresh), a node without one answers 404 as a kubelet without the endpoint would.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from policy_scheduler.kube.serving.certificates import self_signed_pem

LOOPBACK = "127.0.0.1"


class KubeletStandIn:
    def __init__(self, directory: Path, nodes: list[str]) -> None:
        cert, key = self_signed_pem("kubelet", [LOOPBACK])
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "kubelet.crt").write_bytes(cert)
        (directory / "kubelet.key").write_bytes(key)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(directory / "kubelet.crt", directory / "kubelet.key")
        self.summaries: dict[str, Callable[[], dict[str, Any]]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []  # (node, path)
        self._servers = {node: self._server(node) for node in nodes}
        self._threads: list[threading.Thread] = []

    def port(self, node: str) -> int:
        return int(self._servers[node].server_address[1])

    def _server(self, node: str) -> ThreadingHTTPServer:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                standin.requests.append((node, self.path))
                summary = standin.summaries.get(node)
                config = standin.configs.get(node)
                if self.path.startswith("/stats/summary") and summary is not None:
                    self._json(summary())
                elif self.path.startswith("/configz") and config is not None:
                    self._json({"kubeletconfig": config})
                else:
                    self._not_found()

            def _not_found(self) -> None:
                data = b"404 page not found\n"  # what the kubelet's Go server answers
                self.send_response(404)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        server.socket = self.context.wrap_socket(server.socket, server_side=True)
        return server

    def start(self) -> None:
        for node, server in self._servers.items():
            thread = threading.Thread(target=server.serve_forever, name=f"kubelet-{node}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
