"""The API client reads the proxy environment once at start, not per request."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy_scheduler.kube.client import make_api_client

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
        assert api.rest_client.proxy == "http://proxy.example:3128"
        assert api.rest_client.proxy_headers["Proxy-Authorization"].startswith("Basic ")
        assert api.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_no_proxy_is_respected(kubeconfig: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    api = await make_api_client(kubeconfig)
    try:
        assert not api.rest_client.proxy
        assert api.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_without_proxy_environment(kubeconfig: str) -> None:
    api = await make_api_client(kubeconfig)
    try:
        assert not api.rest_client.proxy
        assert api.rest_client.pool_manager.trust_env is False  # no lookup per request
    finally:
        await api.close()
