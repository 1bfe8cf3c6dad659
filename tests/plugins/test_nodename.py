"""NodeName: port of node_name_test.go plus a batch case."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodename import NodeName

MISMATCH = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match the requested node name",))


def setup(*names: str) -> tuple[NodeName, NodeTable]:
    table = NodeTable()
    for name in names:
        table.set_node(Node(name))
    return NodeName(Handle(table=table), {}), table


@pytest.mark.parametrize(
    ("name", "pod", "node", "want"),
    [
        ("no host specified", Pod("p"), "", SUCCESS),
        ("host matches", Pod("p", node_name="foo"), "foo", SUCCESS),
        ("host doesn't match", Pod("p", node_name="bar"), "foo", MISMATCH),
    ],
)
def test_filter(name: str, pod: Pod, node: str, want: Status) -> None:
    plugin, _ = setup(node)
    assert plugin.filter(CycleState(), pod, np.asarray([0], dtype=np.intp)).status_of(0) == want


def test_filter_batch() -> None:
    plugin, _ = setup("a", "b", "c")
    rows = np.asarray([2, 0, 1], dtype=np.intp)
    assert plugin.filter(CycleState(), Pod("p", node_name="b"), rows).passed.tolist() == [False, False, True]
    assert not plugin.filter(CycleState(), Pod("p", node_name="gone"), rows).passed.any()
    assert plugin.filter(CycleState(), Pod("p"), rows).passed.all()


def test_events() -> None:
    plugin, _ = setup()
    (event,) = plugin.events_to_register()
    assert (event.event.resource, event.event.action, event.hint) == (Resource.NODE, Action.ADD, None)
