"""Assumed pods whose binding finished but never got confirmed by the watch expire."""

from __future__ import annotations

import asyncio

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from tests.fakeclock import FakeClock


class _SilentBinder:
    """Binds, but the 'watch' never reports the bound pod."""

    async def bind(self, pod: Pod, node_name: str) -> None:
        return None


def test_unconfirmed_assumed_pod_expires_and_frees_its_node() -> None:
    clock = FakeClock(now=100.0)
    engine = Engine(binder=_SilentBinder(), seed=1, clock=clock)
    engine.set_profiles([resolve_profile(ProfileConfig(), implemented_plugin_names())])
    engine.node_added(Node("n1", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 10}))
    pod = Pod("p", uid="u1", containers=(Container("c", requests={"cpu": 800}),))
    engine.pod_added(pod)

    async def schedule() -> None:
        assert engine.schedule_next()
        await engine.scheduler.drain_binding()

    asyncio.run(schedule())
    cpu = engine.table.resource_index["cpu"]
    assert engine.cache.is_assumed(pod)
    assert engine.table.requested[cpu, 0] == 800

    clock.advance(engine.cache.assumed_ttl - 1)
    assert engine.expire_assumed_pods() == []  # not yet
    assert engine.table.requested[cpu, 0] == 800

    clock.advance(2)
    expired = engine.expire_assumed_pods()
    assert [p.key for p in expired] == ["default/p"]
    assert not engine.cache.is_assumed(pod)
    assert engine.table.requested[cpu, 0] == 0
