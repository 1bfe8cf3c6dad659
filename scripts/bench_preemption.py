"""Micro-benchmark (issue 12): CPU per preemption cycle, PreemptionBasic-like, in memory.

1000 nodes (4 cpu) each full with four 1-cpu priority-10 pods; 200 priority-1000 1-cpu pods each
run PostFilter (the dry run over 100 candidate nodes). Victims are not evicted, so nominations
pile up as in the end-to-end run while the evictions are in flight.

Run: .venv/bin/python scripts/bench_preemption.py [--nodes N] [--pods N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import time

from policy_scheduler.bench.workloads import FakeClock, make_node
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.resource_names import CPU, MEMORY


def one_cpu_pod(name: str, priority: int) -> Pod:
    container = Container(name="c", image="pause", requests={CPU: 1000, MEMORY: 100 * 2**20})
    return Pod(name=name, namespace="bench", uid=f"uid-{name}", priority=priority, containers=(container,))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    clock = FakeClock()
    engine = Engine(seed=1, clock=clock)
    engine.set_profiles([resolve_profile(ProfileConfig(), implemented_plugin_names())])
    for i in range(args.nodes):
        engine.node_added(make_node(i, zones=True))
        for j in range(4):
            low = one_cpu_pod(f"low-{i}-{j}", 10)
            engine.pod_added(dataclasses.replace(low, node_name=f"node-{i:05d}", start_time=clock.now))
    for i in range(args.pods):
        clock.now += 0.001
        engine.pod_added(dataclasses.replace(one_cpu_pod(f"high-{i}", 1000), creation_timestamp=clock.now))
    profiler = cProfile.Profile() if args.profile else None
    cpu = time.process_time()
    if profiler is not None:
        profiler.enable()
    cycles = 0
    while engine.schedule_next():
        cycles += 1
    if profiler is not None:
        profiler.disable()
    cpu = time.process_time() - cpu
    nominated = sum(1 for p in engine.unassigned.values() if p.nominated_node_name)
    print(f"{cycles} cycles, {nominated} nominated, {1000 * cpu / max(cycles, 1):.2f} CPU ms per cycle")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
