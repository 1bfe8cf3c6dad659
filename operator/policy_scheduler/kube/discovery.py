"""Which of the collections we watch the API server serves (API discovery), asked at start.

A cluster may not serve a kind we watch: resource.k8s.io turned off (`--runtime-config`), a
storage kind disabled, scheduler-plugins' PodGroup CRD never installed. An informer on such a
collection would retry its 404 for ever and `/readyz` would stay 503. Discovery says which are
missing, so the informers of those are not started and the plugins that read them are turned off
(service/api_availability.py); our own CRDs missing is a start-up error saying how to install them.

Aggregated discovery (apidiscovery.k8s.io/v2, one request for every group) where the server has
it, else one request per group version we watch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from policy_scheduler.kube.client import ApiClient, ApiError, call
from policy_scheduler.kube.errors import StartError
from policy_scheduler.kube.media_types import JSON
from policy_scheduler.policy.constants import (
    EVICTION_POLICY_PLURAL,
    GROUP,
    PRIORITY_CLASS_MIRROR_PLURAL,
    SCHEDULING_PROFILE_PLURAL,
    VERSION,
)

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

# Our own CRDs: without them there is no policy to schedule by.
OWN_CRDS = tuple(
    f"{plural}.{GROUP}"
    for plural in (SCHEDULING_PROFILE_PLURAL, EVICTION_POLICY_PLURAL, PRIORITY_CLASS_MIRROR_PLURAL)
)
INSTALL_HINT = (
    "install the CRDs with `kubectl apply -k manifests/` or the Helm chart (charts/policy-scheduler), "
    "or run with --install-crds"
)


class MissingCrdError(StartError):
    """Our CRDs are not installed; the message names them and how to install them."""


def group_version(path: str) -> str:
    """`/apis/storage.k8s.io/v1/csinodes` -> `storage.k8s.io/v1`; `/api/v1/pods` -> `v1`."""
    parts = path.strip("/").split("/")
    return parts[1] if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


@dataclass(frozen=True, slots=True)
class ServedApis:
    """The collection paths (`/apis/<group>/<version>/<plural>`) the API server serves."""

    collections: frozenset[str]

    def serves(self, path: str) -> bool:
        return path.startswith("/api/") or path in self.collections

    def missing(self, paths: Iterable[str]) -> list[str]:
        return [path for path in paths if not self.serves(path)]

    def require_own_crds(self) -> None:
        """MissingCrdError naming every CRD of ours the server does not serve."""
        missing = [
            crd for crd in OWN_CRDS if not self.serves(f"/apis/{GROUP}/{VERSION}/{crd.split('.', 1)[0]}")
        ]
        if missing:
            names = ", ".join(missing)
            noun = "CustomResourceDefinition" if len(missing) == 1 else "CustomResourceDefinitions"
            raise MissingCrdError(
                f"{noun} {names} not installed "
                f"(the API server does not serve {GROUP}/{VERSION}): {INSTALL_HINT}"
            )


class _Resource(msgspec.Struct):
    resource: str = ""


class _Version(msgspec.Struct):
    version: str = ""
    resources: list[_Resource] | None = None


class _GroupMeta(msgspec.Struct):
    name: str = ""


class _Group(msgspec.Struct):
    metadata: _GroupMeta = msgspec.field(default_factory=_GroupMeta)
    versions: list[_Version] | None = None


class _Aggregated(msgspec.Struct):
    kind: str = ""
    items: list[_Group] | None = None


class _ResourceName(msgspec.Struct):
    name: str = ""


class _ResourceList(msgspec.Struct):
    resources: list[_ResourceName] | None = None


async def _get(api: ApiClient, path: str, accept: str, request_timeout: float) -> bytes | None:
    answer = await call(api, "GET", path, accept=accept, request_timeout=request_timeout)
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise ApiError.from_answer(answer)
    return answer.body


async def discover(api: ApiClient, watched: Iterable[str], request_timeout: float = 10.0) -> ServedApis:
    """Which of the `watched` collection paths the server serves. API errors raise (the caller
    retries); a group version the server does not know is simply not served."""
    body = await _get(api, "/apis", f"{AGGREGATED},{JSON}", request_timeout)
    if body is not None:
        aggregated = msgspec.json.decode(body, type=_Aggregated)
        if aggregated.kind == "APIGroupDiscoveryList":
            return ServedApis(
                frozenset(
                    f"/apis/{group.metadata.name}/{version.version}/{resource.resource}"
                    for group in aggregated.items or ()
                    for version in group.versions or ()
                    for resource in version.resources or ()
                )
            )
    # An API server without aggregated discovery: each group version we watch, once.
    wanted = sorted({group_version(path) for path in watched if path.startswith("/apis/")})
    bodies = await asyncio.gather(*(_get(api, f"/apis/{gv}", JSON, request_timeout) for gv in wanted))
    served = set()
    for gv, listed in zip(wanted, bodies, strict=True):
        if listed is None:
            continue
        for resource in msgspec.json.decode(listed, type=_ResourceList).resources or ():
            if "/" not in resource.name:  # not a subresource
                served.add(f"/apis/{gv}/{resource.name}")
    return ServedApis(frozenset(served))
