"""Fenced writes through the real client against a loopback HTTP server: a refused write never
reaches the server, not even when the fence closes after the request started (the body's own
check), and the client stays usable."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from policy_scheduler.kube.client import call, make_api_client
from policy_scheduler.kube.fence import resource_of
from policy_scheduler.observability import metrics
from policy_scheduler.scheduler.framework.interfaces import NotLeading

BINDING = "/api/v1/namespaces/ns/pods/p/binding"


class CountingFence:
    """Allows the first `allowed` checks, refuses every later one."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.checks = 0

    def may_act(self) -> bool:
        return self.checks < self.allowed

    def check(self) -> None:
        self.checks += 1
        if self.checks > self.allowed:
            raise NotLeading("lease lapsed")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Any, list[bytes]]]:
    seen: list[bytes] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.read())
        return web.json_response({"kind": "Status", "status": "Success"}, status=201)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    api = await make_api_client(str(kubeconfig))
    try:
        yield api, seen
    finally:
        await api.close()
        await runner.cleanup()


def refusals(resource: str) -> float:
    value = metrics.REGISTRY.get_sample_value("policy_scheduler_fenced_writes_total", {"resource": resource})
    return value or 0.0


async def test_an_open_fence_lets_the_write_through(server: tuple[Any, list[bytes]]) -> None:
    api, seen = server
    fence = CountingFence(allowed=10)
    answer = await call(api, "POST", BINDING, body={"target": "n1"}, fence=fence)
    assert answer.status == 201
    assert seen == [b'{"target":"n1"}']
    assert fence.checks == 2  # before the request, and as its body is written


async def test_a_closed_fence_refuses_before_the_request(server: tuple[Any, list[bytes]]) -> None:
    api, seen = server
    before = refusals("pods/binding")
    with pytest.raises(NotLeading):
        await call(api, "POST", BINDING, body={"target": "n1"}, fence=CountingFence(allowed=0))
    assert seen == []
    assert refusals("pods/binding") == before + 1


async def test_a_fence_closing_after_the_request_started_stops_its_body(
    server: tuple[Any, list[bytes]],
) -> None:
    """The check as the body is handed to the connection catches a pause that happened after the
    first check (a wait for a connection, a frozen process): nothing reaches the server."""
    api, seen = server
    await call(api, "GET", "/warm-up")  # a pooled connection exists: the refused body would reuse it
    seen.clear()
    with pytest.raises(NotLeading):
        await call(api, "POST", BINDING, body={"target": "n1"}, fence=CountingFence(allowed=1))
    assert seen == []
    answer = await call(api, "POST", BINDING, body={"target": "n2"}, fence=CountingFence(allowed=2))
    assert answer.status == 201
    assert seen == [b'{"target":"n2"}']


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        (BINDING, "pods/binding"),
        ("/api/v1/namespaces/ns/pods/p/status", "pods/status"),
        ("/api/v1/namespaces/ns/pods/p/eviction", "pods/eviction"),
        ("/api/v1/namespaces/ns/pods/p", "pods"),
        ("/apis/scheduling.k8s.io/v1/priorityclasses/high", "priorityclasses"),
        (
            "/apis/scheduling.policy-scheduler.io/v1alpha1/schedulingprofiles/a/status",
            "schedulingprofiles/status",
        ),
        ("/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status", "resourceclaims/status"),
        ("/api/v1/persistentvolumes/pv-1", "persistentvolumes"),
    ],
)
def test_refusals_are_counted_by_resource(path: str, resource: str) -> None:
    assert resource_of(path) == resource
