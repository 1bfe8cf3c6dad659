"""Binding a pod to a node: POST pods/{name}/binding with a v1 Binding."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, call
from policy_scheduler.kube.fence import Fence
from policy_scheduler.kube.paths import pod_path
from policy_scheduler.kube.retry import Answer, RetryPolicy, Sleep, with_retries
from policy_scheduler.scheduler.framework.interfaces import AlreadyBound, NotLeading
from policy_scheduler.scheduler.lru import BoundedLru

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


class BindError(ApiError):
    """The binding was refused (status 0: no answer). Conflict and not-found are told apart:
    409 means the pod is already bound or was replaced (uid precondition), 404 that it is gone."""


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


class UnsettledBinds:
    """Pods whose last binding may have gone through although it failed for us: an attempt's
    answer was lost (no answer, or a 5xx that may come after the write) and the retries ended in
    a failure. The pod goes back to the queue; if the watch has not shown it bound by the time it
    is bound again, that binding's 409 is read back instead of taken as a refusal. Keyed by
    namespace, name and uid; the oldest are forgotten beyond `limit`."""

    def __init__(self, limit: int = 4096) -> None:
        self._nodes: BoundedLru[tuple[str, str, str], str] = BoundedLru(limit)

    def node(self, namespace: str, name: str, uid: str) -> str | None:
        """The node of the unsettled binding of this pod, if there is one."""
        return self._nodes.get((namespace, name, uid))

    def unsettled(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self._nodes.put((namespace, name, uid), node_name)

    def settled(self, namespace: str, name: str, uid: str) -> None:
        self._nodes.pop((namespace, name, uid))

    def __len__(self) -> int:
        return len(self._nodes)


# Binding is made idempotent by reading the pod back, so it is safe to retry: a POST whose
# answer was lost (API server restarting) is resolved instead of forgetting a bound pod.
# Delays in [0.5 s, 1 s), then doubling: never a tight loop against a failing server.
BIND_RETRY = RetryPolicy(initial=1.0, cap=10.0, max_attempts=None, deadline=30.0, min_share=0.5)
READ_BACK_RETRY = RetryPolicy(initial=1.0, cap=10.0, max_attempts=4, min_share=0.5)


async def bind(
    api: ApiClient,
    namespace: str,
    name: str,
    uid: str,
    node_name: str,
    *,
    unsettled: UnsettledBinds | None = None,
    sleep: Sleep = asyncio.sleep,
    fence: Fence | None = None,
) -> None:
    """Bind the pod; raises BindError on a refusal or when the server can't be reached, and
    NotLeading when `fence` refuses an attempt (kube.fence).

    No answer, 429 and 5xx are retried (with backoff, honouring Retry-After). A 409 after a
    lost answer (of this call, or of an earlier call recorded in `unsettled`) is read back: the
    pod, same uid, bound to this node is success (our earlier attempt went through); bound to
    the node of an earlier call's unsettled binding raises AlreadyBound. The server answers 201
    with a Status object: success is judged by the code.
    """
    path = binding_path(namespace, name)
    body = binding_body(namespace, name, uid, node_name)
    attempts = 0
    record = unsettled if unsettled is not None else UnsettledBinds()  # none kept: this call only
    earlier = record.node(namespace, name, uid)

    async def post() -> Answer:
        nonlocal attempts
        attempts += 1
        return await call(api, "POST", path, body=body, fence=fence)

    try:
        answer = await with_retries(
            post, BIND_RETRY, connection_errors=CONNECTION_ERRORS, sleep=sleep, what="bind"
        )
    except CONNECTION_ERRORS as exc:
        record.unsettled(namespace, name, uid, node_name)
        raise BindError(0, type(exc).__name__, str(exc)) from exc
    except NotLeading:
        if attempts > 1:  # an earlier attempt's answer was lost: it may have gone through
            record.unsettled(namespace, name, uid, node_name)
        raise
    if 200 <= answer.status < 300:
        record.settled(namespace, name, uid)
        log.debug("bound", extra={"pod": f"{namespace}/{name}", "node": node_name})
        return
    if answer.status == 409 and (attempts > 1 or earlier is not None):
        bound_to = await _bound_node(api, namespace, name, uid, sleep)
        if bound_to is None:  # still unknown
            record.unsettled(namespace, name, uid, earlier or node_name)
        else:
            record.settled(namespace, name, uid)
        if bound_to == node_name:
            log.info(
                "bound by an earlier attempt whose answer was lost", extra={"pod": f"{namespace}/{name}"}
            )
            return
        if bound_to is not None and bound_to == earlier:
            raise AlreadyBound(f"{namespace}/{name}", bound_to)
    elif attempts > 1 or answer.status >= 500:
        # An earlier attempt may have gone through: read back this pod's next 409.
        record.unsettled(namespace, name, uid, node_name)
    elif answer.status == 404:  # the pod is gone
        record.settled(namespace, name, uid)
    err = ApiError.from_answer(answer)
    raise BindError(err.status, err.reason, err.message)


async def _bound_node(api: ApiClient, namespace: str, name: str, uid: str, sleep: Sleep) -> str | None:
    """The node this pod (same uid) is bound to; None if it is not bound, was replaced, or
    could not be read."""
    try:
        answer = await with_retries(
            lambda: call(api, "GET", pod_path(namespace, name)),
            READ_BACK_RETRY,
            connection_errors=CONNECTION_ERRORS,
            sleep=sleep,
            what="bind read-back",
        )
    except CONNECTION_ERRORS:
        return None
    if answer.status != 200:
        return None
    pod = msgspec.json.decode(answer.body, type=_BoundPod)
    if uid and pod.metadata.uid != uid:
        return None
    return pod.spec.node_name or None


class _Meta(msgspec.Struct):
    uid: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _BoundPod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
