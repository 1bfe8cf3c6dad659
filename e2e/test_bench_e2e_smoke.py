"""The end-to-end benchmark harness works (issue 12): a tiny run, every contender, real control plane.

No throughput is asserted: only that each contender bound every measured pod and that the
report carries the fields docs/benchmarks.md describes.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from policy_scheduler.bench_e2e import contenders
from policy_scheduler.bench_e2e.suite import create_bench_nodes, run_size, write_outputs
from policy_scheduler.bench_e2e.workloads import catalogue
from policy_scheduler.devcluster.build import missing_binaries
from policy_scheduler.devcluster.cluster import DevCluster

NODES, PODS = 20, 100
FIELDS = {
    "workload",
    "nodes",
    "contender",
    "measured",
    "bound",
    "pods_per_second",
    "p50",
    "p90",
    "p99",
    "seconds_to_first_bind",
    "cpu_seconds",
    "cpu_ms_per_pod",
    "peak_rss_mb",
    "cluster_cpu_seconds",
    "cluster_cpu_ms_per_pod",
    "cluster_background_cores",
    "window_seconds",
    "machine_busy",
    "machine_busy_before",
    "settle_seconds",
    "contender_cpu",
    "vs_kube_scheduler",
    "vs_ceiling",
    "error",
}


def test_tiny_run_binds_every_pod_with_every_contender(tmp_path: Path) -> None:
    assert not missing_binaries(), "build the control plane first: make controlplane"
    with DevCluster(tmp_path / "cluster", nodes=0) as cluster:
        nodes = create_bench_nodes(cluster, NODES)
        workloads = [catalogue()["SchedulingBasic"]]
        results = asyncio.run(run_size(cluster, nodes, workloads, contenders.ALL, PODS, run_seconds=60))
        # Each run cleaned up after itself before the next began: no benchmark namespace is
        # left behind, not even one still terminating (its deletion would load the next run).
        leftover = [
            ns["metadata"]["name"]
            for ns in cluster.api().get("/api/v1/namespaces")["items"]
            if ns["metadata"]["name"].startswith("bench-")
        ]
    assert leftover == []
    write_outputs(results, tmp_path / "out", "smoke")

    doc = json.loads((tmp_path / "out" / "benchmarks-e2e.json").read_text())
    assert [r["contender"] for r in doc["results"]] == list(contenders.ALL)
    for row in doc["results"]:
        assert row.keys() >= FIELDS
        assert (row["measured"], row["bound"], row["error"]) == (PODS, PODS, ""), row
        assert row["pods_per_second"] > 0
        assert row["cpu_seconds"] > 0
        assert row["peak_rss_mb"] > 0
        assert row["seconds_to_first_bind"] is not None
        # every control-plane process was read, and the binds cost the API server something
        assert row["cluster_cpu_seconds"].keys() >= {"etcd", "kube-apiserver", "kwok"}, row
        assert row["cluster_cpu_seconds"]["kube-apiserver"] > 0
        assert 0 < row["machine_busy"] <= 1
        assert 0 <= row["machine_busy_before"] <= 1
    by_contender = {r["contender"]: r for r in doc["results"]}
    assert by_contender[contenders.KUBE]["vs_kube_scheduler"] == 1.0
    assert by_contender[contenders.NOOP]["vs_ceiling"] == 1.0
    assert {"nproc", "memory_gb", "cpu_model"} <= doc["machine"].keys()
    assert (tmp_path / "out" / "benchmarks-e2e.png").read_bytes().startswith(b"\x89PNG")
    assert (
        "| SchedulingBasic | 20 | policy-scheduler |" in (tmp_path / "out" / "benchmarks-e2e.md").read_text()
    )


def test_tiny_gang_runs_bind_every_gang_with_every_contender_on_its_own_cpu(tmp_path: Path) -> None:
    assert not missing_binaries(), "build the control plane first: make controlplane"
    cpus = sorted(os.sched_getaffinity(0))
    own_cpu = cpus[-1] if len(cpus) > 1 else None  # --contender-cpu, where there is a CPU to spare
    with DevCluster(tmp_path / "cluster", nodes=0) as cluster:
        nodes = create_bench_nodes(cluster, NODES)
        workloads = [catalogue()["GangSmall"], catalogue()["GangLarge"]]
        results = asyncio.run(
            run_size(cluster, nodes, workloads, contenders.ALL, PODS, run_seconds=120, contender_cpu=own_cpu)
        )
    # 20 nodes: GangSmall is 4 gangs of 3, GangLarge 10 gangs of 2; policy-scheduler binds them
    # through Coscheduling (its PodGroups exist), the others pod by pod.
    assert [(r.workload, r.contender, r.measured, r.bound, r.error) for r in results] == [
        (w, c, n, n, "") for w, n in (("GangSmall", 12), ("GangLarge", 20)) for c in contenders.ALL
    ]
    assert {r.contender_cpu for r in results} == {own_cpu}
    assert os.sched_getaffinity(0) == set(cpus)  # the harness got its CPUs back
