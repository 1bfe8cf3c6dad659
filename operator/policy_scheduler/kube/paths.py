"""API paths of the objects the adapters write, built in one place (names are quoted)."""

from __future__ import annotations

from urllib.parse import quote

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
