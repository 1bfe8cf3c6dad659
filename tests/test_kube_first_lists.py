"""The first lists of nodes and pods the start-up asks for early: the operator's informers take
them for exactly the requests they would make, once, and list themselves otherwise."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy_scheduler.kube import first_lists as first_lists_module
from policy_scheduler.kube import informer as informer_module
from policy_scheduler.kube.first_lists import FirstLists, ListRequest, node_and_pod_lists
from policy_scheduler.kube.paths import NODES, PODS
from policy_scheduler.kube.retry import Answer
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.operator import Operator

PAGE_SIZE = DEFAULTS.informer.page_size

NODE = {"metadata": {"name": "n1", "resourceVersion": "3"}, "status": {"allocatable": {"cpu": "4"}}}
POD = {"metadata": {"name": "p1", "namespace": "ns", "uid": "u1", "resourceVersion": "4"}, "spec": {}}


def _list(item: dict[str, Any], version: str) -> bytes:
    return json.dumps({"kind": "List", "metadata": {"resourceVersion": version}, "items": [item]}).encode()


class Server:
    """Answers lists: the early ones through first_lists' `call`, the informers' through theirs."""

    def __init__(self) -> None:
        self.early: list[ListRequest] = []
        self.informers: list[str] = []
        self.fail_early: set[str] = set()

    async def early_call(self, _api: Any, _method: str, path: str, **options: Any) -> Answer:
        self.early.append(ListRequest.of(path, options["query"], options["accept"]))
        if path in self.fail_early:
            raise ConnectionError("refused")
        return Answer(200, _list(NODE if path == NODES else POD, "10"))

    async def informer_call(self, _api: Any, _method: str, path: str, **_: Any) -> Answer:
        self.informers.append(path)
        return Answer(200, _list(NODE if path == NODES else POD, "20"))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    fake = Server()
    monkeypatch.setattr(first_lists_module, "call", fake.early_call)
    monkeypatch.setattr(informer_module, "call", fake.informer_call)
    return fake


async def test_the_node_and_pod_informers_take_the_early_answers(server: Server) -> None:
    """A request here that differed from the informer's (selector, Accept, page size) would
    silently waste the early list."""
    lists = FirstLists(None, node_and_pod_lists(PAGE_SIZE), 5.0)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"), lists)
    for informer in (operator.cluster.nodes, operator.cluster.pods):
        await informer._list_and_sync()
    assert server.informers == []  # nothing asked twice
    assert [r.path for r in server.early] == [NODES, PODS]
    assert (operator.cluster.nodes.resource_version, operator.cluster.pods.resource_version) == ("10", "10")
    assert set(operator.cluster.nodes.store) == {"n1"}
    assert set(operator.cluster.pods.store) == {"ns/p1"}
    # Taken once: a relist asks the server.
    await operator.cluster.nodes._list_and_sync()
    assert server.informers == [NODES]
    await lists.close()


async def test_a_failed_early_request_is_asked_again(server: Server) -> None:
    server.fail_early = {NODES}
    lists = FirstLists(None, node_and_pod_lists(PAGE_SIZE), 5.0)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"), lists)
    await operator.cluster.nodes._list_and_sync()
    await operator.cluster.pods._list_and_sync()
    assert server.informers == [NODES]
    assert operator.cluster.nodes.resource_version == "20"
    await lists.close()


async def test_a_different_request_is_not_answered_early(server: Server) -> None:
    lists = FirstLists(None, node_and_pod_lists(PAGE_SIZE + 1), 5.0)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"), lists)
    await operator.cluster.nodes._list_and_sync()
    assert server.informers == [NODES]
    await lists.close()  # the unused answers are dropped
    assert await lists.take(node_and_pod_lists(PAGE_SIZE + 1)[1]) is None
