"""Asking the operator: at --endpoint, or at the lease holder through the API server's pods/proxy.

The operator's port is HTTPS and authorizes each request (explaining a pod needs `get` on it).
The API server's proxy does not pass the caller's credentials on, so through pods/proxy the
caller's bearer token travels in the X-Forwarded-Authorization header (docs/explain.md).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, authorization, request
from policy_scheduler.kube.serving.authentication import FORWARDED_AUTHORIZATION
from policy_scheduler.kube.serving.routes import EXPLAIN_PATH

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

DEFAULT_PORT = 10259
PORT_NAME = "https-metrics"
REQUEST_TIMEOUT = 10.0


class OperatorUnreachable(Exception):
    """No operator answered (the message says why)."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int  # 200: an explanation; 404: the operator has no record of the pod
    body: dict[str, Any]
    via: str  # where it came from, for the user


def _path(namespace: str, name: str) -> str:
    return f"{EXPLAIN_PATH}/{quote(namespace, safe='')}/{quote(name, safe='')}"


def _decode(status: int, body: bytes, via: str) -> Answer:
    if status not in (200, 404):
        raise OperatorUnreachable(f"{via} answered HTTP {status}: {body[:200].decode(errors='replace')}")
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise OperatorUnreachable(f"{via} answered something else than JSON: {exc}") from None
    if not isinstance(data, dict):
        raise OperatorUnreachable(f"{via} answered something else than a JSON object")
    return Answer(status, data, via)


async def ask_endpoint(
    endpoint: str,
    namespace: str,
    name: str,
    *,
    authorization_header: str | None = None,
    tls: ssl.SSLContext | bool = True,
) -> Answer:
    """`authorization_header` goes to https endpoints only (never in clear text); `tls` is how
    their certificate is checked (True: the system's CAs; False: not at all)."""
    url = endpoint.rstrip("/") + _path(namespace, name)
    secure = url.startswith("https:")
    headers = {"Authorization": authorization_header} if secure and authorization_header else {}
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                url,
                headers=headers,
                ssl=tls if secure else True,
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
            ) as resp,
        ):
            return _decode(resp.status, await resp.read(), url)
    except CONNECTION_ERRORS as exc:
        raise OperatorUnreachable(f"{url}: {exc or type(exc).__name__}") from None


async def leader_pod(api: ApiClient, lease_namespace: str, lease_name: str) -> tuple[str, int]:
    """The pod holding the lease (identity "<hostname>_<uuid>", hostname = pod name) and its port."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{lease_namespace}/leases/{lease_name}"
    status, body = await request(api, "GET", path)
    if status != 200:
        raise OperatorUnreachable(f"lease {lease_namespace}/{lease_name}: HTTP {status}")
    holder = (msgspec.json.decode(body).get("spec") or {}).get("holderIdentity") or ""
    if not holder:
        raise OperatorUnreachable(f"lease {lease_namespace}/{lease_name} has no holder (no leader)")
    pod_name = holder.rsplit("_", 1)[0]
    status, body = await request(api, "GET", f"/api/v1/namespaces/{lease_namespace}/pods/{pod_name}")
    if status != 200:
        raise OperatorUnreachable(
            f"leader {holder!r} is not a pod in {lease_namespace} (HTTP {status}); "
            "an operator running outside the cluster is reached with --endpoint"
        )
    pod = msgspec.json.decode(body)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == PORT_NAME:
                return pod_name, int(port["containerPort"])
    return pod_name, DEFAULT_PORT


async def ask_leader(
    api: ApiClient, lease_namespace: str, lease_name: str, namespace: str, name: str
) -> Answer:
    try:
        pod_name, port = await leader_pod(api, lease_namespace, lease_name)
        via = f"pod {lease_namespace}/{pod_name} (pods/proxy)"
        proxied = f"/api/v1/namespaces/{lease_namespace}/pods/https:{pod_name}:{port}/proxy"
        token = await authorization(api)
        headers = {FORWARDED_AUTHORIZATION: token} if token else {}
        status, body = await request(api, "GET", proxied + _path(namespace, name), headers=headers)
    except CONNECTION_ERRORS as exc:
        raise OperatorUnreachable(f"API server: {exc or type(exc).__name__}") from None
    # A 404 from the proxy itself (no such pod or port) is a Status object, not our answer.
    if status == 404:
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError:
            data = None
        if not isinstance(data, dict) or data.get("kind") == "Status":
            raise OperatorUnreachable(f"{via}: not found")
    return _decode(status, body, via)
