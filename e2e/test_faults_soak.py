"""Issue 11, churn soak: pods of three priorities created and deleted in rounds, nodes added and
removed, preemption on under a rate-limited EvictionPolicy; the invariants are checked every few
rounds and at the end, when ample capacity is added and every remaining pod must be bound.

SOAK_PODS sets the number of pods: 300 in the default suite, 10,000 with `make soak`.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable
from typing import Any

import invariants
from fixtures_faults import API_GROUP, FaultEnv, Scene, report
from kubectl import condition, wait_for

SOAK_PODS = int(os.environ.get("SOAK_PODS", "300"))
BATCH = 50
PRIORITIES = {"low": 100, "mid": 500, "high": 1000}
TIERS = ["low"] * 6 + ["mid"] * 3 + ["high"]
CPUS = ["250m", "500m", "1"]
RATE = (600.0, 30)  # the policy's evictionsPerMinute and burst
POLICY = "fault-soak"


def _priority_of(pod_key: str) -> int | None:
    name = pod_key.split("/", 1)[-1]
    return PRIORITIES.get(name.split("-", 1)[0])


def _cluster_objects(
    faults: FaultEnv, policy: str = POLICY, max_in_flight: int = 10
) -> list[tuple[str, str]]:
    classes: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"fault-soak-{tier}"},
            "value": value,
        }
        for tier, value in PRIORITIES.items()
    ]
    limits = {"evictionsPerMinute": int(RATE[0]), "burst": RATE[1], "maxInFlight": max_in_flight}
    body = {"apiVersion": API_GROUP, "kind": "EvictionPolicy", "metadata": {"name": policy}}
    faults.admin.apply(*classes, {**body, "spec": {"rateLimit": limits}})

    def accepted() -> bool:
        cond = condition(faults.admin.get("evictionpolicy", policy), "Accepted")
        return bool(cond and cond["status"] == "True")

    wait_for("EvictionPolicy accepted", accepted, timeout=30)
    return [("evictionpolicy", policy), *(("priorityclass", c["metadata"]["name"]) for c in classes)]


def test_churn_soak(faults: FaultEnv, fault_scene: Callable[..., Scene]) -> None:
    objects = _cluster_objects(faults, max_in_flight=10)
    s = fault_scene("soak", evictionPolicyName=POLICY)
    s.cluster_objects += objects
    rng = random.Random(11)
    s.add_nodes(4, cpu="8", pods="40")
    started = time.monotonic()
    created = deleted = rounds = checks = nodes_added = nodes_removed = 0

    def check(**kwargs: Any) -> None:
        nonlocal checks
        checks += 1
        invariants.assert_holds(
            s.snapshot(), spread=False, priority_of=_priority_of, eviction_rate=RATE, **kwargs
        )

    while created < SOAK_PODS:
        batch = []
        for _ in range(min(BATCH, SOAK_PODS - created)):
            tier = rng.choice(TIERS)
            batch.append(
                s.pod(f"{tier}-{created}", cpu=rng.choice(CPUS), priority_class=f"fault-soak-{tier}")
            )
            created += 1
        s.create(batch)
        rounds += 1
        # Keep about two batches alive: delete half of what is there, bound or not.
        existing = sorted(s.placement())
        doomed = rng.sample(existing, len(existing) // 2)
        s.delete_pods(doomed)
        deleted += len(doomed)
        # Nodes come and go at the same pace: capacity stays tight, so preemption keeps working.
        if rounds % 3 == 0:
            s.add_nodes(1, cpu="8", pods="40")
            nodes_added += 1
        if rounds % 3 == 1 and len(s.nodes) > 4:
            # A node leaves with its pods (what the pod garbage collector does to orphans).
            gone = s.nodes.pop(0)
            faults.admin.delete("node", gone)
            s.delete_pods(n for n, node in s.placement().items() if node == gone)
            nodes_removed += 1
        if rounds % 5 == 0:
            check()

    # Ample room at the end: every pod still there must be bound.
    s.add_nodes(4, cpu="64", pods="110")
    remaining = s.wait_all_bound(timeout=120)
    check(expect_bound=s.keys(remaining))
    preempted = [e for e in s.snapshot().events if e.get("reason") == "Preempted"]
    report(
        "churn-soak",
        pods_created=created,
        pods_deleted_by_test=deleted,
        evictions=len(preempted),
        nodes_added=nodes_added + 4,
        nodes_removed=nodes_removed,
        invariant_checks=checks,
        seconds=round(time.monotonic() - started, 1),
    )


# Found by the soak: its final phase stalled for 60 s with idle nodes while preemptors waited.
def test_an_evicted_victim_frees_its_in_flight_slot(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    objects = _cluster_objects(faults, policy="fault-inflight", max_in_flight=1)
    s = fault_scene("inflight", evictionPolicyName="fault-inflight")
    s.cluster_objects += objects
    # Slow pods/status writes (the DisruptionTarget condition): the victim's deletion is seen first.
    status = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/[^/]+/status$")
    faults.proxy.add("PATCH", status, action="forward", delay=1.5)
    first, second = s.add_nodes(2, cpu="4")
    for i, node in enumerate((first, second)):
        victim = s.pod(f"low-{i}", cpu="3", priority_class="fault-soak-low", extra_spec={"nodeName": node})
        s.create([victim])
    s.wait_bound(["low-0", "low-1"])

    s.create([s.pod("high-0", cpu="3", priority_class="fault-soak-high")])
    placement = s.wait_bound(["high-0"], timeout=30)
    started = time.monotonic()
    s.create([s.pod("high-1", cpu="3", priority_class="fault-soak-high")])
    # Its victim is the other low pod; the one slot was freed when low-{0,1} went.
    s.wait_bound(["high-1"], timeout=20)
    report("in-flight-slot", first_node=placement["high-0"], second_wait=round(time.monotonic() - started, 1))
