"""DefaultBinder: port of default_binder_test.go against a fake Binder."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SUCCESS, Code
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.defaultbinder import DefaultBinder

NODE = "foohost.kubernetes.mydomain.com"


class FakeBinder:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.bindings: list[tuple[str, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.fail is not None:
            raise self.fail
        self.bindings.append((pod.key, node_name))


async def test_successful_bind() -> None:
    binder = FakeBinder()
    plugin = DefaultBinder(Handle(table=NodeTable(), binder=binder), {})
    status = await plugin.bind(CycleState(), Pod("foo", namespace="ns"), NODE)
    assert status == SUCCESS
    assert binder.bindings == [("ns/foo", NODE)]


async def test_binding_error() -> None:
    binder = FakeBinder(RuntimeError("binding error"))
    plugin = DefaultBinder(Handle(table=NodeTable(), binder=binder), {})
    status = await plugin.bind(CycleState(), Pod("foo", namespace="ns"), NODE)
    assert status.code == Code.ERROR
    assert status.message == "binding error"
    assert binder.bindings == []


async def test_no_binder_is_an_error() -> None:
    plugin = DefaultBinder(Handle(table=NodeTable()), {})
    status = await plugin.bind(CycleState(), Pod("foo"), NODE)
    assert status.code == Code.ERROR
