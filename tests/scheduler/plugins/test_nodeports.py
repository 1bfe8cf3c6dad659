"""NodePorts: ports of node_ports_test.go, plus batch filtering over the table's port index."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Container, ContainerPort, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodeports import NodePorts, fits_ports, sanitize, wanted_host_ports

CONFLICT = Status(Code.UNSCHEDULABLE, ("node(s) didn't have free ports for the requested pod ports",))


def new_pod(node_name: str, *port_infos: str, name: str = "p") -> Pod:
    """`"PROTO/IP/PORT"` strings, as upstream's newPod."""
    ports = []
    for info in port_infos:
        protocol, ip, port = info.split("/")
        ports.append(
            ContainerPort(container_port=int(port), host_port=int(port), protocol=protocol, host_ip=ip)
        )
    return Pod(name, node_name=node_name, containers=(Container("c", ports=tuple(ports)),))


def init_pod(sidecar: bool) -> Pod:
    port = ContainerPort(container_port=8001, host_port=8001, protocol="TCP")
    init = Container("init", ports=(port,), restart_policy="Always" if sidecar else None)
    return Pod("p", init_containers=(init,), containers=(Container("c"),))


def setup(*existing: Pod, nodes: int = 1) -> tuple[NodePorts, NodeTable]:
    table = NodeTable()
    for i in range(nodes):
        table.set_node(Node(f"n{i}"))
    for i, pod in enumerate(existing):
        table.add_pod(Pod(f"existing-{i}", containers=pod.containers, init_containers=pod.init_containers), 0)
    return NodePorts(Handle(table=table), {}), table


def rows_of(table: NodeTable) -> np.ndarray:
    return np.arange(len(table), dtype=np.intp)


CASES: list[tuple[str, Pod, list[Pod], Status, Status]] = [
    ("skip filter", Pod("p"), [], SKIP, SUCCESS),
    (
        "other port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        [new_pod("m1", "UDP/127.0.0.1/9090")],
        SUCCESS,
        SUCCESS,
    ),
    (
        "same udp port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        [new_pod("m1", "UDP/127.0.0.1/8080")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "same tcp port",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        [new_pod("m1", "TCP/127.0.0.1/8080")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "different host ip",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        [new_pod("m1", "TCP/127.0.0.2/8080")],
        SUCCESS,
        SUCCESS,
    ),
    (
        "different protocol",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        [new_pod("m1", "TCP/127.0.0.1/8080")],
        SUCCESS,
        SUCCESS,
    ),
    (
        "second udp port conflict",
        new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        [new_pod("m1", "UDP/127.0.0.1/8080")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "first tcp port conflict",
        new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        [new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "tcp conflict due to 0.0.0.0 in the pod",
        new_pod("m1", "TCP/0.0.0.0/8001"),
        [new_pod("m1", "TCP/127.0.0.1/8001")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "tcp conflict due to 0.0.0.0 among several",
        new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        [new_pod("m1", "TCP/127.0.0.1/8001")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "tcp conflict due to 0.0.0.0 on the node",
        new_pod("m1", "TCP/127.0.0.1/8001"),
        [new_pod("m1", "TCP/0.0.0.0/8001")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "second different protocol",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        [new_pod("m1", "TCP/0.0.0.0/8001")],
        SUCCESS,
        SUCCESS,
    ),
    (
        "udp conflict due to 0.0.0.0",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        [new_pod("m1", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")],
        SUCCESS,
        CONFLICT,
    ),
    (
        "non-sidecar init container using a host port",
        init_pod(False),
        [new_pod("m1", "TCP/0.0.0.0/8001")],
        SKIP,
        SUCCESS,
    ),
    (
        "sidecar init container conflict",
        init_pod(True),
        [new_pod("m1", "TCP/0.0.0.0/8001")],
        SUCCESS,
        CONFLICT,
    ),
    # Not upstream: empty host IP and protocol default to 0.0.0.0 and TCP.
    (
        "defaults conflict",
        Pod("p", containers=(Container("c", ports=(ContainerPort(80, 80, "", ""),)),)),
        [new_pod("m1", "TCP/10.0.0.1/80")],
        SUCCESS,
        CONFLICT,
    ),
]


@pytest.mark.parametrize(("name", "pod", "existing", "want_pre", "want"), CASES, ids=[c[0] for c in CASES])
def test_node_ports(name: str, pod: Pod, existing: list[Pod], want_pre: Status, want: Status) -> None:
    plugin, table = setup(*existing)
    state = CycleState()
    result, status = plugin.pre_filter(state, pod)
    assert result is None
    assert status == want_pre
    if status == SKIP:
        return
    assert plugin.filter(state, pod, rows_of(table)).status_of(0) == want


def test_filter_without_prefilter_is_an_error() -> None:
    plugin, table = setup()
    status = plugin.filter(CycleState(), Pod("p"), rows_of(table)).status_of(0)
    assert status.code == Code.ERROR
    assert status.message == 'reading "PreFilterNodePorts" from cycleState: not found'


def test_batch_only_conflicting_rows_fail_and_removal_frees() -> None:
    plugin, table = setup(nodes=4)
    users = [new_pod("", "TCP/0.0.0.0/80", name="a"), new_pod("", "TCP/10.0.0.1/80", name="b")]
    table.add_pod(users[0], 1)
    table.add_pod(users[1], 3)
    table.add_pod(new_pod("", "UDP/0.0.0.0/80", name="c"), 2)
    pod = new_pod("", "TCP/10.0.0.2/80")
    state = CycleState()
    plugin.pre_filter(state, pod)
    rows = np.asarray([3, 2, 1, 0], dtype=np.intp)
    assert plugin.filter(state, pod, rows).passed.tolist() == [True, True, False, True]
    pod_any_ip = new_pod("", "TCP/0.0.0.0/80")
    state = CycleState()
    plugin.pre_filter(state, pod_any_ip)
    assert plugin.filter(state, pod_any_ip, rows).passed.tolist() == [False, True, False, True]
    table.remove_pod(users[0], 1)
    assert plugin.filter(state, pod_any_ip, rows).passed.tolist() == [False, True, True, True]


def test_events() -> None:
    plugin, _ = setup()
    assert [(e.event.resource, e.event.action, e.hint is None) for e in plugin.events_to_register()] == [
        (Resource.POD, Action.DELETE, False),
        (Resource.NODE, Action.ADD, True),
    ]


with_8080 = Pod("p", containers=(Container("c", ports=(ContainerPort(8080, 8080),)),))


def deleted(node_name: str, *host_ports: int) -> Pod:
    ports = tuple(ContainerPort(p, p) for p in host_ports)
    return Pod("d", node_name=node_name, containers=(Container("c", ports=ports),))


HINT_CASES: list[tuple[str, Any, QueueingHint]] = [
    ("wrong old object", "not-a-pod", QueueingHint.QUEUE),
    ("unscheduled pod", deleted(""), QueueingHint.SKIP),
    ("unscheduled pod with host port", deleted("", 8080), QueueingHint.SKIP),
    ("no host ports", deleted("fake-node"), QueueingHint.SKIP),
    ("unrelated host port", deleted("fake-node", 8081), QueueingHint.SKIP),
    ("released host port", deleted("fake-node", 8080), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(("name", "old", "want"), HINT_CASES, ids=[c[0] for c in HINT_CASES])
def test_pod_deleted_hint(name: str, old: Any, want: QueueingHint) -> None:
    plugin, _ = setup()
    hint = plugin.events_to_register()[0].hint
    assert hint is not None
    assert hint(with_8080, old, None) == want


FITS_CASES = [
    ("non-conflicting ports", new_pod("p", "TCP/127.0.0.1/80"), ["TCP/127.0.0.1/9090"], True),
    (
        "multiple non-conflicting ports",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
        True,
    ),
    ("same ports on different protocols", new_pod("m1", "TCP/127.0.0.1/80"), ["UDP/127.0.0.1/80"], True),
    ("conflicting ports", new_pod("m1", "TCP/127.0.0.1/80"), ["TCP/127.0.0.1/80"], False),
    (
        "multiple ports, some conflicting",
        new_pod("p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"),
        ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "existing", "want"), FITS_CASES, ids=[c[0] for c in FITS_CASES])
def test_fits(name: str, pod: Pod, existing: list[str], want: bool) -> None:
    in_use = {sanitize(p) for p in wanted_host_ports(new_pod("x", *existing))}
    assert fits_ports(wanted_host_ports(pod), in_use) is want
    plugin, table = setup(new_pod("x", *existing))
    state = CycleState()
    plugin.pre_filter(state, pod)
    assert bool(plugin.filter(state, pod, rows_of(table)).passed[0]) is want
