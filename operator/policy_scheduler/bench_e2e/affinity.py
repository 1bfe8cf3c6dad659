"""`--contender-cpu`: the contender on a CPU of its own, everything else on the others.

On a real cluster the scheduler does not share its cores with the API server, etcd and a few
thousand kubelets. Pinning separates what the contender's own process costs from what the
shared machine makes it wait for: the control plane, kwok and this harness move to the other
CPUs (every thread; threads they start later inherit it), the contender's command is run
through `taskset`, so even its first instructions run on its CPU.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path


def other_cpus(cpu: int) -> set[int]:
    """The CPUs this process may use, without `cpu`; refuses a CPU that leaves none."""
    available = os.sched_getaffinity(0)
    if cpu not in available:
        raise ValueError(f"--contender-cpu {cpu}: not one of this process's CPUs {sorted(available)}")
    rest = available - {cpu}
    if not rest:
        raise ValueError(f"--contender-cpu {cpu}: no other CPU is left for the control plane")
    return rest


def pin(pids: Iterable[int], cpus: set[int]) -> None:
    """Every thread of each process onto `cpus` (a process gone meanwhile is skipped)."""
    for pid in pids:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except FileNotFoundError:
            continue
        for tid in threads:
            try:
                os.sched_setaffinity(tid, cpus)
            except (ProcessLookupError, FileNotFoundError):
                continue


def on_cpu(argv: Sequence[str], cpu: int) -> list[str]:
    """`argv` run on `cpu` only."""
    return ["taskset", "--cpu-list", str(cpu), *argv]


@contextlib.contextmanager
def contender_alone(cpu: int | None, others: Iterable[int]) -> Iterator[None]:
    """While inside: the processes `others` and this one off `cpu` (nothing when None)."""
    if cpu is None:
        yield
        return
    pids = [*others, os.getpid()]
    shared = os.sched_getaffinity(0)
    pin(pids, other_cpus(cpu))
    try:
        yield
    finally:
        pin(pids, shared)
