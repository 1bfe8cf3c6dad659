"""Timing of `policy-scheduler pressure` on a generated cluster (issue 35; docs/benchmarks.md).

Writes one input file (a `kind: List`, as `kubectl get -o json`, or -o yaml with --yaml) with N nodes, their
NodeMetrics, P pods bound round robin with their PodMetrics, and a KubeletConfiguration; a
tenth of the nodes are short of memory. Then times the command's phases in this process: read
and convert the input, assess (signals, conditions, ranking, victims), and write the JSON.

Run: .venv/bin/python scripts/bench_pressure.py [--nodes 5000] [--pods 50000] [--keep DIR] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from policy_scheduler.pressure.inputs import load
from policy_scheduler.pressure.report import report_json
from policy_scheduler.scheduler.pressure.assess import assess

MI = 1024**2
NODE_MEMORY = 32 * 1024 * MI


def generate(nodes: int, pods: int, seed: int = 1) -> dict[str, Any]:
    rnd = random.Random(seed)
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "evictionHard": {"memory.available": "500Mi", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "1Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "evictionMinimumReclaim": {"memory.available": "200Mi"},
        }
    ]
    used = [0] * nodes
    for i in range(pods):
        node = i % nodes
        request = rnd.choice([0, 64, 128, 256, 512]) * MI
        usage = rnd.randint(16, 600) * MI
        used[node] += usage
        name = f"pod-{i}"
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": f"ns-{i % 50}", "uid": f"uid-{i}"},
                "spec": {
                    "nodeName": f"node-{node}",
                    "priority": rnd.choice([0, 0, 0, 100, 1000]),
                    "containers": [
                        {
                            "name": "c",
                            "image": "app",
                            "resources": {"requests": {"cpu": "100m", "memory": str(request)}},
                        }
                    ],
                },
                "status": {"phase": "Running", "qosClass": "Burstable" if request else "BestEffort"},
            }
        )
        items.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {"name": name, "namespace": f"ns-{i % 50}"},
                "timestamp": "2026-01-10T10:00:00Z",
                "window": "20s",
                "containers": [{"name": "c", "usage": {"cpu": "50m", "memory": str(usage)}}],
            }
        )
    for n in range(nodes):
        short = n % 10 == 0  # a tenth of the nodes below the memory threshold
        working_set = NODE_MEMORY - 300 * MI if short else min(NODE_MEMORY - 4096 * MI, used[n] + 2048 * MI)
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname": f"node-{n}"}},
                "status": {
                    "capacity": {"cpu": "16", "memory": str(NODE_MEMORY), "pods": "110"},
                    "allocatable": {"cpu": "16", "memory": str(NODE_MEMORY - 1024 * MI), "pods": "110"},
                },
            }
        )
        items.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "NodeMetrics",
                "metadata": {"name": f"node-{n}"},
                "timestamp": "2026-01-10T10:00:00Z",
                "window": "20s",
                "usage": {"cpu": "4", "memory": str(working_set)},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--keep", metavar="DIR", help="write the input there and keep it")
    parser.add_argument("--yaml", action="store_true", help="write the input as YAML (default: JSON)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the whole run")
    args = parser.parse_args()
    directory = Path(args.keep or tempfile.mkdtemp(prefix="bench-pressure-"))
    directory.mkdir(parents=True, exist_ok=True)
    cluster = generate(args.nodes, args.pods)
    if args.yaml:  # as `kubectl get -o yaml` writes it: read through the YAML loader
        path = directory / "cluster.yaml"
        path.write_text(yaml.dump(cluster, Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")
    else:  # as `kubectl get -o json` writes it
        path = directory / "cluster.json"
        path.write_text(json.dumps(cluster, indent=4), encoding="utf-8")
    size = path.stat().st_size / 1e6
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    clock = time.perf_counter
    cpu = time.process_time
    started, started_cpu = clock(), cpu()
    inputs = load([str(path)], [])
    loaded, loaded_cpu = clock(), cpu()
    nodes = assess(inputs.nodes, inputs.facts, inputs.usage, inputs.pod_node, now=time.time())
    assessed, assessed_cpu = clock(), cpu()
    text = json.dumps(report_json(nodes, inputs.notes))
    written, written_cpu = clock(), cpu()
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    pressured = sum(1 for n in nodes if n.under_pressure)
    print(f"input: {args.nodes} nodes, {args.pods} pods, {size:.0f} MB ({path})")
    rows = [
        ("read + convert", started, loaded, started_cpu, loaded_cpu, ""),
        ("assess", loaded, assessed, loaded_cpu, assessed_cpu, f"{pressured} nodes under pressure"),
        ("JSON output", assessed, written, assessed_cpu, written_cpu, f"{len(text) / 1e6:.0f} MB"),
        ("total", started, written, started_cpu, written_cpu, ""),
    ]
    print("phase           wall s  cpu s")
    for name, begin, end, begin_cpu, end_cpu, note in rows:
        print(f"{name:<15} {end - begin:6.2f} {end_cpu - begin_cpu:6.2f}  {note}".rstrip())


if __name__ == "__main__":
    main()
