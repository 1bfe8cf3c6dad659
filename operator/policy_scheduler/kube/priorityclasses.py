"""The few calls the PriorityClassMirror controller makes on native scheduling.k8s.io/v1 PriorityClasses.

Bodies are plain JSON dicts; every non-2xx answer other than the documented ones raises ApiError.
Writes are the leader's: they go out only while `fence` allows (else NotLeading).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import msgspec

from policy_scheduler.kube.client import MERGE_PATCH, ApiError, request
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.kube.paths import PRIORITY_CLASSES

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

API_VERSION = "scheduling.k8s.io/v1"
KIND = "PriorityClass"


def priority_class_path(name: str) -> str:
    return f"{PRIORITY_CLASSES}/{quote(name, safe='')}"


def _decode(body: bytes) -> dict[str, Any]:
    return cast(dict[str, Any], msgspec.json.decode(body))


async def get_priority_class(api: ApiClient, name: str) -> dict[str, Any] | None:
    """The PriorityClass, or None if there is none of that name."""
    status, body = await request(api, "GET", priority_class_path(name))
    if status == 404:
        return None
    if status != 200:
        raise ApiError.from_response(status, body)
    return _decode(body)


async def create_priority_class(
    api: ApiClient, obj: dict[str, Any], fence: Fence = UNFENCED
) -> dict[str, Any]:
    status, body = await request(api, "POST", PRIORITY_CLASSES, body=obj, fence=fence)
    if not 200 <= status < 300:
        raise ApiError.from_response(status, body)
    return _decode(body)


async def patch_priority_class(
    api: ApiClient, name: str, patch: dict[str, Any], fence: Fence = UNFENCED
) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386): null removes a field."""
    status, body = await request(
        api, "PATCH", priority_class_path(name), body=patch, content_type=MERGE_PATCH, fence=fence
    )
    if not 200 <= status < 300:
        raise ApiError.from_response(status, body)
    return _decode(body)


async def delete_priority_class(api: ApiClient, name: str, uid: str, fence: Fence = UNFENCED) -> bool:
    """Delete that very object (a precondition on its uid, so a newer one of the same name is
    never removed). False if it was already gone or has been replaced."""
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
    status, body = await request(api, "DELETE", priority_class_path(name), body=options, fence=fence)
    if status in (404, 409):
        return False
    if not 200 <= status < 300:
        raise ApiError.from_response(status, body)
    return True
