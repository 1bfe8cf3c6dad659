"""`python -m policy_scheduler.bench`: in-memory scheduling benchmarks through the real Engine.

Each run builds a fresh cluster (not timed), then times scheduling the measured pods one cycle
after another, binding included (the binder only records the binding). The figure is the median
over --repeat runs of wall time per pod. Memory is measured in a separate, shorter run under
tracemalloc, because tracing slows everything down.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import sys
import tracemalloc

from policy_scheduler.bench.report import Report, Result
from policy_scheduler.bench.workloads import Measurement, Workload, catalogue, prepare, quick, run_measured
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import NEWEST_SUPPORTED, parse_supported

MEMORY_RUN_PODS = 200


def measure(
    workload: Workload, repeat: int, seed: int, features: Features | None = None
) -> tuple[list[Measurement], float]:
    runs: list[Measurement] = []
    setup = 0.0
    for i in range(repeat):
        prepared = prepare(workload, seed=seed + i, features=features)
        setup = prepared.setup_seconds
        gc.collect()
        runs.append(run_measured(prepared, limit=4 * workload.measured))
        del prepared
    return runs, setup


def measure_memory(workload: Workload, seed: int) -> dict[str, float]:
    """Traced memory after setup, and the traced peak while scheduling a few pods."""
    small = workload.scaled(workload.nodes, workload.existing, min(workload.measured, MEMORY_RUN_PODS))
    gc.collect()
    tracemalloc.start()
    try:
        prepared = prepare(small, seed=seed)
        after_setup, _ = tracemalloc.get_traced_memory()
        run_measured(prepared, limit=4 * small.measured)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"after_setup_mb": round(after_setup / 2**20, 1), "peak_mb": round(peak / 2**20, 1)}


def profile(workload: Workload, seed: int, top: int) -> str:
    prepared = prepare(workload, seed=seed)
    profiler = cProfile.Profile()
    profiler.enable()
    run_measured(prepared, limit=4 * workload.measured)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m policy_scheduler.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="tiny clusters and few pods (a smoke test)")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this workload (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--repeat", type=int, default=None, help="timed runs per workload (default 3, quick 1)"
    )
    parser.add_argument("--pods", type=int, default=None, help="override the number of measured pods")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="add a cProfile top-N per workload"
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument(
        "--kubernetes-version",
        type=parse_supported,
        default=NEWEST_SUPPORTED,
        metavar="vX.Y",
        help=f"the release the profile decides like (default {NEWEST_SUPPORTED})",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workloads = catalogue()
    if args.list:
        for name, w in workloads.items():
            print(f"{name}: {w.description}")
        return 0
    names = list(workloads) if not args.only else [n for group in args.only for n in group.split(",")]
    unknown = [n for n in names if n not in workloads]
    if unknown:
        print(f"unknown workload(s): {', '.join(unknown)}; known: {', '.join(workloads)}", file=sys.stderr)
        return 2
    repeat = args.repeat or (1 if args.quick else 3)
    report = Report(quick=args.quick, repeat=repeat)
    for name in names:
        workload = quick(workloads[name]) if args.quick else workloads[name]
        if args.pods:
            workload = workload.scaled(workload.nodes, workload.existing, args.pods)
        if not args.json:
            print(f"running {name} ...", file=sys.stderr, flush=True)
        runs, setup = measure(workload, repeat, args.seed, Features(args.kubernetes_version))
        memory = None if args.no_memory else measure_memory(workload, args.seed)
        text = profile(workload, args.seed, args.profile) if args.profile else ""
        report.results.append(Result(workload, runs, setup, memory, text))
    if args.json:
        json.dump(report.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
