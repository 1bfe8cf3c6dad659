"""Binding is retried through an API server outage and resolved when an answer was lost."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from policy_scheduler.kube import binder
from policy_scheduler.kube.binder import BindError, UnsettledBinds, bind
from policy_scheduler.kube.retry import Answer
from policy_scheduler.scheduler.framework.interfaces import AlreadyBound
from tests.no_api import NO_API

POD_PATH = "/api/v1/namespaces/ns/pods/p"


class FakeServer:
    """Plays scripted answers per (method, path); an exception entry is raised instead."""

    def __init__(self, script: dict[tuple[str, str], list[Answer | BaseException]]) -> None:
        self.script = script
        self.calls: list[tuple[str, str]] = []

    async def call(self, api: Any, method: str, path: str, **_: Any) -> Answer:
        self.calls.append((method, path))
        entry = self.script[(method, path)].pop(0)
        if isinstance(entry, BaseException):
            raise entry
        return entry


def pod_body(uid: str, node: str) -> bytes:
    return json.dumps({"metadata": {"uid": uid}, "spec": {"nodeName": node}}).encode()


CONFLICT = Answer(
    409, json.dumps({"kind": "Status", "message": 'pod p is already assigned to node "n1"'}).encode()
)


async def _no_sleep(_: float) -> None:
    return None


async def run(monkeypatch: pytest.MonkeyPatch, server: FakeServer, node: str = "n1") -> None:
    monkeypatch.setattr(binder, "call", server.call)
    await bind(NO_API, "ns", "p", "u1", node, sleep=_no_sleep)


async def test_a_lost_answer_then_conflict_on_the_same_node_is_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = FakeServer(
        {
            ("POST", POD_PATH + "/binding"): [aiohttp.ServerDisconnectedError(), CONFLICT],
            ("GET", POD_PATH): [Answer(200, pod_body("u1", "n1"))],
        }
    )
    await run(monkeypatch, server)
    assert server.calls == [
        ("POST", POD_PATH + "/binding"),
        ("POST", POD_PATH + "/binding"),
        ("GET", POD_PATH),
    ]


async def test_a_conflict_after_a_lost_answer_elsewhere_is_a_conflict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = FakeServer(
        {
            ("POST", POD_PATH + "/binding"): [Answer(503, b"{}"), CONFLICT],
            ("GET", POD_PATH): [Answer(200, pod_body("u1", "n2"))],
        }
    )
    with pytest.raises(BindError) as raised:
        await run(monkeypatch, server)
    assert raised.value.conflict


async def test_a_first_conflict_is_never_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer({("POST", POD_PATH + "/binding"): [CONFLICT]})
    with pytest.raises(BindError) as raised:
        await run(monkeypatch, server)
    assert raised.value.conflict
    assert server.calls == [("POST", POD_PATH + "/binding")]


async def test_a_replaced_pod_is_not_taken_for_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(
        {
            ("POST", POD_PATH + "/binding"): [aiohttp.ServerDisconnectedError(), CONFLICT],
            ("GET", POD_PATH): [Answer(200, pod_body("u2", "n1"))],
        }
    )
    with pytest.raises(BindError):
        await run(monkeypatch, server)


async def test_success_after_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer(
        {("POST", POD_PATH + "/binding"): [aiohttp.ClientConnectionError(), Answer(201, b"{}")]}
    )
    await run(monkeypatch, server)
    assert len(server.calls) == 2


async def test_a_refusal_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer({("POST", POD_PATH + "/binding"): [Answer(404, b"{}")]})
    with pytest.raises(BindError) as raised:
        await run(monkeypatch, server)
    assert raised.value.not_found
    assert len(server.calls) == 1


# ---- a binding that failed after a lost answer, and the pod's next binding ----------------------

LOST_THEN_REFUSED: list[Answer | BaseException] = [aiohttp.ServerDisconnectedError(), Answer(403, b"{}")]


async def bind_with(
    monkeypatch: pytest.MonkeyPatch, server: FakeServer, unsettled: UnsettledBinds, node: str = "n1"
) -> None:
    monkeypatch.setattr(binder, "call", server.call)
    await bind(NO_API, "ns", "p", "u1", node, unsettled=unsettled, sleep=_no_sleep)


async def failed_after_a_lost_answer(monkeypatch: pytest.MonkeyPatch) -> UnsettledBinds:
    """A binding to n1 whose first answer was lost and whose retry was refused."""
    unsettled = UnsettledBinds()
    first = FakeServer({("POST", POD_PATH + "/binding"): list(LOST_THEN_REFUSED)})
    with pytest.raises(BindError) as raised:
        await bind_with(monkeypatch, first, unsettled)
    assert raised.value.status == 403
    assert unsettled.node("ns", "p", "u1") == "n1"
    return unsettled


def conflict_then_read(read: Answer) -> FakeServer:
    return FakeServer({("POST", POD_PATH + "/binding"): [CONFLICT], ("GET", POD_PATH): [read]})


@pytest.mark.parametrize(
    ("chosen", "bound_to", "outcome"),
    [
        ("n1", "n1", None),  # our earlier binding went through: success
        ("n2", "n1", AlreadyBound),  # ... to the node it asked for, not this cycle's
        ("n2", "n3", BindError),  # a node we never asked for: another binder won
    ],
)
async def test_the_next_binding_reads_back_its_first_conflict(
    monkeypatch: pytest.MonkeyPatch, chosen: str, bound_to: str, outcome: type[Exception] | None
) -> None:
    unsettled = await failed_after_a_lost_answer(monkeypatch)
    # A new cycle binds the pod again before the watch showed it bound.
    again = conflict_then_read(Answer(200, pod_body("u1", bound_to)))
    if outcome is None:
        await bind_with(monkeypatch, again, unsettled, node=chosen)
    else:
        with pytest.raises(outcome) as raised:
            await bind_with(monkeypatch, again, unsettled, node=chosen)
        if isinstance(raised.value, AlreadyBound):
            assert raised.value.node_name == bound_to
        else:
            assert isinstance(raised.value, BindError)
            assert raised.value.conflict
    assert again.calls == [("POST", POD_PATH + "/binding"), ("GET", POD_PATH)]
    assert len(unsettled) == 0  # the read settled it


async def test_an_unreadable_pod_stays_unsettled_until_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    unsettled = await failed_after_a_lost_answer(monkeypatch)
    with pytest.raises(BindError):
        await bind_with(monkeypatch, conflict_then_read(Answer(403, b"{}")), unsettled)
    assert unsettled.node("ns", "p", "u1") == "n1"
    await bind_with(monkeypatch, conflict_then_read(Answer(200, pod_body("u1", "n1"))), unsettled)
    assert len(unsettled) == 0


async def test_a_settled_binding_leaves_the_next_conflict_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    unsettled = await failed_after_a_lost_answer(monkeypatch)
    await bind_with(
        monkeypatch, FakeServer({("POST", POD_PATH + "/binding"): [Answer(201, b"{}")]}), unsettled
    )
    assert len(unsettled) == 0
    only_post = FakeServer({("POST", POD_PATH + "/binding"): [CONFLICT]})
    with pytest.raises(BindError):
        await bind_with(monkeypatch, only_post, unsettled)
    assert only_post.calls == [("POST", POD_PATH + "/binding")]


@pytest.mark.parametrize(
    ("answers", "unsettled_after"),
    [
        ([Answer(403, b"{}")], False),  # refused at once: nothing was written
        ([Answer(404, b"{}")], False),
        ([Answer(503, b"{}"), Answer(403, b"{}")], True),  # a 5xx may come after the write
        ([aiohttp.ServerDisconnectedError(), Answer(422, b"{}")], True),
    ],
)
async def test_which_failures_leave_the_binding_unsettled(
    monkeypatch: pytest.MonkeyPatch, answers: list[Answer | BaseException], unsettled_after: bool
) -> None:
    unsettled = UnsettledBinds()
    with pytest.raises(BindError):
        await bind_with(monkeypatch, FakeServer({("POST", POD_PATH + "/binding"): answers}), unsettled)
    assert (unsettled.node("ns", "p", "u1") == "n1") is unsettled_after


def test_the_oldest_unsettled_bindings_are_forgotten_beyond_the_limit() -> None:
    unsettled = UnsettledBinds(limit=2)
    for name in ("a", "b", "c"):
        unsettled.unsettled("ns", name, "u", "n1")
    unsettled.unsettled("ns", "b", "u", "n2")  # refreshed: now the newest
    unsettled.unsettled("ns", "d", "u", "n1")
    assert [unsettled.node("ns", n, "u") for n in ("a", "b", "c", "d")] == [None, "n2", None, "n1"]
