"""Binding a pod to a node: POST pods/{name}/binding with a v1 Binding."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, call
from policy_scheduler.kube.paths import pod_path
from policy_scheduler.kube.retry import Answer, RetryPolicy, Sleep, with_retries

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
    return pod_path(namespace, name) + "/binding"


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


# Binding is made idempotent by reading the pod back, so it is safe to retry: a POST whose
# answer was lost (API server restarting) is resolved instead of forgetting a bound pod.
# Delays in [0.5 s, 1 s), then doubling: never a tight loop against a failing server.
BIND_RETRY = RetryPolicy(initial=1.0, cap=10.0, max_attempts=None, deadline=30.0, min_share=0.5)
READ_BACK_RETRY = RetryPolicy(initial=1.0, cap=10.0, max_attempts=4, min_share=0.5)


async def bind(
    api: Any, namespace: str, name: str, uid: str, node_name: str, *, sleep: Sleep = asyncio.sleep
) -> None:
    """Bind the pod; raises BindError on a refusal or when the server can't be reached.

    No answer, 429 and 5xx are retried (with backoff, honouring Retry-After). A 409 after a
    lost answer is success when the pod, same uid, is bound to this node: our earlier attempt
    went through. The server answers 201 with a Status object: success is judged by the code.
    """
    path = binding_path(namespace, name)
    body = binding_body(namespace, name, uid, node_name)
    attempts = 0

    async def post() -> Answer:
        nonlocal attempts
        attempts += 1
        return await call(api, "POST", path, body=body)

    try:
        answer = await with_retries(
            post, BIND_RETRY, connection_errors=CONNECTION_ERRORS, sleep=sleep, what="bind"
        )
    except CONNECTION_ERRORS as exc:
        raise BindError(0, type(exc).__name__, str(exc)) from exc
    if 200 <= answer.status < 300:
        log.debug("bound", extra={"pod": f"{namespace}/{name}", "node": node_name})
        return
    if (
        answer.status == 409
        and attempts > 1
        and await _bound_here(api, namespace, name, uid, node_name, sleep)
    ):
        log.info("bound by an earlier attempt whose answer was lost", extra={"pod": f"{namespace}/{name}"})
        return
    err = ApiError.from_answer(answer)
    raise BindError(err.status, err.reason, err.message)


async def _bound_here(api: Any, namespace: str, name: str, uid: str, node_name: str, sleep: Sleep) -> bool:
    try:
        answer = await with_retries(
            lambda: call(api, "GET", pod_path(namespace, name)),
            READ_BACK_RETRY,
            connection_errors=CONNECTION_ERRORS,
            sleep=sleep,
            what="bind read-back",
        )
    except CONNECTION_ERRORS:
        return False
    if answer.status != 200:
        return False
    pod = msgspec.json.decode(answer.body, type=_BoundPod)
    return (not uid or pod.metadata.uid == uid) and pod.spec.node_name == node_name


class _Meta(msgspec.Struct):
    uid: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _BoundPod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
