"""The benchmark's CPU readings (machine-wide, per process) and its wait for a settled control plane."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from policy_scheduler.bench_e2e.procstat import MachineCpu, busy_fraction, cpu_by_name, machine_cpu
from policy_scheduler.bench_e2e.runner import settle

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


def test_settle_stops_at_its_limit_and_accepts_a_busy_baseline() -> None:
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        capped = asyncio.run(settle({"apiserver": spinner.pid}, baseline=0.0, window=0.2, limit=0.5))
        busy_at_rest = asyncio.run(settle({"apiserver": spinner.pid}, baseline=1.0, window=0.2, limit=20))
    finally:
        spinner.kill()
        spinner.wait()
    assert capped.waited < 1.5
    assert capped.cores > 0.5
    assert busy_at_rest.waited < 1.0  # a spinning process at rest is settled at once
