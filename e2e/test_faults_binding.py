"""Issue 11, binding faults: a competing binder wins the race, and a storm of 5xx answers and
gateway timeouts on bindings and pod status writes (fault proxy rules)."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable

from faultproxy import FaultProxy, Record
from fixtures_faults import FaultEnv, Scene, report
from fixtures_operator import metric_sample
from kubectl import condition, wait_for


def _pod_of(record: Record) -> str:
    return record.path.split("/")[6]


def test_competing_binder_wins_and_assumptions_are_forgotten(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    s = fault_scene("conflict")
    nodes = s.add_nodes(4, cpu="4")
    binding = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/[^/]+/binding$")
    hold = faults.proxy.add("POST", binding, action="hold")
    first = [f"first-{i}" for i in range(4)]
    s.create(s.pod(n, cpu="3") for n in first)
    wait_for("4 bindings held at the proxy", lambda: len(hold.held) >= 4, timeout=30)
    chosen = {path.split("/")[6]: json.loads(body)["target"]["name"] for path, body in hold.held}
    assert sorted(chosen.values()) == sorted(nodes)  # 3 of 4 cpu: one per node

    # The competitor swaps first-0 and first-1, binding each where the operator put the other.
    s.bind("first-0", chosen["first-1"])
    s.bind("first-1", chosen["first-0"])
    faults.proxy.remove(hold)
    placement = s.wait_bound(first)
    assert placement["first-0"] == chosen["first-1"]
    assert placement["first-1"] == chosen["first-0"]

    # Both refused bindings were given up at once: one attempt each, none retried later.
    time.sleep(4)  # a retry would come within the profile's 1-4 s backoff
    attempts = FaultProxy.per_pod(faults.proxy.records("POST", binding))
    refused = {_pod_of(r) for r in faults.proxy.records("POST", binding) if r.status == 409}
    assert refused == {"first-0", "first-1"}
    assert all(attempts[f"{s.ns}/{n}"] == 1 for n in first), attempts

    # The cache holds the pods where they really are: every node is full, nothing else fits ...
    second = ["second-0", "second-1"]
    s.create(s.pod(n, cpu="3") for n in second)
    s.stays_unbound(second, 3)
    # ... until the operator's own two pods go, and exactly their nodes take the newcomers.
    s.delete_pods(["first-2", "first-3"])
    placement = s.wait_bound(second)
    assert sorted(placement[n] for n in second) == sorted([chosen["first-2"], chosen["first-3"]])
    s.check(expect_bound=s.keys(["first-0", "first-1", *second]), allow_conflicts=True)
    report("bind-conflict", competing_binds=2, refused_409=len(refused), retries=0, over_commits=0)


def test_error_storm_on_bindings_and_status_writes(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    s = fault_scene("storm")
    s.add_nodes(4, cpu="16")
    binding = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/[^/]+/binding$")
    status = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/[^/]+/status$")
    proxy = faults.proxy
    rules = [
        proxy.add("POST", binding, action="status", status=500, probability=0.3),
        proxy.add("POST", binding, action="lost", status=504, probability=0.2),  # bound, answer lost
        proxy.add("POST", binding, action="status", status=504, delay=2.0, probability=0.2),  # slow
        proxy.add("PATCH", status, action="status", status=503, probability=0.6),
    ]
    fitting = [f"fits-{i}" for i in range(40)]
    too_big = [f"too-big-{i}" for i in range(5)]  # their status is written again and again
    started = time.monotonic()
    s.create([*(s.pod(n, cpu="500m") for n in fitting), *(s.pod(n, cpu="100") for n in too_big)])
    time.sleep(12)  # the storm's length
    for rule in rules:
        proxy.remove(rule)
    ended = time.monotonic()
    s.wait_bound(fitting, timeout=60)
    recovered = time.monotonic() - ended

    binds = proxy.records("POST", binding, since=started)
    per_pod: dict[str, list[float]] = defaultdict(list)
    for record in binds:
        per_pod[_pod_of(record)].append(record.at)
    gaps = [b - a for times in per_pod.values() for a, b in itertools.pairwise(times)]
    writes = [w for w in proxy.records("PATCH", status, since=started) if w.at < ended]
    writes_per_pod = FaultProxy.per_pod(writes)
    by_pod: dict[str, list[Record]] = defaultdict(list)
    for write in writes:
        by_pod[_pod_of(write)].append(write)
    peak_writes_one_pod = max((FaultProxy.peak_rate(w) for w in by_pod.values()), default=0)
    injected = sum(r.injected for r in binds)
    report(
        "5xx-storm",
        pods=len(fitting),
        storm_seconds=round(ended - started, 1),
        bind_attempts=len(binds),
        injected_bind_failures=injected,
        max_attempts_per_pod=max(len(t) for t in per_pod.values()),
        min_retry_gap_seconds=round(min(gaps), 2) if gaps else None,
        peak_binds_per_second=FaultProxy.peak_rate(binds),
        status_writes_in_storm=sum(writes_per_pod.values()),
        max_status_writes_per_pod=max(writes_per_pod.values(), default=0),
        peak_status_writes_one_pod_per_second=peak_writes_one_pod,
        recovered_seconds=round(recovered, 1),
    )
    assert injected > 0
    # Retries follow the pod backoff (1 s, doubling): no tight loop, a bounded number of tries.
    assert min(gaps, default=1.0) >= 0.5, sorted(gaps)[:5]
    assert max(len(t) for t in per_pod.values()) <= 8
    # Status writes retry transient errors with their own backoff (0.1-0.2 s, doubling), afresh
    # for each failed attempt of the pod; a pod has one write in flight at a time (newer statuses
    # wait behind it, coalesced): a handful per second at most, never a hot loop.
    assert peak_writes_one_pod <= 8
    s.check(expect_bound=s.keys(fitting), allow_conflicts=True)


def test_a_binding_lost_then_refused_is_read_back_when_the_pod_is_bound_again(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    """A binding goes through but its answer is lost, and the retry is refused (as by a
    restarting API server): the cycle fails and the pod is requeued. Bound again before the
    watch shows it bound, that binding's 409 is the earlier binding of ours: read back, the pod
    is reported Scheduled once and no conflict is reported."""
    s = fault_scene("unsettled")
    (node,) = s.add_nodes(1, cpu="4")
    binding = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/p/binding$")
    proxy = faults.proxy
    # Delayed, so that the pod watch is cut and held before the binding is written.
    lost = proxy.add("POST", binding, action="lost", status=504, delay=3.0, limit=1)
    proxy.add("POST", binding, action="status", status=403, limit=1)
    s.create([s.pod("p", cpu="1")])
    wait_for("the binding at the proxy", lambda: lost.hits >= 1, timeout=30)
    held_watch = proxy.add("GET", re.compile(r"^/api/v1/pods$"), action="hold")
    try:
        assert proxy.cut_streams() > 0

        def answers() -> list[int]:
            return [r.status for r in proxy.records("POST", binding)]

        wait_for("the pod bound a second time", lambda: len(answers()) >= 3, timeout=60)
        assert answers() == [504, 403, 409]
        assert held_watch.held, "the pod watch was not held: the operator may have seen the binding"
    finally:
        proxy.remove(held_watch)
    assert s.wait_bound(["p"]) == {"p": node}
    # One Scheduled event (the invariants count them) and no "already assigned" FailedScheduling.
    wait_for(
        "the Scheduled event",
        lambda: any(e.get("reason") == "Scheduled" for e in s.snapshot().events),
        timeout=30,
    )
    s.check(expect_bound=s.keys(["p"]))
    report("bind-unsettled", answers=[r.status for r in proxy.records("POST", binding)])


def _unschedulable_attempts(faults: FaultEnv, profile: str) -> float:
    found = metric_sample(
        faults.operator.metrics(),
        "scheduler_schedule_attempts_total",
        result="unschedulable",
        profile=profile,
    )
    return found or 0.0


def test_a_pod_failing_the_same_way_again_gets_no_second_status_write(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    """Upstream's updatePod: a verdict the pod already shows is not patched again. Each deleted
    bound pod requeues the unschedulable one (the room it freed might do), which fails alike."""
    s = fault_scene("verdict")
    s.add_nodes(2, cpu="4")
    status = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/big/status$")
    started = time.monotonic()
    s.create([s.pod("big", cpu="100")])
    wait_for(
        "big's verdict written", lambda: faults.proxy.records("PATCH", status, since=started), timeout=30
    )
    shown = condition(s.api.get(f"/api/v1/namespaces/{s.ns}/pods/big"), "PodScheduled")
    assert shown is not None
    assert shown["reason"] == "Unschedulable"
    small = [f"small-{i}" for i in range(3)]
    s.create(s.pod(n, cpu="1") for n in small)
    s.wait_bound(small)
    for name in small:
        before = _unschedulable_attempts(faults, s.scheduler)

        def tried_again(before: float = before) -> bool:
            return _unschedulable_attempts(faults, s.scheduler) > before

        s.delete_pods([name])
        wait_for(f"big tried again after {name} went", tried_again, timeout=30)
    pod = s.api.get(f"/api/v1/namespaces/{s.ns}/pods/big")
    assert condition(pod, "PodScheduled") == shown
    writes = faults.proxy.records("PATCH", status, since=started)
    assert len(writes) == 1, [w.path for w in writes]
    report("same-verdict", attempts=_unschedulable_attempts(faults, s.scheduler), status_writes=len(writes))
