"""NodeUnschedulable: port of node_unschedulable_test.go plus a batch case."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod, Taint, Toleration
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodeunschedulable import NodeUnschedulable

UNSCHEDULABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


def setup(*nodes: Node) -> tuple[NodeUnschedulable, NodeTable]:
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    return NodeUnschedulable(Handle(table=table), {}), table


@pytest.mark.parametrize(
    ("name", "pod", "node", "want"),
    [
        ("unschedulable node", Pod("p"), Node("n", unschedulable=True), UNSCHEDULABLE),
        ("normal node", Pod("p"), Node("n"), SUCCESS),
        (
            "toleration for the unschedulable taint",
            Pod("p", tolerations=(Toleration(UNSCHEDULABLE_KEY, effect="NoSchedule"),)),
            Node("n", unschedulable=True),
            SUCCESS,
        ),
        (
            "Exists-everything toleration",
            Pod("p", tolerations=(Toleration(operator="Exists"),)),
            Node("n", unschedulable=True),
            SUCCESS,
        ),
        (
            "toleration with another effect",
            Pod("p", tolerations=(Toleration(UNSCHEDULABLE_KEY, operator="Exists", effect="NoExecute"),)),
            Node("n", unschedulable=True),
            UNSCHEDULABLE,
        ),
    ],
)
def test_filter(name: str, pod: Pod, node: Node, want: Status) -> None:
    plugin, _ = setup(node)
    assert plugin.filter(CycleState(), pod, np.asarray([0], dtype=np.intp)).status_of(0) == want


def test_filter_batch_follows_node_updates() -> None:
    plugin, table = setup(Node("a"), Node("b", unschedulable=True), Node("c"))
    rows = np.asarray([2, 1, 0], dtype=np.intp)
    assert plugin.filter(CycleState(), Pod("p"), rows).passed.tolist() == [True, False, True]
    table.set_node(Node("b"))
    table.set_node(Node("a", unschedulable=True))
    assert plugin.filter(CycleState(), Pod("p"), rows).passed.tolist() == [True, True, False]


def test_events() -> None:
    plugin, _ = setup()
    assert [(e.event.resource, e.event.action) for e in plugin.events_to_register()] == [
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
        (Resource.POD, Action.UPDATE_POD_TOLERATION),
    ]


NOT_READY = Taint("node.kubernetes.io/not-ready", effect="NoExecute")


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("wrong new object", None, "not-a-node", QueueingHint.QUEUE),
        ("wrong old object", "not-a-node", Node("n", unschedulable=True), QueueingHint.QUEUE),
        ("unschedulable node added", None, Node("n", unschedulable=True), QueueingHint.SKIP),
        ("schedulable node added", None, Node("n"), QueueingHint.QUEUE),
        (
            "unrelated change, still unschedulable",
            Node("n", unschedulable=True),
            Node("n", unschedulable=True, taints=(NOT_READY,)),
            QueueingHint.SKIP,
        ),
        ("unrelated change, schedulable", Node("n"), Node("n", taints=(NOT_READY,)), QueueingHint.SKIP),
        ("unschedulable field cleared", Node("n", unschedulable=True), Node("n"), QueueingHint.QUEUE),
    ],
)
def test_node_change_hint(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    plugin, _ = setup()
    hint = plugin.events_to_register()[0].hint
    assert hint is not None
    assert hint(Pod("p"), old, new) == want


def tolerating(uid: str, key: str) -> Pod:
    return Pod("p", uid=uid, tolerations=(Toleration(key, operator="Exists"),))


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("wrong new object", None, "not-a-pod", QueueingHint.QUEUE),
        ("wrong old object", "not-a-pod", Pod("p"), QueueingHint.QUEUE),
        (
            "another pod",
            Pod("p", uid="different-uid"),
            tolerating("different-uid", UNSCHEDULABLE_KEY),
            QueueingHint.SKIP,
        ),
        (
            "the pod gets the toleration",
            Pod("p", uid="uid"),
            tolerating("uid", UNSCHEDULABLE_KEY),
            QueueingHint.QUEUE,
        ),
        (
            "the pod gets an unrelated toleration",
            Pod("p", uid="uid"),
            tolerating("uid", "unrelated-key"),
            QueueingHint.SKIP,
        ),
    ],
)
def test_pod_toleration_hint(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    plugin, _ = setup()
    hint = plugin.events_to_register()[1].hint
    assert hint is not None
    assert hint(Pod("p", uid="uid"), old, new) == want
