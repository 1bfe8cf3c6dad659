"""A minimal synchronous Kubernetes API client for bringing the dev cluster up.

The operator itself uses kubernetes_asyncio; this module only needs a handful of JSON
requests during startup, where a blocking client from the standard library keeps the
cluster code synchronous and free of event-loop concerns.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

JSON = dict[str, Any]


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


def _ssl_context(ca_file: Path | None) -> ssl.SSLContext:
    if ca_file is not None:
        return ssl.create_default_context(cafile=str(ca_file))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _opener(ca_file: Path | None) -> urllib.request.OpenerDirector:
    # Proxies from the environment must never see loopback traffic.
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=_ssl_context(ca_file))
    )


_PROBE_OPENER = _opener(None)


def probe(url: str, *, token: str | None = None, timeout: float = 2.0) -> bool:
    """True when GET `url` answers 200; any failure (refused, TLS, 5xx, timeout) is False.

    Certificates are not verified: this only asks a loopback port "are you up yet?",
    before the serving certificate may even exist.
    """
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _PROBE_OPENER.open(request, timeout=timeout) as response:
            return int(response.status) == 200
    except (OSError, ValueError):  # URLError and HTTPError are OSErrors
        return False


class KubeApi:
    def __init__(self, server: str, token: str, ca_file: Path | None = None) -> None:
        self.server = server.rstrip("/")
        self._token = token
        self._opener = _opener(ca_file)

    def request(self, method: str, path: str, body: JSON | None = None, *, timeout: float = 15.0) -> JSON:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(request, timeout=timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(method, path, exc.code, exc.read().decode(errors="replace")) from None
        result: JSON = json.loads(payload) if payload else {}
        return result

    def get(self, path: str) -> JSON:
        return self.request("GET", path)

    def post(self, path: str, body: JSON) -> JSON:
        return self.request("POST", path, body)
