"""API paths of the objects the adapters write, built in one place (names are quoted)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import quote

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
# As kube-scheduler: terminal pods hold no resources and are never scheduled.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
# The node and pod informers' lists (path -> selectors): `run` asks for them early (kube.prefetch).
FIRST_LISTS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {NODES: {}, PODS: {"fieldSelector": POD_FIELD_SELECTOR}}
)


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
