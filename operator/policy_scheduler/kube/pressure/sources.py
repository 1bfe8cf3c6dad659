"""Where node usage and kubelet thresholds are read from. GET only.

- metrics.k8s.io/v1beta1 (metrics-server, through the API server's aggregation layer):
  NodeMetrics for every node, PodMetrics per pod (metrics-server selects pods by namespace and
  labels only, so a node's pods are asked for one by one) or all at once;
- the kubelet through the API server's `nodes/proxy`, when the operator is allowed to (RBAC `get`
  on `nodes/proxy`, an opt-in: it reaches every kubelet API): `/stats/summary` (disk, inodes and
  PIDs besides memory) and `/configz` (the kubelet's eviction thresholds).

A source that cannot be read says why, once, in the user's terms; the caller decides what that
means (the operator: no fresh data, so no eviction; the `pressure` command: a note).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import msgspec

from policy_scheduler.apiobjects import usage_structs as us
from policy_scheduler.apiobjects.decode import decode_list, decode_status
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.usage import kubelet_config_from_dict, summary_from_dict
from policy_scheduler.kube.retry import Answer

log = logging.getLogger(__name__)

METRICS_API = "/apis/metrics.k8s.io/v1beta1"
NODE_METRICS = f"{METRICS_API}/nodes"
POD_METRICS = f"{METRICS_API}/pods"
DEFAULT_CONCURRENCY = 8  # requests in flight at once for per-node and per-pod reads

# GET path, query -> Answer: the only capability the sources are given.
Get = Callable[[str, dict[str, str | int | bool]], Awaitable[Answer]]


class SourceUnavailable(Exception):
    """A source could not be read; the message says which and why."""


def node_proxy_path(node: str, subpath: str) -> str:
    return f"/api/v1/nodes/{quote(node, safe='')}/proxy/{subpath}"


def pod_metrics_path(namespace: str, name: str) -> str:
    return f"{METRICS_API}/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


def _why(what: str, answer: Answer) -> str:
    status = decode_status(answer.body)
    text = (
        status.message
        if status is not None and status.message
        else answer.body[:300].decode("utf-8", "replace")
    )
    body = " ".join(text.split())[:200]
    if answer.status == 404 and what.startswith("metrics.k8s.io"):
        return f"{what}: not served (HTTP 404): is metrics-server installed and its APIService available?"
    if answer.status == 403:
        return f"{what}: forbidden (HTTP 403): the operator's RBAC does not allow it: {body}"
    return f"{what}: HTTP {answer.status}: {body}"


@dataclass(slots=True)
class KubeletReads:
    """What the kubelet proxy gave for one node; None where it gave nothing (and `problems` why)."""

    summary: us.Summary | None = None
    config: us.KubeletConfiguration | None = None
    problems: list[str] = field(default_factory=list)


class UsageApi:
    """Reads usage and thresholds. `kubelet_proxy`: whether to read the kubelets at all."""

    def __init__(self, get: Get, *, kubelet_proxy: bool, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.get = get
        self.kubelet_proxy = kubelet_proxy
        self._slots = asyncio.Semaphore(concurrency)

    async def _get(self, path: str, query: dict[str, str | int | bool] | None = None) -> Answer:
        async with self._slots:
            return await self.get(path, query or {})

    async def node_metrics(self) -> dict[str, us.NodeMetrics]:
        """Every node's NodeMetrics by name; SourceUnavailable when the API cannot be read."""
        answer = await self._get(NODE_METRICS)
        if answer.status != 200:
            raise SourceUnavailable(_why("metrics.k8s.io NodeMetrics", answer))
        return {m.metadata.name: m for m in _decoded(answer.body, us.NodeMetrics, "NodeMetrics")}

    async def all_pod_metrics(self) -> dict[str, us.PodMetrics]:
        """Every pod's PodMetrics by namespace/name."""
        answer = await self._get(POD_METRICS)
        if answer.status != 200:
            raise SourceUnavailable(_why("metrics.k8s.io PodMetrics", answer))
        return {_key(m): m for m in _decoded(answer.body, us.PodMetrics, "PodMetrics")}

    async def pod_metrics(self, pods: Iterable[tuple[str, str]]) -> dict[str, us.PodMetrics]:
        """The PodMetrics of these (namespace, name) pods; a pod metrics-server has none for yet
        (404) is left out. SourceUnavailable when the API cannot be read."""

        async def one(namespace: str, name: str) -> us.PodMetrics | None:
            answer = await self._get(pod_metrics_path(namespace, name))
            if answer.status == 404:
                status = decode_status(answer.body)
                if status is not None and status.details is not None and status.details.name:
                    # The API is there; this pod has no metrics (yet) or is gone. A group that is
                    # not served is a 404 without a name.
                    return None
            if answer.status != 200:
                raise SourceUnavailable(_why("metrics.k8s.io PodMetrics", answer))
            try:
                return msgspec.json.decode(answer.body, type=us.PodMetrics)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise SourceUnavailable(f"metrics.k8s.io PodMetrics {namespace}/{name}: {exc}") from None

        found = await asyncio.gather(*(one(ns, name) for ns, name in pods))
        return {_key(m): m for m in found if m is not None}

    async def kubelet(self, node: str, *, config: bool) -> KubeletReads:
        """The node's Summary (and, with `config`, its /configz) through nodes/proxy."""
        reads = KubeletReads()
        if not self.kubelet_proxy:
            return reads
        reads.summary = await self._read(node, "stats/summary", summary_from_dict, reads.problems)
        if config:
            reads.config = await self._read(node, "configz", kubelet_config_from_dict, reads.problems)
        return reads

    async def _read(
        self, node: str, subpath: str, convert: Callable[[Mapping[str, Any]], Any], problems: list[str]
    ) -> Any:
        what = f"node {node}: nodes/proxy/{subpath}"
        try:
            answer = await self._get(node_proxy_path(node, subpath))
        except (OSError, TimeoutError) as exc:
            problems.append(f"{what}: {exc or type(exc).__name__}")
            return None
        if answer.status != 200:
            problems.append(_why(what, answer))
            return None
        try:
            body = msgspec.json.decode(answer.body)
            if not isinstance(body, dict):
                raise ConversionError("", "expected a JSON object")
            return convert(body)
        except msgspec.DecodeError as exc:
            problems.append(f"{what}: not JSON: {exc}")
        except ConversionError as exc:
            problems.append(f"{what}: {exc}")
        return None


def _key(m: us.PodMetrics) -> str:
    return f"{m.metadata.namespace or 'default'}/{m.metadata.name}"


def _decoded(body: bytes, item_type: Any, kind: str) -> list[Any]:
    try:
        result = decode_list(body, item_type)
    except msgspec.DecodeError as exc:
        raise SourceUnavailable(f"metrics.k8s.io {kind}: not a list: {exc}") from None
    for failure in result.failures:
        log.warning("undecodable metrics object", extra={"kind": kind, "error": failure.error})
    return list(result.items)
