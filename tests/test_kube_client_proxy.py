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
        for rest in (api.rest_client, api.request_client):
            assert rest.proxy == "http://proxy.example:3128"
            assert rest.proxy_headers["Proxy-Authorization"].startswith("Basic ")
            assert rest.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_no_proxy_is_respected(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    api = await make_api_client(kubeconfig)
    try:
        for rest in (api.rest_client, api.request_client):
            assert not rest.proxy
            assert rest.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_without_proxy_environment(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig)
    try:
        for rest in (api.rest_client, api.request_client):
            assert not rest.proxy
            assert rest.pool_manager.trust_env is False  # no lookup per request
    finally:
        await api.close()


async def test_requests_and_watches_have_their_own_pools(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig)
    try:
        requests, watches = api.request_client.pool_manager, api.rest_client.pool_manager
        assert requests is not watches
        assert requests.connector.limit == REQUEST_CONNECTIONS
        assert watches.connector.limit == 100  # kubernetes_asyncio's default: one per watch
        assert (await _prepare(api, "/api/v1/pods", None))[0] is requests
        assert (await _prepare(api, "/api/v1/pods", None, watch=True))[0] is watches
    finally:
        await api.close()
    assert requests.closed
    assert watches.closed


async def test_request_pool_size_is_the_callers(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig, request_connections=4)
    try:
        assert api.request_client.pool_manager.connector.limit == 4
        assert api.rest_client.pool_manager.connector.limit == 100  # the watches' pool is unchanged
    finally:
        await api.close()
