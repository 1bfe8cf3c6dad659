"""`python -m policy_scheduler.bench_e2e`: end-to-end scheduling throughput on the dev cluster.

For each size a fresh dev cluster (kwok nodes of scheduler_perf's node-default shape) is
started; every workload then runs once per contender (no-op binder, kube-scheduler of the
selected Kubernetes version, policy-scheduler), each in its own namespace with its own schedulerName. Writes
<out>/benchmarks-e2e.json, .md and .png and prints the Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from policy_scheduler.bench_e2e import contenders
from policy_scheduler.bench_e2e.runner import RunResult
from policy_scheduler.bench_e2e.suite import create_bench_nodes, run_size, write_outputs
from policy_scheduler.bench_e2e.workloads import catalogue
from policy_scheduler.devcluster.cluster import DevCluster

log = logging.getLogger(__name__)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m policy_scheduler.bench_e2e", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--nodes", default="1000,5000", help="cluster sizes, comma separated (default 1000,5000)"
    )
    parser.add_argument("--workloads", default=",".join(catalogue()), help="comma separated (default: all)")
    parser.add_argument(
        "--contenders",
        default=",".join(contenders.DEFAULT),
        help=f"comma separated, of {', '.join(contenders.ALL)} (default: {','.join(contenders.DEFAULT)})",
    )
    parser.add_argument("--pods", type=int, default=0, help="measured pods per run (default: one per node)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run before giving up")
    parser.add_argument(
        "--out", type=Path, default=Path("docs"), help="directory of benchmarks-e2e.* (default docs)"
    )
    parser.add_argument(
        "--workdir", type=Path, help="cluster and scheduler logs (default: a temporary directory)"
    )
    parser.add_argument(
        "--contender-cpu",
        type=int,
        help="run each contender alone on this CPU, the control plane and the harness on the others",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    known = catalogue()
    if args.list:
        for w in known.values():
            print(f"{w.name}: {w.description}")
        return 0
    unknown = [n for n in _split(args.workloads) if n not in known] + [
        c for c in _split(args.contenders) if c not in contenders.ALL
    ]
    if unknown:
        print(
            f"unknown: {', '.join(unknown)}; workloads: {', '.join(known)}; "
            f"contenders: {', '.join(contenders.ALL)}",
            file=sys.stderr,
        )
        return 2
    workloads = [known[n] for n in _split(args.workloads)]
    names = _split(args.contenders)
    logging.basicConfig(level=logging.WARNING)
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        base = args.workdir or Path(tmp)
        for size in (int(n) for n in _split(args.nodes)):
            print(f"[bench-e2e] starting a dev cluster with {size} nodes ...", file=sys.stderr, flush=True)
            with DevCluster(base / f"cluster-{size}", nodes=0, timeout=600) as cluster:
                nodes = create_bench_nodes(cluster, size)
                results += asyncio.run(
                    run_size(
                        cluster,
                        nodes,
                        workloads,
                        names,
                        args.pods,
                        args.timeout,
                        len(results),
                        contender_cpu=args.contender_cpu,
                    )
                )
    command = "python -m policy_scheduler.bench_e2e " + shlex.join(argv if argv is not None else sys.argv[1:])
    print(write_outputs(results, args.out, command))
    # a contender that cannot run a workload (n/a) is not a failure
    return 1 if any(r.error and not r.error.startswith("n/a") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
