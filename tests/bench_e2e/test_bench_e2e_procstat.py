"""The benchmark's CPU readings (machine-wide, per process) and its wait for a settled control plane."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Mapping

import pytest

from policy_scheduler.bench_e2e.procstat import MachineCpu, busy_fraction, cpu_by_name, machine_cpu
from policy_scheduler.bench_e2e.runner import Quiet, settle

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(user: int, nice: int, system: int, idle: int, iowait: int, irq: int = 0, softirq: int = 0) -> str:
    # steal 0, then guest and guest_nice, which the kernel already counts in user and nice
    return f"cpu  {user} {nice} {system} {idle} {iowait} {irq} {softirq} 0 50 7\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


def test_idle_and_iowait_are_not_busy_and_guest_time_is_not_counted_twice() -> None:
    reading = machine_cpu(_stat(user=300, nice=20, system=80, idle=500, iowait=100, irq=3, softirq=7))
    assert reading == MachineCpu(busy=410 / TICKS, total=1010 / TICKS)


def test_busy_fraction_is_the_busy_share_of_the_elapsed_capacity() -> None:
    before = machine_cpu(_stat(user=100, nice=0, system=0, idle=100, iowait=0))
    after = machine_cpu(_stat(user=250, nice=0, system=50, idle=150, iowait=0))
    assert busy_fraction(before, after) == pytest.approx(200 / 250)
    assert busy_fraction(after, after) == 0.0


def test_live_machine_reading_advances() -> None:
    first = machine_cpu()
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    second = machine_cpu()
    assert second.total > first.total
    assert 0.0 <= busy_fraction(first, second) <= 1.0


def test_cpu_by_name_reads_each_process_tree() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        seconds: dict[str, float] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the tick-granular counter has moved
            seconds = cpu_by_name({"spinner": spinner.pid, "self": os.getpid()})
            if seconds["spinner"] > 0:
                break
            time.sleep(0.01)
        assert set(seconds) == {"spinner", "self"}
        assert seconds["spinner"] > 0
    finally:
        spinner.kill()
        spinner.wait()


def test_settle_waits_until_the_control_plane_is_back_near_its_rate_at_rest() -> None:
    # A stand-in for a control plane still digesting a burst: busy for a while, then idle.
    busy_then_idle = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.monotonic() + 1.2\nwhile time.monotonic() < end: pass\ntime.sleep(60)",
        ]
    )
    try:
        quiet = asyncio.run(settle({"apiserver": busy_then_idle.pid}, baseline=0.0, window=0.3, limit=20))
    finally:
        busy_then_idle.kill()
        busy_then_idle.wait()
    assert quiet.waited >= 1.2  # not before the burst was over
    assert quiet.cores <= 0.1  # the rate it settled at is the one at rest
    assert set(quiet.cluster) == {"apiserver"}
    assert 0.0 <= quiet.machine_busy <= 1.0


class ScriptedControlPlane:
    """A control plane whose CPU rate per window is scripted, on a clock that each window advances."""

    def __init__(self, rates: list[float]) -> None:
        self.rates = rates
        self.now = 0.0
        self.reads = 0

    def clock(self) -> float:
        return self.now

    async def read(self, pids: Mapping[str, int], window: float) -> Quiet:
        cores = self.rates[min(self.reads, len(self.rates) - 1)]
        self.reads += 1
        self.now += window
        return Quiet(cores, 0.5, {name: cores for name in pids}, MachineCpu(0, 0), window)


def test_settle_stops_at_its_limit() -> None:
    busy = ScriptedControlPlane([2.0])
    quiet = asyncio.run(
        settle({"apiserver": 1}, baseline=0.0, window=0.2, limit=0.5, read=busy.read, clock=busy.clock)
    )
    assert busy.reads == 3  # 0.2, 0.4, 0.6: the first window at or past the limit is the last
    assert quiet.waited == pytest.approx(0.6)
    assert quiet.cores == 2.0


def test_a_busy_baseline_is_settled_at_once() -> None:
    spinning = ScriptedControlPlane([1.05, 0.0])
    quiet = asyncio.run(
        settle({"apiserver": 1}, baseline=1.0, window=0.2, limit=20, read=spinning.read, clock=spinning.clock)
    )
    assert spinning.reads == 1  # within 10% of a busy rate at rest
    assert quiet.cores == 1.05


def test_settle_waits_for_the_rate_to_come_back_near_the_baseline() -> None:
    draining = ScriptedControlPlane([1.5, 0.9, 0.4, 0.12, 0.3])
    quiet = asyncio.run(
        settle({"apiserver": 1}, baseline=0.1, window=0.5, limit=20, read=draining.read, clock=draining.clock)
    )
    assert draining.reads == 4
    assert quiet.cores == 0.12
    assert quiet.waited == pytest.approx(2.0)
