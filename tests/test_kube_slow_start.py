"""SlowStart: a few requests in flight at first, one more per request that succeeds, up to the
limit; the ApiBinder's binds go through it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from policy_scheduler.kube import api_binder
from policy_scheduler.kube.api_binder import ApiBinder
from policy_scheduler.kube.slow_start import SlowStart
from policy_scheduler.kube.timings import ApiTimings
from policy_scheduler.scheduler.model import Pod


class Requests:
    """Requests that each hold a slot until the test lets them finish."""

    def __init__(self, gate: SlowStart) -> None:
        self.gate = gate
        self.running: set[int] = set()
        self.most = 0
        self.release: dict[int, asyncio.Future[None]] = {}

    async def one(self, ident: int) -> None:
        self.release[ident] = asyncio.get_running_loop().create_future()
        async with self.gate.slot():
            self.running.add(ident)
            self.most = max(self.most, len(self.running))
            try:
                await self.release[ident]
            finally:
                self.running.discard(ident)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_starts_with_initial_and_grows_by_one_per_success() -> None:
    gate = SlowStart(2, 4)
    requests = Requests(gate)
    tasks = [asyncio.create_task(requests.one(i)) for i in range(8)]
    await settle()
    assert requests.running == {0, 1}
    requests.release[0].set_result(None)
    await settle()
    # One slot freed and one added: two more start.
    assert requests.running == {1, 2, 3}
    assert gate.capacity == 3
    requests.release[1].set_result(None)
    requests.release[2].set_result(None)
    await settle()
    assert gate.capacity == 4  # the limit: no further growth
    assert len(requests.running) == 4
    for ident in range(3, 8):
        if not requests.release[ident].done():
            requests.release[ident].set_result(None)
        await settle()
    await asyncio.gather(*tasks)
    assert requests.most == 4
    assert gate.capacity == 4


async def test_a_failed_request_frees_its_slot_without_growing() -> None:
    gate = SlowStart(1, 4)
    requests = Requests(gate)
    first = asyncio.create_task(requests.one(0))
    second = asyncio.create_task(requests.one(1))
    await settle()
    assert requests.running == {0}
    requests.release[0].set_exception(RuntimeError("refused"))
    await settle()
    with pytest.raises(RuntimeError):
        await first
    assert requests.running == {1}
    assert gate.capacity == 1
    requests.release[1].set_result(None)
    await second
    assert gate.capacity == 2


@pytest.mark.parametrize(("initial", "limit"), [(0, 4), (5, 4), (-1, -1)])
def test_refuses_an_impossible_start(initial: int, limit: int) -> None:
    with pytest.raises(ValueError, match="slow start"):
        SlowStart(initial, limit)


async def test_api_binder_binds_through_its_slow_start(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    finish: dict[str, asyncio.Future[None]] = {}

    async def fake_bind(api: Any, namespace: str, name: str, uid: str, node: str, **_: Any) -> None:
        started.append(name)
        finish[name] = asyncio.get_running_loop().create_future()
        await finish[name]

    monkeypatch.setattr(api_binder, "bind", fake_bind)
    binder = ApiBinder(object(), timings=ApiTimings(binds_at_start=1, request_connections=8))
    pods = [Pod(name=f"p{i}", namespace="default", uid=f"u{i}") for i in range(3)]
    tasks = [asyncio.create_task(binder.bind(pod, "n1")) for pod in pods]
    await settle()
    assert started == ["p0"]  # one bind in flight at first
    finish["p0"].set_result(None)
    await settle()
    assert started == ["p0", "p1", "p2"]  # its success made room for two
    for name in ("p1", "p2"):
        finish[name].set_result(None)
    await asyncio.gather(*tasks)
    assert binder.in_flight.capacity == 4
