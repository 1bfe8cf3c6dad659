"""The API client reads the proxy environment once at start, not per request, and keeps
requests on a bounded pool of connections apart from the watches'."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_scheduler.kube.client import REQUEST_CONNECTIONS, _prepare, make_api_client

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.1.2.3:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


async def test_proxy_from_environment_becomes_explicit(
    kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example:3128")
    api = await make_api_client(kubeconfig)
    try:
        options = (await _prepare(api, "/api/v1/pods", None))[3]
        assert options["proxy"] == "http://proxy.example:3128"
        assert options["proxy_headers"]["Proxy-Authorization"].startswith("Basic ")
        assert not api.request_session.trust_env  # no lookup per request
        assert not api.watch_session.trust_env
    finally:
        await api.close()


async def test_no_proxy_is_respected(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    api = await make_api_client(kubeconfig)
    try:
        assert (await _prepare(api, "/api/v1/pods", None))[3]["proxy"] is None
    finally:
        await api.close()


async def test_without_proxy_environment(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig)
    try:
        options = (await _prepare(api, "/api/v1/pods", None, watch=True))[3]
        assert (options["proxy"], options["proxy_headers"]) == (None, None)
        assert not api.request_session.trust_env  # no lookup per request
    finally:
        await api.close()


async def test_a_proxy_of_the_kubeconfig_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    path = tmp_path / "kubeconfig"
    path.write_text(
        KUBECONFIG.replace(
            "insecure-skip-tls-verify: true",
            "insecure-skip-tls-verify: true, proxy-url: http://kc-proxy:8080",
        )
    )
    api = await make_api_client(str(path))
    try:
        assert (await _prepare(api, "/api/v1/pods", None))[3]["proxy"] == "http://kc-proxy:8080"
    finally:
        await api.close()


async def test_requests_and_watches_have_their_own_pools(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig)
    try:
        requests, watches = api.request_session, api.watch_session
        assert requests.connector is not None
        assert watches.connector is not None
        pools = (requests.connector, watches.connector)
        assert requests.connector is not watches.connector
        assert requests.connector.limit == REQUEST_CONNECTIONS
        assert watches.connector.limit == 100  # kubernetes_asyncio's default: one per watch
        assert (await _prepare(api, "/api/v1/pods", None))[0] is requests
        assert (await _prepare(api, "/api/v1/pods", None, watch=True))[0] is watches
    finally:
        await api.close()
    assert requests.closed
    assert watches.closed
    assert all(pool.closed for pool in pools)


async def test_request_pool_size_is_the_callers(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig, request_connections=4)
    try:
        assert api.request_session.connector is not None
        assert api.watch_session.connector is not None
        assert api.request_session.connector.limit == 4
        assert api.watch_session.connector.limit == 100  # the watches' pool is unchanged
    finally:
        await api.close()
