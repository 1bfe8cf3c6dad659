"""Install (server-side apply) our CRDs and the PodGroup CRD; wait until the API server serves them."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import msgspec
import yaml

from policy_scheduler.apiobjects.podgroup_crd import podgroup_crd
from policy_scheduler.kube.client import ApiError, request
from policy_scheduler.kube.timings import DEFAULTS, ApiTimings
from policy_scheduler.policy.crdgen import render_crds

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPLY_PATCH = "application/apply-patch+yaml"
FIELD_MANAGER = "policy-scheduler"


async def install_crds(api: ApiClient, timings: ApiTimings = DEFAULTS.api) -> list[str]:
    wait_seconds = timings.crd_served_wait
    names: list[str] = []
    # Ours, and scheduler-plugins' PodGroup (gang scheduling reads it).
    for crd in [*(yaml.safe_load(text) for text in render_crds().values()), podgroup_crd()]:
        name = crd["metadata"]["name"]
        status, body = await request(
            api,
            "PATCH",
            f"{CRD_PATH}/{name}",
            query={"fieldManager": FIELD_MANAGER, "force": True},
            body=msgspec.json.encode(crd),
            content_type=APPLY_PATCH,
        )
        if not 200 <= status < 300:
            raise ApiError.from_response(status, body)
        names.append(name)
    deadline = time.monotonic() + wait_seconds
    for name in names:
        # Established is not enough: right after it, storage may still answer 429.
        while not (await _established(api, name) and await _served(api, name)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CustomResourceDefinition {name} not served after {wait_seconds:.0f}s")
            await asyncio.sleep(timings.crd_served_poll)
    log.info("crds installed", extra={"crds": names})
    return names


async def _served(api: ApiClient, crd_name: str) -> bool:
    plural, _, group = crd_name.partition(".")
    status, _ = await request(api, "GET", f"/apis/{group}/v1alpha1/{plural}", query={"limit": 1})
    return status == 200


async def _established(api: ApiClient, name: str) -> bool:
    status, body = await request(api, "GET", f"{CRD_PATH}/{name}")
    if status != 200:
        return False
    conditions = (msgspec.json.decode(body).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
