"""LeaderElector: leadership belongs to one election term; an old term can never switch off a
newer one (the library leaves its onstarted_leading task running when a renewal raises)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes_asyncio.leaderelection import electionconfig, leaderelection

from policy_scheduler.kube import leader as leader_module
from policy_scheduler.kube.leader import AlwaysLeader, LeaderElector, LeadershipGate
from policy_scheduler.kube.timings import LeaderTimings


class _ScriptedElection:
    """Stands in for kubernetes_asyncio's LeaderElection: each run() plays the next script step."""

    script: list[str] = []
    started: list[asyncio.Task[Any]] = []
    hold = asyncio.Event()

    def __init__(self, config: Any) -> None:
        self.config = config

    async def run(self) -> None:
        step = _ScriptedElection.script.pop(0)
        # As the library: the start callback runs as a task of its own.
        _ScriptedElection.started.append(asyncio.create_task(self.config.onstarted_leading()))
        await asyncio.sleep(0)
        if step == "renewal-raises":
            raise ConnectionResetError("API server gone")
        await _ScriptedElection.hold.wait()  # "leads" until the test ends


async def test_a_failed_term_cannot_switch_off_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    _ScriptedElection.script = ["renewal-raises", "leads"]
    _ScriptedElection.started = []
    _ScriptedElection.hold = asyncio.Event()
    monkeypatch.setattr(leaderelection, "LeaderElection", _ScriptedElection)
    timings = LeaderTimings(lease_duration=15, renew_deadline=10, retry_period=0)
    elector = LeaderElector(object(), namespace="ns", name="lease", identity="me", timings=timings)
    monkeypatch.setattr(leader_module, "LeaseLock", lambda *a: object())
    monkeypatch.setattr(electionconfig, "Config", lambda lock, **kw: SimpleNamespace(**kw))
    changes: list[bool] = []
    elector.on_change = changes.append
    runner = asyncio.create_task(elector.run())
    try:
        await asyncio.wait_for(elector.became_leader.wait(), timeout=5)
        for _ in range(100):  # let the second term start (a few loop turns)
            if not _ScriptedElection.script and len(_ScriptedElection.started) == 2:
                break
            await asyncio.sleep(0)
        # The failed term's start task is finally destroyed (as the garbage collector closes an
        # orphaned coroutine): it must not take the new term's leadership with it.
        for task in _ScriptedElection.started:
            task.cancel()
        await asyncio.gather(*_ScriptedElection.started, return_exceptions=True)
        assert elector.is_leader()
        assert changes[-1] is True
    finally:
        _ScriptedElection.hold.set()
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    assert not elector.is_leader()


async def test_a_start_of_an_ended_term_is_void(monkeypatch: pytest.MonkeyPatch) -> None:
    timings = LeaderTimings(lease_duration=15, renew_deadline=10, retry_period=0)
    elector = LeaderElector(object(), namespace="ns", name="lease", identity="me", timings=timings)
    elector._term = 3
    await elector._lead(2)  # a start task of term 2 that ran late
    assert not elector.is_leader()
    await elector._lead(3)
    assert elector.is_leader()


# ---- LeadershipGate: a period of leadership starts once the caches are current ----------------


class _Leadership:
    def __init__(self) -> None:
        self.became_leader = asyncio.Event()
        self.term = 0
        self._leading = False

    def is_leader(self) -> bool:
        return self._leading

    def lead(self) -> None:
        self.term += 1
        self._leading = True
        self.became_leader.set()

    def lose(self) -> None:
        self.term += 1
        self._leading = False
        self.became_leader.clear()


async def test_a_regained_lease_waits_for_current_caches() -> None:
    leadership = _Leadership()
    current = asyncio.Event()
    gate = LeadershipGate(leadership, current.wait)
    assert not gate.should_schedule()

    leadership.lead()
    current.set()  # a standby whose watches never broke
    await asyncio.wait_for(gate.until_ready(), 1)
    assert gate.should_schedule()

    # An outage: the lease and the watches are lost; the lease comes back first.
    leadership.lose()
    current.clear()
    assert not gate.should_schedule()
    leadership.lead()
    assert not gate.should_schedule()  # a new period: not before the caches are current
    ready = asyncio.create_task(gate.until_ready())
    await asyncio.sleep(0)
    assert not ready.done()
    current.set()
    await asyncio.wait_for(ready, 1)
    assert gate.should_schedule()

    # Within a period, a watch reconnecting (current cleared for a moment) changes nothing.
    current.clear()
    assert gate.should_schedule()


async def test_a_lease_lost_while_waiting_for_the_caches_is_waited_for_again() -> None:
    leadership = _Leadership()
    current = asyncio.Event()
    gate = LeadershipGate(leadership, current.wait)
    leadership.lead()
    ready = asyncio.create_task(gate.until_ready())
    await asyncio.sleep(0)
    leadership.lose()
    current.set()
    await asyncio.sleep(0)
    assert not ready.done()  # current caches, but no longer the leader
    leadership.lead()
    await asyncio.wait_for(ready, 1)
    assert gate.should_schedule()


async def test_always_leader_schedules_once_the_caches_are_current() -> None:
    current = asyncio.Event()
    gate = LeadershipGate(AlwaysLeader(), current.wait)
    assert not gate.should_schedule()
    current.set()
    await asyncio.wait_for(gate.until_ready(), 1)
    assert gate.should_schedule()
