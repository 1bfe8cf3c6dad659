"""Binding is retried through an API server outage and resolved when an answer was lost."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from policy_scheduler.kube import binder
from policy_scheduler.kube.binder import BindError, bind
from policy_scheduler.kube.retry import Answer

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
    await bind(None, "ns", "p", "u1", node, sleep=_no_sleep)


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
