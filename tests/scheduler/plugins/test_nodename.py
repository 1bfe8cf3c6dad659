"""NodeName: port of node_name_test.go (v1.35.4, and v1.37.2's PreFilter) plus a batch case."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle, PreFilterResult
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodename import PRE_FILTER, NodeName
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

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


# ---- v1.37: TestNodeName_PreFilter ------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (Pod("p", node_name="foo"), PreFilterResult(frozenset({"foo"}))),
        (Pod("p"), None),
    ],
    ids=[
        "assigned pod with nodeName set, prefilter restricts to assigned node",
        "unassigned pod without nodeName set, prefilter returns nil",
    ],
)
def test_pre_filter(pod: Pod, want: PreFilterResult | None) -> None:
    plugin, _ = setup()
    result, status = plugin.pre_filter(CycleState(), pod)
    assert status.is_success
    assert result == want


@pytest.mark.parametrize(("version", "has_pre_filter"), [(V1_35, False), (V1_36, False), (V1_37, True)])
def test_pre_filter_is_a_v137_extension_point(version: KubernetesVersion, has_pre_filter: bool) -> None:
    assert (PRE_FILTER not in NodeName.points_absent_in(Features(version))) is has_pre_filter
