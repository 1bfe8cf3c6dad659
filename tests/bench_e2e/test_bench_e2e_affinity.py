"""`--contender-cpu`: the contender alone on one CPU, every other process moved off it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from policy_scheduler.bench_e2e.affinity import contender_alone, on_cpu, other_cpus, pin

CPUS = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs")


def _threads_affinity(pid: int) -> list[set[int]]:
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


@needs_two
def test_other_cpus_leaves_out_the_contenders() -> None:
    assert other_cpus(CPUS[0]) == set(CPUS) - {CPUS[0]}


def test_a_cpu_that_is_not_available_is_refused() -> None:
    with pytest.raises(ValueError, match="--contender-cpu 4096"):
        other_cpus(4096)


@needs_two
def test_pin_moves_every_thread_of_a_process() -> None:
    # a child with a second thread, both sleeping
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)",
        ]
    )
    try:
        deadline = time.monotonic() + 10
        while len(os.listdir(f"/proc/{child.pid}/task")) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the second thread exists
        assert len(os.listdir(f"/proc/{child.pid}/task")) >= 2
        pin([child.pid], {CPUS[1]})
        assert _threads_affinity(child.pid) == [{CPUS[1]}] * len(os.listdir(f"/proc/{child.pid}/task"))
    finally:
        child.kill()
        child.wait()


@needs_two
def test_the_contender_command_runs_on_its_cpu_only() -> None:
    argv = on_cpu([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], CPUS[1])
    assert subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip() == f"[{CPUS[1]}]"


@needs_two
def test_contender_alone_moves_the_others_off_its_cpu_and_back() -> None:
    before = os.sched_getaffinity(0)
    with contender_alone(CPUS[0], []):
        assert os.sched_getaffinity(0) == before - {CPUS[0]}
    assert os.sched_getaffinity(0) == before
    with contender_alone(None, []):
        assert os.sched_getaffinity(0) == before
