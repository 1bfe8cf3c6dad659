"""The ClaimWriter (scheduler.dra.services) on the API: what DynamicResources writes on claims.

bindClaim as upstream: re-read on conflict, refuse a deleted claim or one allocated elsewhere,
add the finalizer with an update, then allocation + reservedFor with an update of the status.
Deallocation (PostFilter) and unreserve run in the background: a scheduling cycle never waits.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec

from policy_scheduler.apiobjects.dra import (
    allocation_to_json,
    claim_from_json,
    extended_claim_status_to_json,
    extended_claim_to_json,
)
from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, request, request_ok
from policy_scheduler.kube.fence import UNFENCED, Fence, NotLeading
from policy_scheduler.kube.paths import DRA_API
from policy_scheduler.kube.podstatus import patch_status
from policy_scheduler.scheduler.dra.extended import ExtendedResourceClaimStatus
from policy_scheduler.scheduler.dra.model import CLAIM_FINALIZER, AllocationResult, ResourceClaim
from policy_scheduler.scheduler.dra.services import ClaimWriteError
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)
CONFLICT_RETRIES = 5  # retry.DefaultRetry: 5 steps
_FAILURES: tuple[type[BaseException], ...] = (ApiError, ClaimWriteError, *CONNECTION_ERRORS)
# What a background write (deallocate, unreserve) logs and drops; NotLeading too: the next leader
# sees the claim as it is.
_BACKGROUND_FAILURES: tuple[type[BaseException], ...] = (*_FAILURES, NotLeading)


def claims_path(namespace: str) -> str:
    return f"{DRA_API}/namespaces/{quote(namespace, safe='')}/resourceclaims"


def claim_path(namespace: str, name: str) -> str:
    return f"{claims_path(namespace)}/{quote(name, safe='')}"


class ApiClaimWriter:
    def __init__(self, api: ApiClient, fence: Fence = UNFENCED) -> None:
        self.api = api
        self.fence = fence  # claims are written only while we may act as the leader
        self._tasks: set[asyncio.Task[None]] = set()

    async def _get(self, claim: ResourceClaim) -> dict[str, Any]:
        try:
            data = await request_ok(self.api, "GET", claim_path(claim.namespace, claim.name))
        except _FAILURES as e:
            raise ClaimWriteError(f"get updated claim {claim.key} after conflict: {e}") from e
        raw: dict[str, Any] = msgspec.json.decode(data)
        return raw

    async def _put(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, data = await request(self.api, "PUT", path, body=body, fence=self.fence)
        if not 200 <= status < 300:
            raise ApiError.from_response(status, data)
        out: dict[str, Any] = msgspec.json.decode(data)
        return status, out

    async def bind_claim(
        self, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod
    ) -> ResourceClaim:
        path = claim_path(claim.namespace, claim.name)
        raw: dict[str, Any] | None = None
        for _ in range(CONFLICT_RETRIES):
            if raw is None:
                raw = await self._get(claim)
            meta = raw.setdefault("metadata", {})
            status = raw.setdefault("status", {})
            if meta.get("deletionTimestamp"):
                raise ClaimWriteError(f"claim {claim.key} got deleted in the meantime")
            try:
                if allocation is not None:
                    if status.get("allocation"):
                        raise ClaimWriteError(f"claim {claim.key} got allocated elsewhere in the meantime")
                    finalizers = meta.setdefault("finalizers", [])
                    if CLAIM_FINALIZER not in finalizers:
                        finalizers.append(CLAIM_FINALIZER)
                        _, raw = await self._put(path, raw)
                        status = raw.setdefault("status", {})
                    status["allocation"] = allocation_to_json(allocation)
                reserved = status.setdefault("reservedFor", [])
                reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
                _, updated = await self._put(f"{path}/status", raw)
                return claim_from_json(updated)
            except ApiError as e:
                if e.status == 409:
                    raw = None
                    continue
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                raise ClaimWriteError(f"{what} claim {claim.key}: {e}") from e
            except CONNECTION_ERRORS as e:
                raise ClaimWriteError(f"add reservation to claim {claim.key}: {e}") from e
        raise ClaimWriteError(f"add reservation to claim {claim.key}: conflict, retries exhausted")

    def _background(self, name: str, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def deallocate(self, claim: ResourceClaim) -> None:
        self._background(f"deallocate {claim.key}", self._deallocate(claim))

    async def _deallocate(self, claim: ResourceClaim) -> None:
        # UpdateStatus of the claim as PostFilter saw it: a conflict means someone else moved on.
        path = claim_path(claim.namespace, claim.name)
        try:
            raw = await self._get(claim)
            if raw.get("metadata", {}).get("uid") != claim.uid:
                return
            status = raw.setdefault("status", {})
            for key in ("reservedFor", "allocation", "devices"):
                status.pop(key, None)
            await self._put(f"{path}/status", raw)
        except _BACKGROUND_FAILURES as e:
            log.warning("deallocating claim failed", extra={"claim": claim.key, "error": str(e)})

    def unreserve(self, claim: ResourceClaim, pod_uid: str) -> None:
        self._background(f"unreserve {claim.key}", self._unreserve(claim, pod_uid))

    async def _unreserve(self, claim: ResourceClaim, pod_uid: str) -> None:
        patch = {
            "metadata": {"uid": claim.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]},
        }
        try:
            await request_ok(
                self.api,
                "PATCH",
                f"{claim_path(claim.namespace, claim.name)}/status",
                body=patch,
                content_type="application/strategic-merge-patch+json",
                fence=self.fence,
            )
        except _BACKGROUND_FAILURES as e:
            log.warning("unreserve failed", extra={"claim": claim.key, "error": str(e)})

    # ---- extended resources backed by DRA ---------------------------------------------------------

    async def create_extended_claim(self, claim: ResourceClaim, pod: Pod) -> ResourceClaim:
        body = extended_claim_to_json(claim, pod.name, pod.uid)
        try:
            status, data = await request(
                self.api, "POST", claims_path(claim.namespace), body=body, fence=self.fence
            )
            if not 200 <= status < 300:
                raise ApiError.from_response(status, data)
        except _FAILURES as e:
            # klog.KObj of the claim with its name cleared, as upstream words it.
            raise ClaimWriteError(f"create claim for extended resources {claim.namespace}/: {e}") from e
        created: dict[str, Any] = msgspec.json.decode(data)
        return claim_from_json(created)

    async def set_extended_claim_status(self, pod: Pod, status: ExtendedResourceClaimStatus) -> None:
        body = {"status": {"extendedResourceClaimStatus": extended_claim_status_to_json(status)}}
        try:
            await patch_status(self.api, pod.namespace, pod.name, body, fence=self.fence)
        except _FAILURES as e:
            raise ClaimWriteError(
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {e}"
            ) from e

    def delete_claim(self, claim: ResourceClaim) -> None:
        self._background(f"delete {claim.key}", self._delete(claim))

    async def _delete(self, claim: ResourceClaim) -> None:
        """deleteClaim: drop the finalizer with an update (re-read on conflict), then delete."""
        path = claim_path(claim.namespace, claim.name)
        try:
            for _ in range(CONFLICT_RETRIES):
                raw = await self._get(claim)
                finalizers = raw.get("metadata", {}).get("finalizers") or []
                if CLAIM_FINALIZER not in finalizers:
                    break
                raw["metadata"]["finalizers"] = [f for f in finalizers if f != CLAIM_FINALIZER]
                try:
                    await self._put(path, raw)
                    break
                except ApiError as e:
                    if e.status != 409:
                        raise
            status, data = await request(self.api, "DELETE", path, fence=self.fence)
            if not 200 <= status < 300 and status != 404:
                raise ApiError.from_response(status, data)
        except _BACKGROUND_FAILURES as e:
            log.warning("deleting claim failed", extra={"claim": claim.key, "error": str(e)})
