"""TaintToleration: ports of taint_toleration_test.go plus batch/cache behaviour."""

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
from policy_scheduler.scheduler.plugins.tainttoleration import TaintToleration

UNTOLERATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint(s)",))


def node(name: str, *taints: Taint) -> Node:
    return Node(name, taints=taints)


def pod(*tolerations: Toleration, uid: str = "") -> Pod:
    return Pod("pod1", uid=uid, tolerations=tolerations)


def setup(*nodes: Node) -> tuple[TaintToleration, NodeTable]:
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    return TaintToleration(Handle(table=table), {}), table


def rows_of(table: NodeTable) -> np.ndarray:
    return np.arange(len(table), dtype=np.intp)


def filter_one(p: Pod, n: Node) -> Status:
    plugin, table = setup(n)
    return plugin.filter(CycleState(), p, rows_of(table)).status_of(0)


def scores(p: Pod, *nodes: Node, pre_score: bool = True) -> list[int]:
    plugin, table = setup(*nodes)
    state = CycleState()
    rows = rows_of(table)
    if pre_score:
        assert plugin.pre_score(state, p, rows) == SUCCESS
    return [int(x) for x in plugin.normalize_score(state, p, plugin.score(state, p, rows))]


PNS = "PreferNoSchedule"

SCORE_CASES: list[tuple[str, Pod, list[Node], list[int]]] = [
    (
        "tolerated taints score higher than intolerable ones",
        pod(Toleration("foo", "Equal", "bar", PNS)),
        [node("nodeA", Taint("foo", "bar", PNS)), node("nodeB", Taint("foo", "blah", PNS))],
        [100, 0],
    ),
    (
        "the number of tolerated taints does not matter",
        pod(Toleration("cpu-type", "Equal", "arm64", PNS), Toleration("disk-type", "Equal", "ssd", PNS)),
        [
            node("nodeA"),
            node("nodeB", Taint("cpu-type", "arm64", PNS)),
            node("nodeC", Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS)),
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints, the lower the score",
        pod(Toleration("foo", "Equal", "bar", PNS)),
        [
            node("nodeA"),
            node("nodeB", Taint("cpu-type", "arm64", PNS)),
            node("nodeC", Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS)),
        ],
        [100, 50, 0],
    ),
    (
        "only PreferNoSchedule taints and tolerations count",
        pod(
            Toleration("cpu-type", "Equal", "arm64", "NoSchedule"),
            Toleration("disk-type", "Equal", "ssd", "NoSchedule"),
        ),
        [
            node("nodeA"),
            node("nodeB", Taint("cpu-type", "arm64", "NoSchedule")),
            node("nodeC", Taint("cpu-type", "arm64", PNS), Taint("disk-type", "ssd", PNS)),
        ],
        [100, 100, 0],
    ),
    (
        "no taints and tolerations: lands on the node without taints",
        pod(),
        [node("nodeA"), node("nodeB", Taint("cpu-type", "arm64", PNS))],
        [100, 0],
    ),
    (
        "an empty-effect toleration tolerates PreferNoSchedule",
        pod(Toleration("cpu-type", "Exists")),
        [node("nodeA", Taint("cpu-type", "arm64", PNS)), node("nodeB", Taint("gpu", "", PNS))],
        [100, 0],
    ),
]


@pytest.mark.parametrize(("name", "p", "nodes", "want"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES])
def test_score(name: str, p: Pod, nodes: list[Node], want: list[int]) -> None:
    assert scores(p, *nodes) == want
    assert scores(p, *nodes, pre_score=False) == want


NS = "NoSchedule"

FILTER_CASES: list[tuple[str, Pod, Node, Status]] = [
    ("no tolerations, tainted node", pod(), node("nodeA", Taint("dedicated", "user1", NS)), UNTOLERATED),
    (
        "dedicated node for user1",
        pod(Toleration("dedicated", "Equal", "user1", NS)),
        node("nodeA", Taint("dedicated", "user1", NS)),
        SUCCESS,
    ),
    (
        "toleration for user2 on user1's node",
        pod(Toleration("dedicated", "Equal", "user2", NS)),
        node("nodeA", Taint("dedicated", "user1", NS)),
        UNTOLERATED,
    ),
    (
        "Exists toleration",
        pod(Toleration("foo", "Exists", "", NS)),
        node("nodeA", Taint("foo", "bar", NS)),
        SUCCESS,
    ),
    (
        "all taints tolerated",
        pod(Toleration("dedicated", "Equal", "user2", NS), Toleration("foo", "Exists", "", NS)),
        node("nodeA", Taint("dedicated", "user2", NS), Taint("foo", "bar", NS)),
        SUCCESS,
    ),
    (
        "key and value match but effect doesn't",
        pod(Toleration("foo", "Equal", "bar", PNS)),
        node("nodeA", Taint("foo", "bar", NS)),
        UNTOLERATED,
    ),
    (
        "empty toleration effect",
        pod(Toleration("foo", "Equal", "bar")),
        node("nodeA", Taint("foo", "bar", NS)),
        SUCCESS,
    ),
    (
        "untolerated PreferNoSchedule taint doesn't filter",
        pod(Toleration("dedicated", "Equal", "user2", NS)),
        node("nodeA", Taint("dedicated", "user1", PNS)),
        SUCCESS,
    ),
    (
        "no tolerations, PreferNoSchedule taint",
        pod(),
        node("nodeA", Taint("dedicated", "user1", PNS)),
        SUCCESS,
    ),
    ("NoExecute taints filter too", pod(), node("nodeA", Taint("k", "", "NoExecute")), UNTOLERATED),
    # TaintTolerationComparisonOperators is alpha and disabled in v1.35: Gt/Lt tolerate nothing.
    (
        "Gt toleration with the feature gate disabled",
        pod(Toleration("node.kubernetes.io/sla", "Gt", "750", NS)),
        node("nodeA", Taint("node.kubernetes.io/sla", "950", NS)),
        UNTOLERATED,
    ),
    (
        "Lt toleration with the feature gate disabled",
        pod(Toleration("node.kubernetes.io/sla", "Lt", "950", NS)),
        node("nodeA", Taint("node.kubernetes.io/sla", "800", NS)),
        UNTOLERATED,
    ),
    (
        "mixed tolerations, only Equal needed",
        pod(
            Toleration("dedicated", "Equal", "user1", NS),
            Toleration("node.kubernetes.io/sla", "Gt", "750", NS),
        ),
        node("nodeA", Taint("dedicated", "user1", NS)),
        SUCCESS,
    ),
    (
        "mixed tolerations, Gt needed",
        pod(
            Toleration("dedicated", "Equal", "user1", NS),
            Toleration("node.kubernetes.io/sla", "Gt", "750", NS),
        ),
        node("nodeA", Taint("dedicated", "user1", NS), Taint("node.kubernetes.io/sla", "950", NS)),
        UNTOLERATED,
    ),
    (
        "Gt toleration with non-numeric taint value",
        pod(Toleration("node.kubernetes.io/sla", "Gt", "950", NS)),
        node("nodeA", Taint("node.kubernetes.io/sla", "high", NS)),
        UNTOLERATED,
    ),
]


@pytest.mark.parametrize(("name", "p", "n", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(name: str, p: Pod, n: Node, want: Status) -> None:
    assert filter_one(p, n) == want


def test_filter_batch_over_taint_sets_and_new_sets() -> None:
    nodes = [
        node("a"),
        node("b", Taint("gpu", "", NS)),
        node("c", Taint("gpu", "", NS)),
        node("d", Taint("dedicated", "x", "NoExecute")),
        node("e", Taint("soft", "", PNS)),
    ]
    plugin, table = setup(*nodes)
    p = pod(Toleration("gpu", "Exists"))
    rows = np.asarray([4, 3, 2, 1, 0], dtype=np.intp)
    result = plugin.filter(CycleState(), p, rows)
    assert result.passed.tolist() == [True, False, True, True, True]
    assert result.status_of(1) == UNTOLERATED
    # A taint set interned after the cached evaluation is evaluated too.
    table.set_node(node("a", Taint("new", "", NS)))
    result = plugin.filter(CycleState(), p, rows_of(table))
    assert result.passed.tolist() == [False, True, True, False, True]
    # A pod with other tolerations gets its own evaluation.
    result = plugin.filter(CycleState(), pod(Toleration(operator="Exists")), rows_of(table))
    assert result.passed.all()


def test_score_reversed_normalize_with_subset_rows() -> None:
    plugin, _ = setup(
        node("a", Taint("x", "", PNS), Taint("y", "", PNS)), node("b"), node("c", Taint("x", "", PNS))
    )
    state = CycleState()
    rows = np.asarray([2, 1], dtype=np.intp)
    p = pod()
    plugin.pre_score(state, p, rows)
    raw = plugin.score(state, p, rows)
    assert raw.tolist() == [1, 0]
    assert plugin.normalize_score(state, p, raw).tolist() == [0, 100]


# ---- queueing hints -------------------------------------------------------------------------


def test_events() -> None:
    plugin, _ = setup()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
        (Resource.POD, Action.UPDATE_POD_TOLERATION),
    ]


user2 = pod(Toleration("dedicated", "Equal", "user2", NS))

NODE_HINT_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("wrong new object", user2, None, "not-a-node", QueueingHint.QUEUE),
    (
        "wrong old object",
        user2,
        "not-a-node",
        node("nodeA", Taint("dedicated", "user1", NS)),
        QueueingHint.QUEUE,
    ),
    (
        "untolerated node added",
        user2,
        None,
        node("nodeA", Taint("dedicated", "user1", NS)),
        QueueingHint.SKIP,
    ),
    ("tolerated node added", user2, None, node("nodeA", Taint("dedicated", "user2", NS)), QueueingHint.QUEUE),
    (
        "unrelated change",
        user2,
        node("nodeA", Taint("dedicated", "user1", NS)),
        node("nodeA", Taint("dedicated", "user1", NS), Taint("dedicated", "user3", NS)),
        QueueingHint.SKIP,
    ),
    (
        "taint change",
        user2,
        node("nodeA", Taint("dedicated", "user1", NS)),
        node("nodeA", Taint("dedicated", "user2", NS)),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "old", "new", "want"), NODE_HINT_CASES, ids=[c[0] for c in NODE_HINT_CASES]
)
def test_node_change_hint(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    plugin, _ = setup()
    hint = plugin.events_to_register()[0].hint
    assert hint is not None
    assert hint(p, old, new) == want


POD_HINT_CASES: list[tuple[str, Pod, Any, Any, QueueingHint]] = [
    ("wrong new object", pod(), None, "not-a-pod", QueueingHint.QUEUE),
    ("wrong old object", pod(), "not-a-pod", pod(), QueueingHint.QUEUE),
    (
        "updates another pod",
        pod(uid="uid0"),
        pod(uid="uid1"),
        pod(Toleration("foo", effect=NS), uid="uid1"),
        QueueingHint.SKIP,
    ),
    ("toleration added", pod(), pod(), pod(Toleration("foo", effect=NS)), QueueingHint.QUEUE),
]


@pytest.mark.parametrize(
    ("name", "p", "old", "new", "want"), POD_HINT_CASES, ids=[c[0] for c in POD_HINT_CASES]
)
def test_pod_toleration_hint(name: str, p: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    plugin, _ = setup()
    hint = plugin.events_to_register()[1].hint
    assert hint is not None
    assert hint(p, old, new) == want
