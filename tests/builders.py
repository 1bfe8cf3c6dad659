"""Shared builders for scheduler model objects in unit tests.

`make_pod` and `make_node` cover what most tests vary; anything else is a keyword for the model
field of the same name. The ported upstream tables keep their own st.MakePod()-style chains
(tests/scheduler/plugins/_build_*.py) so they read like the Go originals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from policy_scheduler.scheduler.model import Container, ContainerPort, Node, Pod

HOSTNAME_LABEL = "kubernetes.io/hostname"


def make_pod(
    name: str = "pod",
    *,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    cpu: int | None = None,
    memory: int | None = None,
    requests: Mapping[str, int] | None = None,
    ports: Iterable[int | ContainerPort] = (),
    images: Sequence[str] = (),
    **fields: Any,
) -> Pod:
    """A pod whose uid is its name unless given. `cpu`, `memory` (millicores, bytes), `requests` or
    `ports` give it a container "c" with those requests and ports (a bare number is a host port);
    each of `images` adds a container running it."""
    wanted = dict(requests or {})
    wanted.update({k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None})
    host_ports = tuple(p if isinstance(p, ContainerPort) else ContainerPort(p, p) for p in ports)
    containers = list(fields.pop("containers", ()))
    if wanted or requests is not None or host_ports:
        containers.append(Container("c", requests=wanted, ports=host_ports))
    containers += [Container(f"i{i}", image=image) for i, image in enumerate(images)]
    return Pod(
        name,
        uid=name if uid is None else uid,
        labels=dict(labels or {}),
        containers=tuple(containers),
        **fields,
    )


def make_node(
    name: str = "node",
    *,
    labels: Mapping[str, str] | None = None,
    hostname: bool = False,
    allocatable: Mapping[str, int] | None = None,
    **fields: Any,
) -> Node:
    """A node with these labels (plus kubernetes.io/hostname=name when `hostname`) and allocatable."""
    all_labels = {HOSTNAME_LABEL: name} if hostname else {}
    all_labels.update(labels or {})
    return Node(name, labels=all_labels, allocatable=dict(allocatable or {}), **fields)
