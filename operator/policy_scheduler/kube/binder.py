"""Binding a pod to a node: POST pods/{name}/binding with a v1 Binding."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, request

log = logging.getLogger(__name__)


class BindError(ApiError):
    """The binding was refused (status 0: no answer). Conflict and not-found are told apart:
    409 means the pod is already bound or was replaced (uid precondition), 404 that it is gone."""

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404


def binding_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/binding"


def binding_body(namespace: str, name: str, uid: str, node_name: str) -> dict[str, Any]:
    """v1.Binding as kube-scheduler's DefaultBinder sends it; the uid guards against binding a
    newer pod that reused the name."""
    metadata: dict[str, str] = {"name": name, "namespace": namespace}
    if uid:
        metadata["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


async def bind(api: Any, namespace: str, name: str, uid: str, node_name: str) -> None:
    """Bind the pod; raises BindError on any non-2xx answer or when the server can't be reached.

    The server answers 201 with a Status object: success is judged by the status code alone.
    """
    try:
        status, body = await request(
            api, "POST", binding_path(namespace, name), body=binding_body(namespace, name, uid, node_name)
        )
    except CONNECTION_ERRORS as exc:
        raise BindError(0, type(exc).__name__, str(exc)) from exc
    if not 200 <= status < 300:
        err = ApiError.from_response(status, body)
        raise BindError(err.status, err.reason, err.message)
    log.debug("bound", extra={"pod": f"{namespace}/{name}", "node": node_name})
