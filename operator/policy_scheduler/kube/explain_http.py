"""GET /debug/explain/{namespace}/{name}: the recorder's explanation of one pod, as JSON."""

from __future__ import annotations

from aiohttp import web

from policy_scheduler.scheduler.diagnosis_recorder import DiagnosisRecorder

EXPLAIN_PATH = "/debug/explain"
NOT_RECORDED = (
    "no scheduling attempt recorded for this pod: it is not pending for one of our profiles, it was "
    "scheduled long ago, or this replica is not the leader"
)


def add_explain_routes(app: web.Application, recorder: DiagnosisRecorder) -> None:
    async def explain(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = recorder.get(namespace, name)
        if found is None:
            return web.json_response(
                {"error": NOT_RECORDED, "namespace": namespace, "name": name}, status=404
            )
        return web.json_response(found.to_json())

    app.router.add_get(EXPLAIN_PATH + "/{namespace}/{name}", explain)
