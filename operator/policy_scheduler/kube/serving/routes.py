"""What the operator serves: health, /metrics, and /debug/explain/{namespace}/{name}, each with
the access a caller needs (the attributes of its SubjectAccessReview)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from policy_scheduler.kube.serving.identity import Attributes, ResourceAttributes
from policy_scheduler.observability.metrics import REGISTRY
from policy_scheduler.scheduler.diagnosis_recorder import RUNNING, DiagnosisRecorder, Explanation

EXPLAIN_PATH = "/debug/explain"
NOT_RECORDED = (
    "no scheduling attempt recorded for this pod: it is not pending for one of our profiles, it was "
    "scheduled long ago, or this replica is not the leader"
)

# Where a pod stands in its node's eviction order, if that node is under pressure (node pressure).
Standing = Callable[[str, str], Awaitable[Mapping[str, Any] | None]]
NOT_RECORDED_RUNNING = "no scheduling attempt recorded for this pod; its node is under pressure"
# Whether the pod's placement pushes its node below an eviction threshold (node pressure).
Placement = Callable[[Explanation], Mapping[str, Any] | None]

# A route's access, from its match: routes without one need `get` on their path (non-resource).
RouteAccess = Callable[[web.Request], Attributes]
ACCESS: web.AppKey[dict[str, RouteAccess]] = web.AppKey("access", dict)


def explain_access(request: web.Request) -> Attributes:
    """Explaining a pod needs `get` on that pod: a tenant sees only its own pods, and the answer
    does not tell whether a pod it may not see exists."""
    return ResourceAttributes(
        verb="get",
        resource="pods",
        namespace=request.match_info["namespace"],
        name=request.match_info["name"],
    )


def add_routes(
    app: web.Application,
    ready: Callable[[], bool],
    recorder: DiagnosisRecorder | None,
    standing: Standing | None = None,
    placement: Placement | None = None,
) -> None:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def alive(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="caches not synced")

    app.router.add_get("/metrics", metrics)
    app.router.add_get("/livez", alive)
    app.router.add_get("/healthz", alive)
    app.router.add_get("/readyz", readyz)
    if recorder is None:
        return

    async def explain(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = recorder.get(namespace, name)
        pressure = await standing(namespace, name) if standing is not None else None
        if found is None and pressure is None:
            return web.json_response(
                {"error": NOT_RECORDED, "namespace": namespace, "name": name}, status=404
            )
        if found is None:
            assert pressure is not None
            found = Explanation(
                namespace, name, "", RUNNING, node=str(pressure.get("node", "")), message=NOT_RECORDED_RUNNING
            )
        if pressure is not None:
            found = dataclasses.replace(found, pressure=pressure)
        checked = placement(found) if placement is not None else None
        if checked is not None:
            found = dataclasses.replace(found, placement=checked)
        return web.json_response(found.to_json())

    route = app.router.add_get(EXPLAIN_PATH + "/{namespace}/{name}", explain)
    app[ACCESS][route.resource.canonical if route.resource else ""] = explain_access
