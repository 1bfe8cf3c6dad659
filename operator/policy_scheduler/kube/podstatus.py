"""Writing the scheduler's verdict into pod status: PodScheduled=False and nominatedNodeName.

Both are strategic-merge patches of pods/status: conditions merge by `type`, so only the
PodScheduled entry is touched, and a lastTransitionTime left out of the patch keeps the stored
one, which is what we want when the condition was already False.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects.cluster_objects import PodConditionInfo
from policy_scheduler.kube.client import CONNECTION_ERRORS, STRATEGIC_MERGE_PATCH, ApiError, call
from policy_scheduler.kube.fence import Fence
from policy_scheduler.kube.paths import pod_path
from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries
from policy_scheduler.kube.timings import DEFAULTS

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"


def rfc3339(ts: datetime | float) -> str:
    if not isinstance(ts, datetime):
        ts = datetime.fromtimestamp(ts, UTC)
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_path(namespace: str, name: str) -> str:
    return pod_path(namespace, name) + "/status"


def unschedulable_patch(
    *,
    reason: str,
    message: str,
    current: PodConditionInfo | None,
    now: datetime | float,
    nominated_node: str | None = None,
    uid: str = "",
) -> dict[str, Any] | None:
    """The patch body, or None when the pod already says exactly this (nothing to write).

    `current` is the pod's PodScheduled condition as last seen (None: absent or unknown, so a
    transition time is sent). `nominated_node` None leaves the nomination alone, "" clears it.
    """
    unchanged = (
        current is not None
        and current.status == "False"
        and current.reason == reason
        and current.message == message
    )
    if unchanged and nominated_node is None:
        return None
    condition: dict[str, Any] = {
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": reason,
        "message": message,
    }
    if current is None or current.status != "False":
        condition["lastTransitionTime"] = rfc3339(now)
    status: dict[str, Any] = {"conditions": [condition]}
    if nominated_node is not None:
        status["nominatedNodeName"] = nominated_node or None
    body: dict[str, Any] = {"status": status}
    if uid:
        body["metadata"] = {"uid": uid}  # a recreated pod with the same name is refused
    return body


def nominated_node_patch(node_or_empty: str) -> dict[str, Any]:
    """null deletes the field in a strategic-merge patch, clearing the nomination."""
    return {"status": {"nominatedNodeName": node_or_empty or None}}


async def patch_status(
    api: ApiClient,
    namespace: str,
    name: str,
    body: dict[str, Any],
    *,
    retry: RetryPolicy = DEFAULTS.api.status_patch_retry,
    fence: Fence | None = None,
) -> bool:
    """Apply a strategic-merge patch to pods/status, retrying transient failures.

    Returns False when the pod no longer exists; raises ApiError on a permanent refusal or
    when retries run out, NotLeading when `fence` refuses an attempt.
    """
    path = status_path(namespace, name)

    async def once() -> Answer:
        return await call(api, "PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH, fence=fence)

    try:
        answer = await with_retries(
            once, retry, connection_errors=CONNECTION_ERRORS, what=f"patch pod status {namespace}/{name}"
        )
    except CONNECTION_ERRORS as exc:
        raise ApiError(0, type(exc).__name__, str(exc)) from exc
    if 200 <= answer.status < 300:
        return True
    if answer.status == 404:
        return False
    raise ApiError.from_answer(answer)


async def set_unschedulable_condition(
    api: ApiClient,
    pod_ns: str,
    pod_name: str,
    *,
    reason: str,
    message: str,
    current: PodConditionInfo | None = None,
    nominated_node: str | None = None,
    uid: str = "",
    fence: Fence | None = None,
) -> bool:
    """Set PodScheduled=False (reason Unschedulable or SchedulerError) with `message`.

    Returns True when a patch was written, False when nothing needed writing or the pod is gone.
    """
    body = unschedulable_patch(
        reason=reason,
        message=message,
        current=current,
        now=datetime.now(UTC),
        nominated_node=nominated_node,
        uid=uid,
    )
    if body is None:
        return False
    return await patch_status(api, pod_ns, pod_name, body, fence=fence)


async def set_nominated_node(
    api: ApiClient, ns: str, name: str, node_or_empty: str, *, fence: Fence | None = None
) -> bool:
    """Set status.nominatedNodeName, or clear it with "". False when the pod is gone."""
    return await patch_status(api, ns, name, nominated_node_patch(node_or_empty), fence=fence)
