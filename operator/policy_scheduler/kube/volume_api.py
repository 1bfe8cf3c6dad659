"""VolumeBindingAPI for the operator: VolumeBinding's PreBind writes and its wait for the PV
controller.

Writes are JSON merge patches carrying the resourceVersion the scheduler decided on, so they
are conditional like upstream's Update: a 409 means someone changed the object since, and
PreBind fails (the pod is retried once the informer has the newer object, as upstream's
assume cache re-reads it). Transient failures (no answer, 429, 5xx) are retried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.storage_convert import pv_from_api, pvc_from_api
from policy_scheduler.kube.client import CONNECTION_ERRORS, MERGE_PATCH, ApiError, call
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries
from policy_scheduler.kube.storage_informers import StorageChanges
from policy_scheduler.kube.timings import DEFAULTS, ApiTimings
from policy_scheduler.scheduler.storage.types import PersistentVolume, PersistentVolumeClaim

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


def pv_patch(pv: PersistentVolume) -> dict[str, Any]:
    """volume.GetBindVolumeToClaim's changes: the claimRef and bound-by-controller."""
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": pv.resource_version, "annotations": dict(pv.annotations)}
    }
    if pv.claim_ref is not None:
        ref = pv.claim_ref
        patch["spec"] = {
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": ref.namespace,
                "name": ref.name,
                "uid": ref.uid,
            }
        }
    return patch


def pvc_patch(pvc: PersistentVolumeClaim) -> dict[str, Any]:
    """The selected-node annotation (dynamic provisioning)."""
    return {"metadata": {"resourceVersion": pvc.resource_version, "annotations": dict(pvc.annotations)}}


class KubeVolumeAPI:
    def __init__(
        self,
        api: ApiClient,
        changes: StorageChanges,
        *,
        timings: ApiTimings = DEFAULTS.api,
        retry: RetryPolicy | None = None,
        fence: Fence = UNFENCED,
    ) -> None:
        self.api = api
        self.fence = fence  # PreBind's writes go out only while we may act as the leader
        self.changes = changes
        self.retry = timings.status_patch_retry if retry is None else retry
        self.recheck = timings.volume_binding_recheck

    async def _patch(self, path: str, body: dict[str, Any]) -> bytes:
        async def once() -> Answer:
            return await call(self.api, "PATCH", path, body=body, content_type=MERGE_PATCH, fence=self.fence)

        try:
            answer = await with_retries(once, self.retry, connection_errors=CONNECTION_ERRORS, what=path)
        except CONNECTION_ERRORS as exc:
            raise ApiError(0, type(exc).__name__, str(exc)) from exc
        if not 200 <= answer.status < 300:
            raise ApiError.from_answer(answer)
        return answer.body

    async def update_pv(self, pv: PersistentVolume) -> PersistentVolume:
        body = await self._patch(f"/api/v1/persistentvolumes/{quote(pv.name, safe='')}", pv_patch(pv))
        return pv_from_api(msgspec.json.decode(body, type=st.PersistentVolume))

    async def update_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        path = (
            f"/api/v1/namespaces/{quote(pvc.namespace, safe='')}"
            f"/persistentvolumeclaims/{quote(pvc.name, safe='')}"
        )
        body = await self._patch(path, pvc_patch(pvc))
        return pvc_from_api(msgspec.json.decode(body, type=st.PersistentVolumeClaim))

    async def wait_for_change(self, max_seconds: float) -> None:
        await self.changes.wait(min(max_seconds, self.recheck))
