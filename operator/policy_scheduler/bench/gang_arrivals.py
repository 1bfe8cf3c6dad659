"""`python -m policy_scheduler.bench.gang_arrivals`: the cost of gang members arriving while
other pods sit unschedulable (each arrival is an UnscheduledPod/Add event; docs/gang.md).

Unrelated pods that fit nowhere are scheduled once (they land in the unschedulable pool); then
the members of --gangs PodGroups of --size pods are added one by one, timed. Nothing is bound.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from policy_scheduler.bench.workloads import FakeClock, make_node
from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.gang import POD_GROUP_LABEL, PodGroup
from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile

NODES = 100


def coscheduling_engine() -> Engine:
    engine = Engine(seed=0, clock=FakeClock())
    config = ProfileConfig(
        plugins={
            "multiPoint": PluginSet(enabled=(PluginRef("Coscheduling"),)),
            "queueSort": PluginSet(disabled=(PluginRef("PrioritySort"),)),
        }
    )
    engine.set_profiles([resolve_profile(config, implemented_plugin_names())])
    for i in range(NODES):
        engine.node_added(make_node(i, zones=False))
    return engine


async def _fail_once(engine: Engine) -> None:
    while engine.schedule_next():
        pass


def run(gangs: int, size: int, unrelated: int) -> float:
    """Seconds to add every member (the unrelated pods already unschedulable)."""
    engine = coscheduling_engine()
    for i in range(unrelated):  # 9 cpu: more than any node has
        engine.pod_added(
            Pod(f"big-{i}", uid=f"big-{i}", containers=(Container("c", requests={"cpu": 9000}),))
        )
    asyncio.run(_fail_once(engine))
    assert len(engine.queue.unschedulable) == unrelated
    for g in range(gangs):
        engine.pod_group_set(PodGroup("default", f"g{g}", size))
    members = [
        Pod(f"g{g}-{i}", uid=f"g{g}-{i}", labels={POD_GROUP_LABEL: f"g{g}"})
        for g in range(gangs)
        for i in range(size)
    ]
    started = time.perf_counter()
    for pod in members:
        engine.pod_added(pod)
    seconds = time.perf_counter() - started
    # Every gang is complete: its members left the pool; the unrelated pods stayed.
    assert len(engine.queue.unschedulable) == unrelated
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m policy_scheduler.bench.gang_arrivals", description=__doc__
    )
    parser.add_argument("--gangs", type=int, default=10)
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--unrelated", type=int, default=1000, help="unschedulable pods beside the gangs")
    args = parser.parse_args(argv)
    seconds = run(args.gangs, args.size, args.unrelated)
    pods = args.gangs * args.size
    print(
        f"{args.gangs} gangs x {args.size} beside {args.unrelated} unschedulable pods: "
        f"{seconds:.2f} s to add the members, {seconds / pods * 1e6:.0f} us per member"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
