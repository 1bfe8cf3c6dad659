"""Fake nodes for the dev cluster: manifests, names and readiness (kwok plays the kubelet)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_ZONES: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NODE_NETWORK = ipaddress.IPv4Network("172.16.0.0/12")  # apart from pod and service CIDRs


@dataclass(frozen=True)
class NodeShape:
    """Capacity and labels of a batch of fake nodes; capacity equals allocatable."""

    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    ephemeral_storage: str = "1Ti"
    labels: Mapping[str, str] = field(default_factory=dict)
    zones: Sequence[str] = DEFAULT_ZONES
    taints: Sequence[Mapping[str, str]] = ()


def node_ip(ordinal: int) -> str:
    """A distinct fake InternalIP for the `ordinal`-th node; kwok reports it as the hostIP
    of the node's pods."""
    return str(NODE_NETWORK.network_address + 1 + ordinal % (NODE_NETWORK.num_addresses - 2))


def node_manifest(name: str, zone: str, shape: NodeShape, internal_ip: str | None = None) -> dict[str, Any]:
    """A Node with its status filled in.

    The API server keeps status on create for nodes, and kwok's node-initialize stage keeps
    whatever capacity and addresses it finds, so what is given here is what the scheduler
    sees. Only the shape's taints are set (none by default: ordinary pods are welcome).
    """
    addresses = [{"type": "Hostname", "address": name}]
    if internal_ip is not None:
        addresses.insert(0, {"type": "InternalIP", "address": internal_ip})
    resources = {
        "cpu": shape.cpu,
        "memory": shape.memory,
        "pods": shape.pods,
        "ephemeral-storage": shape.ephemeral_storage,
    }
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": zone,
        "type": "kwok",
        **shape.labels,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {"taints": [dict(t) for t in shape.taints]} if shape.taints else {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "addresses": addresses,
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def next_names(prefix: str, count: int, existing: Iterable[str]) -> list[str]:
    """`count` names `<prefix>-<i>` continuing after the highest index already in use,
    so repeated calls with one prefix add nodes instead of colliding."""
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)")
    used = [int(m.group(1)) for name in existing if (m := pattern.fullmatch(name))]
    start = max(used) + 1 if used else 0
    return [f"{prefix}-{i}" for i in range(start, start + count)]


def is_ready(node: Mapping[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
