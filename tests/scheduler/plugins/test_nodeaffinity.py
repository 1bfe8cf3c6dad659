"""NodeAffinity: ports of node_affinity_test.go (filter, prefilter, score, hints) and batch cases."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle, PreFilterResult
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import (
    Affinity,
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Requirement,
)
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodeaffinity import NodeAffinity, parse_node_affinity

NAME = "metadata.name"
ERR_POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))
ERR_ENFORCED = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match scheduler-enforced node affinity",)
)
ERR_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod affinity terms conflict",))


def R(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, values)


def T(*exprs: Requirement, fields: tuple[Requirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


def pod_with(
    node_selector: dict[str, str] | None = None,
    required: tuple[NodeSelectorTerm, ...] | None = None,
    preferred: tuple[PreferredSchedulingTerm, ...] = (),
) -> Pod:
    affinity = Affinity(node_affinity=model.NodeAffinity(required=required, preferred=preferred))
    return Pod("p", node_selector=node_selector or {}, affinity=affinity)


def setup(*nodes: Node, args: dict[str, Any] | None = None) -> tuple[NodeAffinity, NodeTable]:
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    return NodeAffinity.from_profile(Handle(table=table), args or {}), table


def rows_of(table: NodeTable) -> np.ndarray:
    return np.arange(len(table), dtype=np.intp)


def added_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def jreq(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


# ---- TestNodeAffinity (PreFilter + Filter) ---------------------------------------------------------

# name, pod, node labels, node name, filter status, prefilter status, prefilter result, args, run prefilter
FilterCase = tuple[str, Pod, dict[str, str], str, Status, Status, frozenset[str] | None, dict[str, Any], bool]

FILTER_CASES: list[FilterCase] = [
    ("missing labels", pod_with({"foo": "bar"}), {}, "", ERR_POD, SUCCESS, None, {}, True),
    ("same labels", pod_with({"foo": "bar"}), {"foo": "bar"}, "", SUCCESS, SUCCESS, None, {}, True),
    (
        "node labels are superset",
        pod_with({"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "node labels are subset",
        pod_with({"foo": "bar", "baz": "blah"}),
        {"foo": "bar"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "In matches",
        pod_with(required=(T(R("foo", "In", "bar", "value2")),)),
        {"foo": "bar"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "Gt matches",
        pod_with(required=(T(R("kernel-version", "Gt", "0204")),)),
        {"kernel-version": "0206"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "NotIn matches",
        pod_with(required=(T(R("mem-type", "NotIn", "DDR", "DDR2")),)),
        {"mem-type": "DDR3"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "Exists matches",
        pod_with(required=(T(R("GPU", "Exists")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "affinity doesn't match labels",
        pod_with(required=(T(R("foo", "In", "value1", "value2")),)),
        {"foo": "bar"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "empty MatchExpressions match nothing",
        pod_with(required=(T(),)),
        {"foo": "bar"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    ("no Affinity", Pod("p"), {"foo": "bar"}, "", SUCCESS, SKIP, None, {}, True),
    (
        "Affinity but nil NodeSelector",
        pod_with(required=None),
        {"foo": "bar"},
        "",
        SUCCESS,
        SKIP,
        None,
        {},
        True,
    ),
    (
        "matchExpressions ANDed that match",
        pod_with(required=(T(R("GPU", "Exists"), R("GPU", "NotIn", "AMD", "INTER")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "matchExpressions ANDed that don't match",
        pod_with(required=(T(R("GPU", "Exists"), R("GPU", "In", "AMD", "INTER")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "terms ORed",
        pod_with(required=(T(R("foo", "In", "bar", "value2")), T(R("diffkey", "In", "wrong", "value2")))),
        {"foo": "bar"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "affinity and nodeSelector both satisfied",
        pod_with({"foo": "bar"}, (T(R("foo", "Exists")),)),
        {"foo": "bar"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "affinity matches but nodeSelector doesn't",
        pod_with({"foo": "bar"}, (T(R("foo", "Exists")),)),
        {"foo": "barrrrrr"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "invalid value in affinity term",
        pod_with(required=(T(R("foo", "NotIn", "invalid value: ___@#$%^")),)),
        {"foo": "bar"},
        "",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "matchFields In matches",
        pod_with(required=(T(fields=(R(NAME, "In", "node1"),)),)),
        {},
        "node1",
        SUCCESS,
        SUCCESS,
        frozenset({"node1"}),
        {},
        True,
    ),
    (
        "matchFields In doesn't match",
        pod_with(required=(T(fields=(R(NAME, "In", "node1"),)),)),
        {},
        "node2",
        ERR_POD,
        SUCCESS,
        frozenset({"node1"}),
        {},
        True,
    ),
    (
        "two terms: matchFields doesn't match, matchExpressions matches",
        pod_with(
            required=(T(fields=(R(NAME, "In", "node1"), R(NAME, "In", "node2"))), T(R("foo", "In", "bar")))
        ),
        {"foo": "bar"},
        "node2",
        SUCCESS,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "one term: matchFields doesn't match, matchExpressions matches",
        pod_with(required=(T(R("foo", "In", "bar"), fields=(R(NAME, "In", "node1"),)),)),
        {"foo": "bar"},
        "node2",
        ERR_POD,
        SUCCESS,
        frozenset({"node1"}),
        {},
        True,
    ),
    (
        "one term: both match",
        pod_with(required=(T(R("foo", "In", "bar"), fields=(R(NAME, "In", "node1"),)),)),
        {"foo": "bar"},
        "node1",
        SUCCESS,
        SUCCESS,
        frozenset({"node1"}),
        {},
        True,
    ),
    (
        "two terms: neither matches",
        pod_with(required=(T(fields=(R(NAME, "In", "node1"),)), T(R("foo", "In", "not-match-to-bar")))),
        {"foo": "bar"},
        "node2",
        ERR_POD,
        SUCCESS,
        None,
        {},
        True,
    ),
    (
        "two terms of node.Name affinity",
        pod_with(required=(T(fields=(R(NAME, "In", "node1"),)), T(fields=(R(NAME, "In", "node2"),)))),
        {},
        "node2",
        SUCCESS,
        SUCCESS,
        frozenset({"node1", "node2"}),
        {},
        True,
    ),
    (
        "two conflicting matchFields requirements",
        pod_with(required=(T(fields=(R(NAME, "In", "node1"), R(NAME, "In", "node2"))),)),
        {"foo": "bar"},
        "node2",
        ERR_POD,
        ERR_CONFLICT,
        None,
        {},
        True,
    ),
    (
        "matches added affinity and pod's node affinity",
        pod_with(required=(T(R("zone", "In", "foo")),)),
        {"zone": "foo"},
        "node2",
        SUCCESS,
        SUCCESS,
        None,
        added_required({"matchFields": [jreq(NAME, "In", "node2")]}),
        True,
    ),
    (
        "matches added affinity but not pod's node affinity",
        pod_with(required=(T(R("zone", "In", "bar")),)),
        {"zone": "foo"},
        "node2",
        ERR_POD,
        SUCCESS,
        None,
        added_required({"matchFields": [jreq(NAME, "In", "node2")]}),
        True,
    ),
    (
        "doesn't match added affinity",
        Pod("p"),
        {"zone": "foo"},
        "node2",
        ERR_ENFORCED,
        SUCCESS,
        None,
        added_required({"matchExpressions": [jreq("zone", "In", "bar")]}),
        True,
    ),
    (
        "nodeSelector without PreFilter",
        pod_with({"foo": "bar"}),
        {"foo": "bar", "baz": "blah"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        False,
    ),
    (
        "node affinity without PreFilter",
        pod_with(required=(T(R("GPU", "Exists"), R("GPU", "NotIn", "AMD", "INTER")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        SUCCESS,
        SUCCESS,
        None,
        {},
        False,
    ),
    # Not upstream: empty terms list (non-nil selector) runs the filter, which rejects every node.
    ("empty nodeSelectorTerms", pod_with(required=()), {}, "n", ERR_POD, SUCCESS, None, {}, True),
]


@pytest.mark.parametrize(
    ("name", "pod", "labels", "node_name", "want", "want_pre", "want_names", "args", "run_pre"),
    FILTER_CASES,
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    name: str,
    pod: Pod,
    labels: dict[str, str],
    node_name: str,
    want: Status,
    want_pre: Status,
    want_names: frozenset[str] | None,
    args: dict[str, Any],
    run_pre: bool,
) -> None:
    plugin, table = setup(Node(node_name, labels=labels), args=args)
    state = CycleState()
    if run_pre:
        result, status = plugin.pre_filter(state, pod)
        assert status == want_pre
        assert (None if result is None else result.node_names) == want_names
    assert plugin.filter(state, pod, rows_of(table)).status_of(0) == want


def test_prefilter_result_type() -> None:
    plugin, _ = setup()
    result, _ = plugin.pre_filter(CycleState(), pod_with(required=(T(fields=(R(NAME, "In", "a", "b"),)),)))
    assert result == PreFilterResult(frozenset({"a", "b"}))


def test_filter_batch_statuses_per_row() -> None:
    args = added_required({"matchExpressions": [jreq("pool", "In", "general")]})
    nodes = [
        Node("a", labels={"pool": "general", "disk": "ssd"}),
        Node("b", labels={"pool": "general"}),
        Node("c", labels={"pool": "batch", "disk": "ssd"}),
        Node("d", labels={"disk": "ssd"}),
    ]
    plugin, _ = setup(*nodes, args=args)
    pod = pod_with({"disk": "ssd"})
    rows = np.asarray([3, 2, 1, 0], dtype=np.intp)
    result = plugin.filter(CycleState(), pod, rows)
    assert result.passed.tolist() == [False, False, False, True]
    # The scheduler-enforced affinity is checked first, as upstream.
    assert [result.status_of(i) for i in range(4)] == [ERR_ENFORCED, ERR_ENFORCED, ERR_POD, SUCCESS]


# ---- TestNodeAffinityPriority ------------------------------------------------------------------

label1 = {"foo": "bar"}
label2 = {"key": "value"}
label3 = {"az": "az1"}
label4 = {"abc": "az11", "def": "az22"}
label5 = {"foo": "bar", "key": "value", "az": "az1"}
affinity1 = (PreferredSchedulingTerm(2, T(R("foo", "In", "bar"))),)
affinity2 = (
    PreferredSchedulingTerm(2, T(R("foo", "In", "bar"))),
    PreferredSchedulingTerm(4, T(R("key", "In", "value"))),
    PreferredSchedulingTerm(5, T(R("foo", "In", "bar"), R("key", "In", "value"), R("az", "In", "az1"))),
)
affinity1_json = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 2, "preference": {"matchExpressions": [jreq("foo", "In", "bar")]}}
    ]
}

# name, pod, nodes (name, labels), expected, args, run PreScore
ScoreCase = tuple[str, Pod, list[tuple[str, dict[str, str]]], list[int], dict[str, Any], bool]

SCORE_CASES: list[ScoreCase] = [
    (
        "all nodes same priority when NodeAffinity is nil",
        Pod("p"),
        [("node1", label1), ("node2", label2), ("node3", label3)],
        [0, 0, 0],
        {},
        False,
    ),
    (
        "no node matches preferred terms",
        pod_with(preferred=affinity1),
        [("node1", label4), ("node2", label2), ("node3", label3)],
        [0, 0, 0],
        {},
        True,
    ),
    (
        "only node1 matches",
        pod_with(preferred=affinity1),
        [("node1", label1), ("node2", label2), ("node3", label3)],
        [100, 0, 0],
        {},
        True,
    ),
    (
        "all nodes match with different priorities",
        pod_with(preferred=affinity2),
        [("node1", label1), ("node5", label5), ("node2", label2)],
        [18, 100, 36],
        {},
        True,
    ),
    (
        "added affinity",
        Pod("p"),
        [("node1", label1), ("node2", label2)],
        [100, 0],
        {"addedAffinity": affinity1_json},
        True,
    ),
    (
        "added affinity and pod affinity",
        pod_with(preferred=affinity1),
        [("node1", label1), ("node2", label2), ("node3", label5)],
        [40, 60, 100],
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 3, "preference": {"matchExpressions": [jreq("key", "In", "value")]}}
                ]
            }
        },
        True,
    ),
    (
        "priorities without PreScore",
        pod_with(preferred=affinity2),
        [("node1", label1), ("node5", label5), ("node2", label2)],
        [18, 100, 36],
        {},
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "want", "args", "run_pre"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES]
)
def test_score(
    name: str,
    pod: Pod,
    nodes: list[tuple[str, dict[str, str]]],
    want: list[int],
    args: dict[str, Any],
    run_pre: bool,
) -> None:
    plugin, table = setup(*(Node(n, labels=lbl) for n, lbl in nodes), args=args)
    state = CycleState()
    rows = rows_of(table)
    if run_pre:
        assert plugin.pre_score(state, pod, rows) == SUCCESS
    assert plugin.normalize_score(state, pod, plugin.score(state, pod, rows)).tolist() == want


def test_prescore_skip_without_preferred_terms() -> None:
    plugin, table = setup(Node("node1", labels=label1))
    assert plugin.pre_score(CycleState(), Pod("p"), rows_of(table)) == SKIP


def test_prescore_error_on_broken_preferred_term() -> None:
    plugin, table = setup(Node("node1", labels=label1))
    pod = pod_with(preferred=(PreferredSchedulingTerm(2, T(R("invalid key", "In", "bar"))),))
    status = plugin.pre_score(CycleState(), pod, rows_of(table))
    assert status.code == Code.ERROR
    assert status.message == (
        '[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )


# ---- args ---------------------------------------------------------------------------------


def test_parse_added_affinity() -> None:
    parsed = parse_node_affinity(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [jreq("a", "Exists")], "matchFields": [jreq(NAME, "In", "n")]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "preference": {}}],
        }
    )
    assert parsed == model.NodeAffinity(
        required=(T(R("a", "Exists"), fields=(R(NAME, "In", "n"),)),),
        preferred=(PreferredSchedulingTerm(3, T()),),
    )
    assert parse_node_affinity({}) == model.NodeAffinity()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            added_required({"matchExpressions": [jreq("foo", "In")]}),
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
            ".values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchFields": [jreq("metadata.name", "Exists")]}}
                    ]
                }
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].operator: "
            'Unsupported value: "Exists": supported values: "In", "NotIn"',
        ),
        ({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}}, "invalid addedAffinity"),
    ],
)
def test_invalid_added_affinity(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        setup(args=args)


# ---- queueing hints ---------------------------------------------------------------------------


def test_events() -> None:
    plugin, _ = setup()
    (event,) = plugin.events_to_register()
    assert (event.event.resource, event.event.action) == (
        Resource.NODE,
        Action.ADD | Action.UPDATE_NODE_LABEL,
    )


affinity_pod = pod_with(required=(T(R("foo", "In", "bar")),))
enforced_foo = added_required({"matchExpressions": [jreq("foo", "In", "bar")]})

HINT_CASES: list[tuple[str, dict[str, Any], Any, Any, QueueingHint]] = [
    ("wrong new object", {}, None, "not-a-node", QueueingHint.QUEUE),
    ("wrong old object", {}, "not-a-node", Node("n"), QueueingHint.QUEUE),
    ("skip on add", {}, None, Node("n"), QueueingHint.SKIP),
    ("queue on add", {}, None, Node("n", labels={"foo": "bar"}), QueueingHint.QUEUE),
    ("skip unrelated changes", {}, Node("n"), Node("n", allocatable={"cpu": 1}), QueueingHint.SKIP),
    ("skip unrelated label changes", {}, Node("n"), Node("n", labels={"k": "v"}), QueueingHint.SKIP),
    (
        "skip suitable to unsuitable",
        {},
        Node("n", labels={"foo": "bar"}),
        Node("n", labels={"k": "v"}),
        QueueingHint.SKIP,
    ),
    ("queue when labels make it match", {}, Node("n"), Node("n", labels={"foo": "bar"}), QueueingHint.QUEUE),
    (
        "skip change that keeps it matching",
        {},
        Node("n", labels={"foo": "bar"}),
        Node("n", labels={"foo": "bar"}, allocatable={"cpu": 1}),
        QueueingHint.SKIP,
    ),
    ("skip add not matching enforced affinity", enforced_foo, None, Node("n"), QueueingHint.SKIP),
    (
        "queue add matching enforced affinity",
        enforced_foo,
        None,
        Node("n", labels={"foo": "bar"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip add matching the pod but not the enforced affinity",
        added_required({"matchExpressions": [jreq("pool", "In", "general")]}),
        None,
        Node("n", labels={"foo": "bar"}),
        QueueingHint.SKIP,
    ),
]


@pytest.mark.parametrize(("name", "args", "old", "new", "want"), HINT_CASES, ids=[c[0] for c in HINT_CASES])
def test_node_change_hint(name: str, args: dict[str, Any], old: Any, new: Any, want: QueueingHint) -> None:
    plugin, _ = setup(args=args)
    hint = plugin.events_to_register()[0].hint
    assert hint is not None
    assert hint(affinity_pod, old, new) == want
