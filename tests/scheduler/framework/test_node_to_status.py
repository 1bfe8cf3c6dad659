"""NodeToStatus: bulk rejections behave as the per-node dict they stand for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.status import Code, Status

CPU = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
TAINT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint",), "TaintToleration")
PORTS = Status(Code.UNSCHEDULABLE, ("node(s) didn't have free ports",), "NodePorts")
STATUSES = (CPU, TAINT, PORTS)


def bulk(names: list[str], codes: list[int], statuses: list[Status]) -> NodeToStatus:
    node_to_status = NodeToStatus()
    node_to_status.extend_bulk(np.array(names, dtype=np.object_), np.asarray(codes, dtype=np.intp), statuses)
    return node_to_status


def test_bulk_entries_read_as_a_dict() -> None:
    node_to_status = bulk(["a", "b", "c"], [0, 1, 0], [CPU, TAINT])
    assert node_to_status == {"a": CPU, "b": TAINT, "c": CPU}
    assert len(node_to_status) == 3
    assert node_to_status["b"] is TAINT
    assert node_to_status.get("z") is None
    assert "c" in node_to_status
    assert sorted(n for _, n in node_to_status.counts()) == [1, 2]


def test_setting_a_bulk_node_replaces_its_status_and_its_count() -> None:
    node_to_status = bulk(["a", "b"], [0, 0], [CPU])
    node_to_status["a"] = TAINT
    assert node_to_status == {"a": TAINT, "b": CPU}
    assert {(status.plugin, n) for status, n in node_to_status.counts()} == {
        ("NodeResourcesFit", 1),
        ("TaintToleration", 1),
    }
    del node_to_status["b"]
    assert node_to_status == {"a": TAINT}
    with pytest.raises(KeyError):
        del node_to_status["b"]


def test_unused_statuses_of_a_pass_are_not_counted() -> None:
    # A filter pass lists statuses of rows beyond where the search stopped; they count 0.
    node_to_status = bulk(["a"], [2], [CPU, TAINT, PORTS])
    assert node_to_status.counts() == [(PORTS, 1)]


def test_a_second_bulk_merges_with_the_later_status_winning() -> None:
    node_to_status = bulk(["a", "b"], [0, 0], [CPU])
    node_to_status.extend_bulk(
        np.array(["b", "c"], dtype=np.object_), np.array([0, 0], dtype=np.intp), [TAINT]
    )
    assert node_to_status == {"a": CPU, "b": TAINT, "c": TAINT}


def test_names_where_asks_per_status() -> None:
    node_to_status = bulk(["a", "b", "c"], [0, 1, 0], [CPU, TAINT])
    node_to_status["d"] = PORTS
    assert sorted(node_to_status.names_where(lambda s: s.code == Code.UNSCHEDULABLE)) == ["a", "c", "d"]
    assert node_to_status.names_where(lambda s: s.plugin == "Nope") == []


operations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.sampled_from("abcdefgh"), st.integers(0, 2)),
        st.tuples(st.just("del"), st.sampled_from("abcdefgh"), st.just(0)),
    ),
    max_size=12,
)


@given(
    names=st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
    data=st.data(),
    ops=operations,
)
def test_behaves_like_the_dict_it_stands_for(
    names: list[str], data: st.DataObject, ops: list[tuple[str, str, int]]
) -> None:
    codes = data.draw(st.lists(st.integers(0, 2), min_size=len(names), max_size=len(names)))
    node_to_status = bulk(names, codes, list(STATUSES))
    model = {name: STATUSES[code] for name, code in zip(names, codes, strict=True)}
    for op, name, code in ops:
        if op == "set":
            node_to_status[name] = STATUSES[code]
            model[name] = STATUSES[code]
        elif name in model:
            del node_to_status[name]
            del model[name]
    assert node_to_status == model
    assert len(node_to_status) == len(model)
    assert sorted(node_to_status) == sorted(model)
    counted: dict[str, int] = {}
    for status, n in node_to_status.counts():
        counted[status.plugin] = counted.get(status.plugin, 0) + n
    expected: dict[str, int] = {}
    for status in model.values():
        expected[status.plugin] = expected.get(status.plugin, 0) + 1
    assert counted == expected
    assert sorted(node_to_status.names_where(lambda s: s is TAINT)) == sorted(
        n for n, s in model.items() if s is TAINT
    )
