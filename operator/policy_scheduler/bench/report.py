"""Benchmark results: one record per workload, as a table or JSON."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policy_scheduler.bench.workloads import Measurement, Workload


@dataclass(slots=True)
class Result:
    workload: Workload
    runs: list[Measurement]
    setup_seconds: float
    memory: dict[str, float] | None = None
    profile: str = ""

    def _per_pod(self, seconds: float, run: Measurement) -> float:
        return seconds / max(run.cycles, 1) * 1e6

    @property
    def wall_us_runs(self) -> list[float]:
        return [self._per_pod(r.wall_seconds, r) for r in self.runs]

    @property
    def cpu_us_runs(self) -> list[float]:
        return [self._per_pod(r.cpu_seconds, r) for r in self.runs]

    @property
    def us_per_pod(self) -> float:
        """Median wall time per scheduling cycle (binding included), in µs."""
        return statistics.median(self.wall_us_runs)

    @property
    def cpu_us_per_pod(self) -> float:
        return statistics.median(self.cpu_us_runs)

    @property
    def pods_per_second(self) -> float:
        return 1e6 / self.us_per_pod if self.us_per_pod else 0.0

    def as_dict(self) -> dict[str, Any]:
        w = self.workload
        last = self.runs[-1]
        return {
            "description": w.description,
            "nodes": w.nodes,
            "existing_pods": w.existing,
            "measured_pods": w.measured,
            "percentage_of_nodes_to_score": w.percentage_of_nodes_to_score,
            "us_per_pod": round(self.us_per_pod, 1),
            "cpu_us_per_pod": round(self.cpu_us_per_pod, 1),
            "pods_per_second": round(self.pods_per_second, 1),
            "runs_us_per_pod": [round(v, 1) for v in self.wall_us_runs],
            "runs_cpu_us_per_pod": [round(v, 1) for v in self.cpu_us_runs],
            "cycles": last.cycles,
            "scheduled": last.bound,
            "setup_seconds": round(self.setup_seconds, 3),
            "memory": self.memory,
            "upstream": {"test": w.upstream or None, "threshold_pods_per_second": w.upstream_threshold},
        }


@dataclass(slots=True)
class Report:
    quick: bool
    repeat: int
    results: list[Result] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "machine": machine(),
            "quick": self.quick,
            "repeat": self.repeat,
            "max_rss_mb": round(max_rss_mb(), 1),
            "workloads": {r.workload.name: r.as_dict() for r in self.results},
        }

    def table(self) -> str:
        head = (
            "workload",
            "nodes",
            "existing",
            "pods",
            "µs/pod",
            "cpu µs/pod",
            "pods/s",
            "setup s",
            "mem MB",
            "peak MB",
            "upstream≥",
        )
        rows: list[tuple[str, ...]] = [head]
        for r in self.results:
            w = r.workload
            memory = r.memory or {}
            rows.append(
                (
                    w.name,
                    str(w.nodes),
                    str(w.existing),
                    f"{r.runs[-1].bound}/{w.measured}",
                    f"{r.us_per_pod:.0f}",
                    f"{r.cpu_us_per_pod:.0f}",
                    f"{r.pods_per_second:.0f}",
                    f"{r.setup_seconds:.1f}",
                    f"{memory['after_setup_mb']:.0f}" if memory else "-",
                    f"{memory['peak_mb']:.0f}" if memory else "-",
                    f"{w.upstream_threshold:.0f}" if w.upstream_threshold else "-",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines = [
            "  ".join(cell.rjust(widths[i]) if i else cell.ljust(widths[i]) for i, cell in enumerate(row))
            for row in rows
        ]
        m = machine()
        lines.append("")
        lines.append(
            f"python {m['python']}, numpy {m['numpy']}, {m['cpus']} cpu(s); median of {self.repeat} run(s); "
            f"max RSS {max_rss_mb():.0f} MB"
        )
        lines.append(
            "µs/pod: wall time per scheduling cycle, binding included; cpu µs/pod: this process's CPU time"
        )
        lines.append(
            "mem MB: traced memory after setup (tables, pods, indexes); peak MB: traced peak while scheduling"
        )
        lines.append(
            "upstream≥: kube-scheduler's scheduler_perf throughput threshold (pods/s) on its CI hardware"
        )
        for r in self.results:
            if r.profile:
                lines += ["", f"---- profile: {r.workload.name}", r.profile]
        return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }


def max_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
