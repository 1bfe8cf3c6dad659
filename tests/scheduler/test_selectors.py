"""Selector matching: component-helpers nodeaffinity_test.go cases, label selectors, and a
property test of the vectorized matching against a one-node-at-a-time reference."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.model import (
    Affinity,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Requirement,
)
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.selectors import (
    MATCH_EVERYTHING,
    MATCH_NOTHING,
    SelectorError,
    compile_label_selector,
    label_selector_matches,
    match_node_selector_term,
    match_node_selector_terms,
    match_required_node_affinity,
    match_requirement,
    node_matches_required_affinity,
    node_matches_terms,
    node_selector_errors,
    parse_int64,
    preferred_terms_errors,
    preferred_terms_score,
    requirement_errors,
)

NAME = "metadata.name"
KEY_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def R(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, op, values)


def T(*exprs: Requirement, fields: tuple[Requirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=exprs, match_fields=fields)


def table_of(*nodes: Node) -> NodeTable:
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    return table


def rows_of(table: NodeTable) -> np.ndarray:
    return np.arange(len(table), dtype=np.intp)


def matches_one(node: Node, terms: tuple[NodeSelectorTerm, ...]) -> bool:
    table = table_of(node)
    vectorized = bool(match_node_selector_terms(table, rows_of(table), terms)[0])
    assert vectorized == node_matches_terms(node, terms)
    return vectorized


# ---- TestNodeSelectorMatch ------------------------------------------------------------------


def test_node_selector_parse_errors() -> None:
    terms = (
        T(fields=(R(NAME, "In", "host_1", "host_2"),)),
        T(R("label_1", "In", "label_1_val"), fields=(R(NAME, "In", "host_1"),)),
        T(R("invalid key", "In", "label_value")),
    )
    assert node_selector_errors(terms) == [
        'nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["host_1","host_2"]: '
        "must have one element",
        f'nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: "invalid key": {KEY_ERR}',
    ]
    # Lazily, the broken terms just never match; the valid one still does.
    node = Node("host_1", labels={"label_1": "label_1_val"})
    assert matches_one(node, terms)
    assert not matches_one(Node("host_1"), terms)


@pytest.mark.parametrize(
    ("name", "terms", "node", "want"),
    [
        (
            "node matches field selector, but not labels",
            (T(R("label_1", "In", "label_1_val"), fields=(R(NAME, "In", "host_1"),)),),
            Node("host_1"),
            False,
        ),
        (
            "node matches field selector and label selector",
            (T(R("label_1", "In", "label_1_val"), fields=(R(NAME, "In", "host_1"),)),),
            Node("host_1", labels={"label_1": "label_1_val"}),
            True,
        ),
        (
            "second term matches",
            (T(R("label_1", "In", "label_1_val")), T(fields=(R(NAME, "In", "host_1"),))),
            Node("host_1"),
            True,
        ),
    ],
)
def test_node_selector_match(name: str, terms: tuple[NodeSelectorTerm, ...], node: Node, want: bool) -> None:
    assert node_selector_errors(terms) == []
    assert matches_one(node, terms) is want


# ---- TestPreferredSchedulingTermsScore --------------------------------------------------------


def test_preferred_terms_parse_errors() -> None:
    terms = (
        PreferredSchedulingTerm(1, T(fields=(R(NAME, "In", "host_1", "host_2"),))),
        PreferredSchedulingTerm(1, T(R("label_1", "In", "label_1_val"), fields=(R(NAME, "In", "host_1"),))),
        PreferredSchedulingTerm(1, T(R("invalid key", "In", "label_value"))),
    )
    assert preferred_terms_errors(terms) == [
        '[0].matchFields[0].values: Invalid value: ["host_1","host_2"]: must have one element',
        f'[2].matchExpressions[0].key: Invalid value: "invalid key": {KEY_ERR}',
    ]


def test_preferred_terms_with_zero_weight_are_not_parsed() -> None:
    terms = (PreferredSchedulingTerm(0, T(fields=(R(NAME, "In", "host_1", "host_2"),))),)
    assert preferred_terms_errors(terms) == []
    table = table_of(Node("host_1"))
    assert preferred_terms_score(table, rows_of(table), terms).tolist() == [0]


def test_preferred_terms_score_sums_matching_weights() -> None:
    terms = (
        PreferredSchedulingTerm(5, T(fields=(R(NAME, "In", "host_1"),))),
        PreferredSchedulingTerm(7, T(R("unknown_label", "In", "unknown_label_val"))),
        PreferredSchedulingTerm(11, T(R("label_1", "In", "label_1_val"))),
    )
    table = table_of(Node("host_1", labels={"label_1": "label_1_val"}), Node("host_2"))
    assert preferred_terms_score(table, rows_of(table), terms).tolist() == [16, 0]


# ---- TestNodeSelectorRequirementsAsSelector ------------------------------------------------------


@pytest.mark.parametrize(
    ("req", "errors"),
    [
        (R("foo", "In", "bar", "baz"), []),
        (
            R("foo", "Exists", "bar", "baz"),
            [
                'root[0].values: Invalid value: ["bar","baz"]: '
                "values set must be empty for exists and does not exist"
            ],
        ),
        (R("foo", "Gt", "1"), []),
        (R("bar", "Lt", "7"), []),
        (
            R("baz", "invalid", "5"),
            [
                'root[0].operator: Unsupported value: "invalid": supported values: '
                '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
            ],
        ),
        (
            R("foo", "Gt", "1", "2"),
            [
                'root[0].values: Invalid value: ["1","2"]: '
                "for 'Gt', 'Lt' operators, exactly one value is required"
            ],
        ),
        (
            R("foo", "Lt", "abc"),
            [
                'root[0].values[0]: Invalid value: "abc": '
                "for 'Gt', 'Lt' operators, the value must be an integer"
            ],
        ),
        (
            R("foo", "In"),
            ["root[0].values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"],
        ),
    ],
)
def test_requirement_validation(req: Requirement, errors: list[str]) -> None:
    assert requirement_errors(req, "root[0]") == errors


def test_invalid_label_value_in_requirement() -> None:
    errs = requirement_errors(R("foo", "NotIn", "invalid value: ___@#$%^"))
    assert len(errs) == 1
    assert errs[0].startswith(
        'values[0][foo]: Invalid value: "invalid value: ___@#$%^": a valid label must be'
    )


def test_key_with_prefix_validation() -> None:
    assert requirement_errors(R("example.com/zone", "Exists")) == []
    assert requirement_errors(R("a/b/c", "Exists"))[0].startswith(
        'key: Invalid value: "a/b/c": a valid label key'
    )
    assert "prefix part must be non-empty" in requirement_errors(R("/zone", "Exists"))[0]
    assert "prefix part a lowercase RFC 1123" in requirement_errors(R("Example.com/zone", "Exists"))[0]
    assert "name part must be no more than 63 bytes" in requirement_errors(R("a" * 64, "Exists"))[0]


# ---- TestPodMatchesNodeSelectorAndAffinityTerms ---------------------------------------------------


def pod_with(
    node_selector: dict[str, str] | None = None,
    required: tuple[NodeSelectorTerm, ...] | None = None,
    node_affinity: bool = True,
) -> Pod:
    affinity = Affinity(node_affinity=NodeAffinity(required=required)) if node_affinity else None
    return Pod("p", node_selector=node_selector or {}, affinity=affinity)


POD_CASES = [
    ("no selector", Pod("p"), {}, "", True),
    ("missing labels", pod_with({"foo": "bar"}), {}, "", False),
    ("same labels", pod_with({"foo": "bar"}), {"foo": "bar"}, "", True),
    ("node labels are superset", pod_with({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", pod_with({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "", False),
    ("In matches", pod_with(required=(T(R("foo", "In", "bar", "value2")),)), {"foo": "bar"}, "", True),
    (
        "Gt matches",
        pod_with(required=(T(R("kernel-version", "Gt", "0204")),)),
        {"kernel-version": "0206"},
        "",
        True,
    ),
    (
        "NotIn matches",
        pod_with(required=(T(R("mem-type", "NotIn", "DDR", "DDR2")),)),
        {"mem-type": "DDR3"},
        "",
        True,
    ),
    ("Exists matches", pod_with(required=(T(R("GPU", "Exists")),)), {"GPU": "NVIDIA-GRID-K1"}, "", True),
    (
        "In does not match",
        pod_with(required=(T(R("foo", "In", "value1", "value2")),)),
        {"foo": "bar"},
        "",
        False,
    ),
    ("nil terms", pod_with(required=()), {"foo": "bar"}, "", False),
    ("empty MatchExpressions", pod_with(required=(T(),)), {"foo": "bar"}, "", False),
    ("no Affinity", Pod("p"), {"foo": "bar"}, "", True),
    ("Affinity but nil NodeSelector", pod_with(required=None), {"foo": "bar"}, "", True),
    (
        "multiple matchExpressions ANDed that match",
        pod_with(required=(T(R("GPU", "Exists"), R("GPU", "NotIn", "AMD", "INTER")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        True,
    ),
    (
        "multiple matchExpressions ANDed that don't match",
        pod_with(required=(T(R("GPU", "Exists"), R("GPU", "In", "AMD", "INTER")),)),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        False,
    ),
    (
        "multiple terms ORed",
        pod_with(required=(T(R("foo", "In", "bar", "value2")), T(R("diffkey", "In", "wrong", "value2")))),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "affinity and nodeSelector both satisfied",
        pod_with({"foo": "bar"}, (T(R("foo", "Exists")),)),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "affinity satisfied but nodeSelector not",
        pod_with({"foo": "bar"}, (T(R("foo", "Exists")),)),
        {"foo": "barrrrrr"},
        "",
        False,
    ),
    (
        "invalid value in affinity term",
        pod_with(required=(T(R("foo", "NotIn", "invalid value: ___@#$%^")),)),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "matchFields In matches",
        pod_with(required=(T(fields=(R(NAME, "In", "node_1"),)),)),
        {},
        "node_1",
        True,
    ),
    (
        "matchFields In doesn't match",
        pod_with(required=(T(fields=(R(NAME, "In", "node_1"),)),)),
        {},
        "node_2",
        False,
    ),
    (
        "two terms: matchFields does not match, but matchExpressions matches",
        pod_with(required=(T(fields=(R(NAME, "In", "node_1"),)), T(R("foo", "In", "bar")))),
        {"foo": "bar"},
        "node_2",
        True,
    ),
    (
        "one term: matchFields does not match, but matchExpressions matches",
        pod_with(required=(T(R("foo", "In", "bar"), fields=(R(NAME, "In", "node_1"),)),)),
        {"foo": "bar"},
        "node_2",
        False,
    ),
    (
        "one term: both match",
        pod_with(required=(T(R("foo", "In", "bar"), fields=(R(NAME, "In", "node_1"),)),)),
        {"foo": "bar"},
        "node_1",
        True,
    ),
    (
        "two terms: neither matches",
        pod_with(required=(T(fields=(R(NAME, "In", "node_1"),)), T(R("foo", "In", "not-match-to-bar")))),
        {"foo": "bar"},
        "node_2",
        False,
    ),
    # A node without a name exposes no fields, so matchFields are not checked (extractNodeFields).
    (
        "unnamed node skips matchFields",
        pod_with(required=(T(fields=(R(NAME, "In", "node_1"),)),)),
        {},
        "",
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "labels", "node_name", "want"), POD_CASES, ids=[c[0] for c in POD_CASES]
)
def test_pod_matches_node_selector_and_affinity(
    name: str, pod: Pod, labels: dict[str, str], node_name: str, want: bool
) -> None:
    node = Node(node_name, labels=labels)
    other = Node("zz-other", labels={"unrelated": "x"})
    table = table_of(other, node)
    got = match_required_node_affinity(table, np.asarray([1], dtype=np.intp), pod)
    assert got.tolist() == [want]
    assert node_matches_required_affinity(node, pod) is want


# ---- Gt / Lt parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("5", 5), ("+5", 5), ("-5", -5), ("007", 7), (" 5", None), ("5_0", None), ("1e3", None), ("", None),
     ("9223372036854775807", 2**63 - 1), ("9223372036854775808", None), ("-9223372036854775808", -(2**63)),
     ("٣", None)],
)  # fmt: skip
def test_parse_int64_is_go_strconv(text: str, value: int | None) -> None:
    assert parse_int64(text) == value


def test_gt_lt_use_integer_values_and_follow_new_label_values() -> None:
    table = table_of(
        Node("a", labels={"v": "10"}), Node("b", labels={"v": "9"}), Node("c", labels={"v": "x"})
    )
    rows = rows_of(table)
    assert match_requirement(table, rows, R("v", "Gt", "9")).tolist() == [True, False, False]
    assert match_requirement(table, rows, R("v", "Lt", "10")).tolist() == [False, True, False]
    # A value first seen after the cache was filled is parsed too.
    table.set_node(Node("d", labels={"v": "0100"}))
    table.set_node(Node("c", labels={}))
    rows = rows_of(table)
    assert match_requirement(table, rows, R("v", "Gt", "9")).tolist() == [True, False, False, True]
    assert match_requirement(table, rows, R("absent", "Lt", "9")).tolist() == [False] * 4


def test_term_rows_subset_and_order() -> None:
    table = table_of(*(Node(f"n{i}", labels={"i": str(i)}) for i in range(6)))
    rows = np.asarray([5, 0, 3], dtype=np.intp)
    term = T(R("i", "In", "0", "5"))
    assert match_node_selector_term(table, rows, term).tolist() == [True, True, False]
    assert match_node_selector_terms(table, rows, ()).tolist() == [False, False, False]


# ---- label selectors ---------------------------------------------------------------------------


def test_nil_selector_matches_nothing_and_empty_everything() -> None:
    assert compile_label_selector(None) is MATCH_NOTHING
    assert compile_label_selector(LabelSelector()) is MATCH_EVERYTHING
    assert not label_selector_matches(None, {})
    assert not label_selector_matches(None, {"a": "b"})
    assert label_selector_matches(LabelSelector(), {})
    assert label_selector_matches(LabelSelector(), {"a": "b"})


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        (LabelSelector(match_labels=(("app", "web"),)), {"app": "web", "x": "y"}, True),
        (LabelSelector(match_labels=(("app", "web"),)), {"app": "db"}, False),
        (LabelSelector(match_labels=(("app", "web"),)), {}, False),
        (LabelSelector(match_expressions=(R("app", "In", "web", "db"),)), {"app": "db"}, True),
        (LabelSelector(match_expressions=(R("app", "NotIn", "web"),)), {}, True),
        (LabelSelector(match_expressions=(R("app", "NotIn", "web"),)), {"app": "web"}, False),
        (LabelSelector(match_expressions=(R("app", "Exists"),)), {"app": ""}, True),
        (LabelSelector(match_expressions=(R("app", "DoesNotExist"),)), {"app": ""}, False),
        (
            LabelSelector(match_labels=(("tier", "fe"),), match_expressions=(R("app", "Exists"),)),
            {"app": "x", "tier": "be"},
            False,
        ),
    ],
)
def test_label_selector_matches(selector: LabelSelector, labels: dict[str, str], want: bool) -> None:
    assert label_selector_matches(selector, labels) is want


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            LabelSelector(match_expressions=(R("app", "Gt", "1"),)),
            '"Gt" is not a valid label selector operator',
        ),
        (LabelSelector(match_expressions=(R("app", "In"),)), "values set can't be empty"),
        (LabelSelector(match_expressions=(R("bad key", "Exists"),)), 'key: Invalid value: "bad key"'),
        (LabelSelector(match_labels=(("app", "a b"),)), 'values[0][app]: Invalid value: "a b"'),
    ],
)
def test_invalid_label_selector_raises(selector: LabelSelector, message: str) -> None:
    with pytest.raises(SelectorError, match=re.escape(message)):
        label_selector_matches(selector, {"app": "x"})


# ---- property: vectorized == per-node reference ---------------------------------------------------


def ref_int(text: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def ref_requirement(labels: dict[str, str], req: Requirement) -> bool:
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    have = None if value is None else ref_int(value)
    if have is None:
        return False
    bound = int(req.values[0])
    return have > bound if req.operator == "Gt" else have < bound


def ref_term(node: Node, term: NodeSelectorTerm) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(ref_requirement(node.labels, r) for r in term.match_expressions):
        return False
    return all((node.name == req.values[0]) == (req.operator == "In") for req in term.match_fields)


KEYS = ["a", "b", "zone"]
NODE_VALUES = ["x", "y", "1", "10", "-3", "+7", "007", "", "9223372036854775808", "1_0", " 5", "0"]
REQ_VALUES = ["x", "y", "1", "10", "007", "", "0"]
BOUNDS = ["0", "1", "5", "10", "007"]
NODE_NAMES = [f"n{i}" for i in range(8)]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(NODE_VALUES), max_size=3)
expr_st = st.one_of(
    st.builds(
        lambda k, op, vs: Requirement(k, op, tuple(vs)),
        st.sampled_from([*KEYS, "absent"]),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(REQ_VALUES), min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, op: Requirement(k, op),
        st.sampled_from([*KEYS, "absent"]),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
    st.builds(
        lambda k, op, v: Requirement(k, op, (v,)),
        st.sampled_from([*KEYS, "absent"]),
        st.sampled_from(["Gt", "Lt"]),
        st.sampled_from(BOUNDS),
    ),
)
field_st = st.builds(
    lambda op, v: Requirement(NAME, op, (v,)),
    st.sampled_from(["In", "NotIn"]),
    st.sampled_from([*NODE_NAMES, "nope"]),
)
term_st = st.builds(
    lambda e, f: NodeSelectorTerm(tuple(e), tuple(f)),
    st.lists(expr_st, max_size=3),
    st.lists(field_st, max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    node_labels=st.lists(labels_st, min_size=1, max_size=len(NODE_NAMES)),
    removed=st.sets(st.integers(0, len(NODE_NAMES) - 1), max_size=3),
    terms=st.lists(term_st, max_size=3),
    data=st.data(),
)
def test_vectorized_matching_equals_reference(
    node_labels: list[dict[str, str]], removed: set[int], terms: list[NodeSelectorTerm], data: st.DataObject
) -> None:
    table = table_of(*(Node(NODE_NAMES[i], labels=lbl) for i, lbl in enumerate(node_labels)))
    for i in sorted(removed):
        if i < len(node_labels) and len(table) > 1:
            table.remove_node(NODE_NAMES[i])  # moves rows around: codes must follow
    rows = np.asarray(
        data.draw(st.lists(st.integers(0, len(table) - 1), max_size=2 * len(table)), label="rows"),
        dtype=np.intp,
    )
    nodes = [table.nodes[int(r)] for r in rows]
    for term in terms:
        for req in term.match_expressions:
            assert match_requirement(table, rows, req).tolist() == [
                ref_requirement(n.labels, req) for n in nodes
            ]
        assert match_node_selector_term(table, rows, term).tolist() == [ref_term(n, term) for n in nodes]
    want = [any(ref_term(n, t) for t in terms) for n in nodes]
    assert match_node_selector_terms(table, rows, terms).tolist() == want
    assert [node_matches_terms(n, terms) for n in nodes] == want
