"""One aiohttp server: /metrics (Prometheus), /livez, /readyz (caches synced), plus whatever
routes the caller adds (e.g. /debug/explain)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from policy_scheduler.observability.metrics import REGISTRY


def make_app(
    ready: Callable[[], bool], routes: Callable[[web.Application], None] | None = None
) -> web.Application:
    async def metrics_handler(_: web.Request) -> web.Response:
        body = generate_latest(REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def livez(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="caches not synced")

    app = web.Application()
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    if routes is not None:
        routes(app)
    return app


async def start_server(
    host: str, port: int, ready: Callable[[], bool], routes: Callable[[web.Application], None] | None = None
) -> web.AppRunner:
    runner = web.AppRunner(make_app(ready, routes), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
