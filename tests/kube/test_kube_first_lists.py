"""The first lists the start-up asks for early: every informer of the operator takes its own, for
exactly the request it would make, once, and lists itself otherwise."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from policy_scheduler.kube import first_lists as first_lists_module
from policy_scheduler.kube import informer as informer_module
from policy_scheduler.kube import paths
from policy_scheduler.kube.first_lists import EARLY_CONNECTIONS, FirstLists, ListRequest, informer_first_lists
from policy_scheduler.kube.paths import NODES, PODS
from policy_scheduler.kube.retry import Answer
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.operator import Operator
from tests.no_api import NO_API

PAGE_SIZE = DEFAULTS.informer.page_size

NODE = {"metadata": {"name": "n1", "resourceVersion": "3"}, "status": {"allocatable": {"cpu": "4"}}}
POD = {"metadata": {"name": "p1", "namespace": "ns", "uid": "u1", "resourceVersion": "4"}, "spec": {}}


def _list(path: str, version: str) -> bytes:
    items = {NODES: [NODE], PODS: [POD]}.get(path, [])
    return json.dumps({"kind": "List", "metadata": {"resourceVersion": version}, "items": items}).encode()


class Server:
    """Answers lists: the early ones through first_lists' `call`, the informers' through theirs."""

    def __init__(self) -> None:
        self.early: list[ListRequest] = []
        self.informers: list[str] = []
        self.fail_early: set[str] = set()
        self.in_flight = self.most_in_flight = 0

    async def early_call(self, _api: Any, _method: str, path: str, **options: Any) -> Answer:
        self.early.append(ListRequest.of(path, options["query"], options["accept"]))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)  # the answer takes a turn of the loop
        self.in_flight -= 1
        if path in self.fail_early:
            raise ConnectionError("refused")
        return Answer(200, _list(path, "10"))

    async def informer_call(self, _api: Any, _method: str, path: str, **_: Any) -> Answer:
        self.informers.append(path)
        return Answer(200, _list(path, "20"))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    fake = Server()
    monkeypatch.setattr(first_lists_module, "call", fake.early_call)
    monkeypatch.setattr(informer_module, "call", fake.informer_call)
    return fake


def _operator(lists: FirstLists) -> Operator:
    return Operator(NO_API, OperatorConfig(leader_elect=False, identity="me"), lists)


async def test_every_informer_takes_its_early_answer(server: Server) -> None:
    """A request here that differed from its informer's (selector, Accept, page size) would
    silently waste the early list, and an informer missing here would list only after the node
    list is decoded."""
    lists = FirstLists(NO_API, informer_first_lists(PAGE_SIZE), 5.0)
    operator = _operator(lists)
    # The Workload API's informers list for themselves once discovery found their version.
    workload_api = {*paths.WORKLOAD_API_PODGROUPS, paths.WORKLOAD_API_WORKLOADS}
    informers = [
        i
        for i in [*operator.informers(), *operator.policy_informers.informers()]
        if i.path not in workload_api
    ]
    for informer in informers:
        await informer._list_and_sync()
    assert server.informers == []  # nothing asked twice
    assert not workload_api & {r.path for r in server.early}
    assert sorted(r.path for r in server.early) == sorted(i.path for i in informers)
    assert [r.path for r in server.early][:2] == [NODES, PODS]  # the big ones leave first
    assert server.most_in_flight <= EARLY_CONNECTIONS
    assert (operator.cluster.nodes.resource_version, operator.cluster.pods.resource_version) == ("10", "10")
    assert set(operator.cluster.nodes.store) == {"n1"}
    assert set(operator.cluster.pods.store) == {"ns/p1"}
    # Taken once: a relist asks the server.
    await operator.cluster.nodes._list_and_sync()
    assert server.informers == [NODES]
    await lists.close()


async def test_a_failed_early_request_is_asked_again(server: Server) -> None:
    server.fail_early = {NODES}
    lists = FirstLists(NO_API, informer_first_lists(PAGE_SIZE), 5.0)
    operator = _operator(lists)
    await operator.cluster.nodes._list_and_sync()
    await operator.cluster.pods._list_and_sync()
    assert server.informers == [NODES]
    assert operator.cluster.nodes.resource_version == "20"
    await lists.close()


async def test_a_different_request_is_not_answered_early(server: Server) -> None:
    lists = FirstLists(NO_API, informer_first_lists(PAGE_SIZE + 1), 5.0)
    operator = _operator(lists)
    await operator.cluster.nodes._list_and_sync()
    assert server.informers == [NODES]
    await lists.close()  # the unused answers are dropped
    assert await lists.take(informer_first_lists(PAGE_SIZE + 1)[1]) is None
