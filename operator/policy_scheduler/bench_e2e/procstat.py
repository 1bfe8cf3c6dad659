"""CPU time and peak memory of a process (and its children), and of the whole machine, from /proc."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    peak_rss_mb: float


def _stat_fields(pid: int) -> list[str]:
    # The command name may hold spaces and parentheses: split after the last ')'.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _cpu(pid: int) -> float:
    """utime + stime + the waited-for children's cutime + cstime, in seconds."""
    fields = _stat_fields(pid)
    return sum(int(v) for v in fields[11:15]) / _TICKS


def _hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def usage(pid: int) -> Usage:
    """Read while the process still runs: CPU of the tree, peak RSS of the largest member."""
    cpu, peak = 0.0, 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            cpu += _cpu(current)
            peak = max(peak, _hwm_kb(current))
            pending += _children(current)
        except OSError:  # exited in between
            continue
    return Usage(cpu, peak / 1024)


@dataclass(frozen=True)
class MachineCpu:
    """Seconds of CPU time summed over all of the machine's CPUs since boot."""

    busy: float
    total: float


def machine_cpu(stat: str | None = None) -> MachineCpu:
    """The first line of /proc/stat (`stat` is its text, for tests): busy = all but idle and
    iowait; guest times are already inside user and nice, so they are not added again."""
    text = Path("/proc/stat").read_text() if stat is None else stat
    fields = [int(v) for v in text.splitlines()[0].split()[1:9]]
    total = sum(fields)
    idle = fields[3] + fields[4]
    return MachineCpu((total - idle) / _TICKS, total / _TICKS)


def busy_fraction(before: MachineCpu, after: MachineCpu) -> float:
    """The share of the machine's CPU capacity that was busy between two readings."""
    span = after.total - before.total
    # The counters are sums of floats: a fully busy machine can come out a hair above 1.
    return min(1.0, max(0.0, (after.busy - before.busy) / span)) if span > 0 else 0.0


def cpu_by_name(pids: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds of each named process tree (0 for one that has exited)."""
    return {name: usage(pid).cpu_seconds for name, pid in pids.items()}
