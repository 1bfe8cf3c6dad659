"""Issue 11, churn soak: pods of three priorities created and deleted in rounds, nodes added and
removed, preemption on under a rate-limited EvictionPolicy; the invariants are checked every few
rounds and at the end, when ample capacity is added and every remaining pod must be bound.

SOAK_PODS sets the number of pods: 300 in the default suite, 10,000 with `make soak`.
"""

from __future__ import annotations

import os
import random
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


def _cluster_objects(faults: FaultEnv) -> list[tuple[str, str]]:
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"fault-soak-{tier}"},
            "value": value,
        }
        for tier, value in PRIORITIES.items()
    ]
    policy = {
        "apiVersion": API_GROUP,
        "kind": "EvictionPolicy",
        "metadata": {"name": POLICY},
        "spec": {"rateLimit": {"evictionsPerMinute": int(RATE[0]), "burst": RATE[1]}},
    }
    faults.admin.apply(*classes, policy)

    def accepted() -> bool:
        cond = condition(faults.admin.get("evictionpolicy", POLICY), "Accepted")
        return bool(cond and cond["status"] == "True")

    wait_for("EvictionPolicy accepted", accepted, timeout=30)
    return [("evictionpolicy", POLICY), *(("priorityclass", c["metadata"]["name"]) for c in classes)]


def test_churn_soak(faults: FaultEnv, fault_scene: Callable[..., Scene]) -> None:
    objects = _cluster_objects(faults)
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
        if rounds % 4 == 0:
            s.add_nodes(1, cpu="8", pods="40")
            nodes_added += 1
        if rounds % 6 == 0 and len(s.nodes) > 4:
            # A node leaves with its pods (what the pod garbage collector does to orphans).
            gone = s.nodes.pop(0)
            faults.admin.delete("node", gone)
            s.delete_pods(n for n, node in s.placement().items() if node == gone)
            nodes_removed += 1
        if rounds % 5 == 0:
            check()

    # Ample room at the end: every pod still there must be bound.
    s.add_nodes(4, cpu="64", pods="110")
    remaining = [n for n, p in s.pods().items() if not p["metadata"].get("deletionTimestamp")]
    s.wait_bound(remaining, timeout=120)
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
