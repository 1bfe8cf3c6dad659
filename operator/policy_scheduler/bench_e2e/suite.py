"""A benchmark suite on a running dev cluster: every workload against every contender, and its outputs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from policy_scheduler.bench_e2e.affinity import contender_alone
from policy_scheduler.bench_e2e.api import Client, Credentials
from policy_scheduler.bench_e2e.contenders import NOOP, NOOP_EVENTS
from policy_scheduler.bench_e2e.report import chart, markdown, report
from policy_scheduler.bench_e2e.runner import RunResult, RunSpec, install_cluster_objects, run_one
from policy_scheduler.bench_e2e.workloads import NODE_CPU, NODE_MEMORY, NODE_PODS, Workload
from policy_scheduler.devcluster.cluster import DevCluster

NODE_PREFIX = "bench-node"


async def run_size(
    cluster: DevCluster,
    nodes: Sequence[str],
    workloads: Sequence[Workload],
    names: Sequence[str],
    pods: int,
    run_seconds: float,
    start_index: int = 0,
    contender_cpu: int | None = None,
) -> list[RunResult]:
    """Every workload against every contender on a running cluster whose bench nodes are `nodes`;
    with `contender_cpu`, each contender alone on that CPU (bench_e2e.affinity)."""
    cluster_pids = {c.name: c.pid for c in cluster.status().components if c.alive}
    results: list[RunResult] = []
    with contender_alone(contender_cpu, cluster_pids.values()):
        async with Client(Credentials.from_kubeconfig(cluster.kubeconfig)) as client:
            await install_cluster_objects(client)
            for workload in workloads:
                for contender in names:
                    reason = not_applicable(workload, contender)
                    if reason:
                        results.append(RunResult(workload.name, len(nodes), contender, 0, error=reason))
                        continue
                    spec = RunSpec(
                        workload,
                        contender,
                        nodes,
                        pods or len(nodes),
                        cluster.kubeconfig,
                        cluster.workdir,
                        run_seconds,
                        start_index + len(results),
                        cluster_pids,
                        contender_cpu,
                    )
                    results.append(await _run_reported(client, spec))
    return results


async def _run_reported(client: Client, spec: RunSpec) -> RunResult:
    size = len(spec.nodes)
    print(f"[bench-e2e] {spec.workload.name} {size} nodes: {spec.contender} ...", file=sys.stderr, flush=True)
    result = await run_one(client, spec)
    print(
        f"[bench-e2e]   {result.bound}/{result.measured} bound, "
        f"{result.pods_per_second:.1f} pods/s, "
        f"first bind {result.seconds_to_first_bind}s, CPU {result.cpu_seconds}s {result.error}",
        file=sys.stderr,
        flush=True,
    )
    return result


def not_applicable(workload: Workload, contender: str) -> str:
    """Why `contender` cannot run `workload` ("" when it can)."""
    if workload.claims and contender in (NOOP, NOOP_EVENTS):
        return "n/a: the noop binder cannot allocate resource claims"
    return ""


def create_bench_nodes(cluster: DevCluster, count: int) -> list[str]:
    return cluster.create_nodes(count, NODE_PREFIX, cpu=NODE_CPU, memory=NODE_MEMORY, pods=NODE_PODS)


def write_outputs(results: Sequence[RunResult], out: Path, command: str) -> str:
    doc = report(results, command)
    table = markdown(doc)
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks-e2e.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "benchmarks-e2e.md").write_text(table)
    chart(doc, out / "benchmarks-e2e.png")
    return table
