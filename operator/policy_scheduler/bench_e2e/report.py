"""The benchmark report: JSON, a Markdown table and a PNG chart."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policy_scheduler.bench_e2e.contenders import ALL, KUBE, NOOP
from policy_scheduler.bench_e2e.png import RGB, write_bar_chart
from policy_scheduler.bench_e2e.runner import SLICE_PODS, RunResult

# Chart colours, in contender order: grey ceiling, blue kube-scheduler, orange policy-scheduler.
COLORS: dict[str, RGB] = {
    "noop": (150, 150, 150),
    "noop-events": (200, 200, 200),
    "kube-scheduler": (52, 101, 164),
    "policy-scheduler": (245, 121, 0),
}


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    return {
        "nproc": os.cpu_count(),
        "memory_gb": round(mem_kb / 2**20, 1),
        "cpu_model": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _ratio(value: float, reference: RunResult | None) -> float | None:
    if reference is None or not reference.pods_per_second:
        return None
    return round(value / reference.pods_per_second, 3)


def rows(results: Sequence[RunResult]) -> list[dict[str, Any]]:
    """Each result as a dict with its ratios to kube-scheduler and to the no-op ceiling."""
    by_key = {(r.workload, r.nodes, r.contender): r for r in results}
    out = []
    for r in results:
        row = r.as_dict()
        row["vs_kube_scheduler"] = _ratio(r.pods_per_second, by_key.get((r.workload, r.nodes, KUBE)))
        row["vs_ceiling"] = _ratio(r.pods_per_second, by_key.get((r.workload, r.nodes, NOOP)))
        out.append(row)
    return out


def report(results: Sequence[RunResult], command: str) -> dict[str, Any]:
    return {"command": command, "machine": machine(), "results": rows(results)}


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "| workload | nodes | contender | pods | bound | pods/s | p50 | p90 | p99 | first bind s | "
        "last bind s | CPU s | CPU ms/pod | control plane ms/pod over background | "
        "machine busy % before, during | peak RSS MB | vs kube-scheduler | vs ceiling |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        lines.append(
            f"| {r['workload']} | {r['nodes']} | {r['contender']} | {r['measured']} | {r['bound']} | "
            f"{r['pods_per_second']:.1f} | {r['p50']:.0f} | {r['p90']:.0f} | {r['p99']:.0f} | "
            f"{_fmt(r['seconds_to_first_bind'])} | {_fmt(r['seconds_to_last_bind'])} | "
            f"{r['cpu_seconds']:.1f} | {r['cpu_ms_per_pod']:.1f} | "
            f"{r['cluster_cpu_ms_per_pod']:.1f} | "
            f"{100 * r['machine_busy_before']:.0f}, {100 * r['machine_busy']:.0f} | "
            f"{r['peak_rss_mb']:.0f} | {_fmt(r['vs_kube_scheduler'], '.2f')} | "
            f"{_fmt(r['vs_ceiling'], '.2f')} |"
        )
    errors = [
        f"- {r['workload']}/{r['nodes']}/{r['contender']}: {r['error']}" for r in doc["results"] if r["error"]
    ]
    return "\n".join(lines + _slices(doc) + (["", *errors] if errors else [])) + "\n"


def _slices(doc: dict[str, Any]) -> list[str]:
    """Pods/s per slice of SLICE_PODS binds, for the runs that bound more than one slice."""
    runs = [r for r in doc["results"] if len(r.get("slice_rates") or ()) > 1]
    if not runs:
        return []
    lines = [
        "",
        f"| workload | nodes | contender | pods/s per {SLICE_PODS:,}-pod slice |",
        "|---|---:|---|---|",
    ]
    for r in runs:
        rates = ", ".join(f"{rate:.0f}" for rate in r["slice_rates"])
        lines.append(f"| {r['workload']} | {r['nodes']} | {r['contender']} | {rates} |")
    return lines


def chart(doc: dict[str, Any], path: Path) -> None:
    """One group per (workload, nodes); bar heights relative to the group's fastest contender."""
    groups: dict[tuple[str, int], dict[str, float]] = {}
    for r in doc["results"]:
        groups.setdefault((r["workload"], r["nodes"]), {})[r["contender"]] = r["pods_per_second"]
    shown = [c for c in ALL if any(c in group for group in groups.values())]
    values = []
    for group in groups.values():
        top = max(group.values()) or 1.0
        values.append([group.get(c, 0.0) / top for c in shown])
    write_bar_chart(path, values, [COLORS[c] for c in shown])
