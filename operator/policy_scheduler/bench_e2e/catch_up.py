"""`python -m policy_scheduler.bench_e2e.catch_up`: what a new leader's catch-up costs on a big,
quiet cluster (docs/benchmarks.md, docs/reliability.md).

A fresh dev cluster of `--nodes` kwok nodes (scheduler_perf's node shape) with `--pods` bound
pods; the operator's own informers (ClusterInformers feeding a real Engine) list and watch it.
Then, `--rounds` times: a Lease is written (as a replica taking the lease does) and
`ClusterInformers.catch_up` waits until pods, nodes and claims hold every change up to that
write (events or a consistent list, whichever gets there first); then, as on a cluster where no
event comes at all, `--rounds` consistent lists of pods and of nodes applied to the stores.
Printed: wall seconds, this process's CPU seconds, and how many lists and bookmark watches each
catch-up used.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.bench_e2e.api import Client, Credentials
from policy_scheduler.bench_e2e.runner import create_pods
from policy_scheduler.bench_e2e.suite import create_bench_nodes
from policy_scheduler.bench_e2e.workloads import pod
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.kube.client import make_api_client
from policy_scheduler.kube.cluster_informers import ClusterInformers
from policy_scheduler.kube.dra_informers import DraInformers
from policy_scheduler.kube.lease import LeaderRecord, LeaseApi
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.scheduler.engine import Engine

NAMESPACE = "bench-catch-up"
LEASE_TIMEOUT = 10.0


async def _populate(cluster: DevCluster, nodes: Sequence[str], pods: int) -> None:
    async with Client(Credentials.from_kubeconfig(cluster.kubeconfig)) as client:
        await client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}, exist_ok=True)
        bodies = [
            pod(f"bound-{i}", NAMESPACE, "default-scheduler", node=nodes[i % len(nodes)]) for i in range(pods)
        ]
        await create_pods(client, bodies)


async def _write_lease(lease: LeaseApi, round_: int) -> int:
    """Write the Lease as a replica taking it does; the revision of that write."""
    now = f"2026-01-01T00:{round_ // 60:02d}:{round_ % 60:02d}.000000Z"
    record = LeaderRecord("bench", 15, now, now, round_)
    current = await lease.get(LEASE_TIMEOUT)
    written = (
        await lease.create(record, LEASE_TIMEOUT)
        if current is None
        else await lease.update(current, record, LEASE_TIMEOUT)
    )
    return int(written.resource_version)


def _timed(wall: float, cpu: float, what: str) -> dict[str, Any]:
    return {
        "what": what,
        "wall_s": round(time.monotonic() - wall, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
    }


async def _measure(kubeconfig: Path, rounds: int) -> list[dict[str, Any]]:
    api = await make_api_client(str(kubeconfig))
    try:
        engine = Engine()
        timings = DEFAULTS.informer
        informers = ClusterInformers(
            api,
            engine,
            on_pod_deleted=engine.pod_deleted,
            owners=DefaultSelectorIndex(),
            pdbs=ClusterInformers.pdb_informer(api, timings),
            timings=timings,
            dra=DraInformers(api, engine.base_handle.services.dra.store, engine, timings),
        )
        tasks = [informer.start() for informer in informers.informers()]
        started = time.monotonic()
        await informers.wait_synced()
        print(
            f"[catch-up] informers synced in {time.monotonic() - started:.1f}s: "
            f"{len(informers.nodes.store)} nodes, {len(informers.pods.store)} pods",
            file=sys.stderr,
        )
        lease = LeaseApi(api, "default", "bench-catch-up")
        results = []
        for round_ in range(rounds):
            version = await _write_lease(lease, round_)
            lists = {i.path: i.catch_up_lists for i in informers.essential()}
            bookmarks = {i.path: i.catch_up_bookmarks for i in informers.essential()}
            wall, cpu = time.monotonic(), time.process_time()
            await informers.catch_up(version)
            caught_up = _timed(wall, cpu, "catch-up")
            caught_up["lists"] = {i.path: i.catch_up_lists - lists[i.path] for i in informers.essential()}
            caught_up["bookmarks"] = {
                i.path: i.catch_up_bookmarks - bookmarks[i.path] for i in informers.essential()
            }
            results.append(caught_up)
            print(f"[catch-up] round {round_ + 1}: {caught_up}", file=sys.stderr)
            await asyncio.sleep(2.0)  # the cluster quiet again
        # As on a cluster where no event comes at all: the lists themselves.
        for round_ in range(rounds):
            version = await _write_lease(lease, rounds + round_)
            for informer in (informers.pods, informers.nodes):
                wall, cpu = time.monotonic(), time.process_time()
                await informer.list_at_least(version)
                listed = _timed(wall, cpu, informer.path)
                listed["objects"] = len(informer.store)
                results.append(listed)
                print(f"[catch-up] list round {round_ + 1}: {listed}", file=sys.stderr)
            await asyncio.sleep(2.0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return results
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policy_scheduler.bench_e2e.catch_up", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000, help="bound pods, spread over the nodes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--cluster",
        type=Path,
        help="the workdir of a cluster `policy-scheduler dev-cluster up --nodes N` left running: "
        "its nodes are used (--nodes is ignored) and the pods are created once",
    )
    args = parser.parse_args(argv)
    if args.cluster is not None:
        attached = DevCluster.from_state(args.cluster)
        if attached is None:
            parser.error(f"--cluster {args.cluster}: no running dev cluster there")
        nodes = [n["metadata"]["name"] for n in attached.api().get("/api/v1/nodes")["items"]]
        args.nodes = len(nodes)
        existing = attached.api().get(f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1").get("items") or []
        if not existing:
            asyncio.run(_populate(attached, nodes, args.pods))
        results = asyncio.run(_measure(attached.kubeconfig, args.rounds))
    else:
        with tempfile.TemporaryDirectory(prefix="catch-up-") as workdir:
            cluster = DevCluster(Path(workdir) / "cluster", nodes=0)
            cluster.start()
            try:
                started = time.monotonic()
                nodes = create_bench_nodes(cluster, args.nodes)
                asyncio.run(_populate(cluster, nodes, args.pods))
                print(f"[catch-up] cluster ready in {time.monotonic() - started:.0f}s", file=sys.stderr)
                results = asyncio.run(_measure(cluster.kubeconfig, args.rounds))
            finally:
                cluster.stop()
    for kind in ("catch-up", "/api/v1/pods", "/api/v1/nodes"):
        rows = [r for r in results if r["what"] == kind]
        walls = [r["wall_s"] for r in rows]
        cpus = [r["cpu_s"] for r in rows]
        what = "catch-up (events or lists)" if kind == "catch-up" else f"list of {kind} at a revision"
        print(
            f"{what} at {args.nodes} nodes, {args.pods} pods: wall median {statistics.median(walls):.2f}s "
            f"(max {max(walls):.2f}s), CPU median {statistics.median(cpus):.2f}s (max {max(cpus):.2f}s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
