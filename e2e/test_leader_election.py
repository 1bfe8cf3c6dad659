"""Issue 6: two operators, one Lease; kill the leader and the standby takes over, nothing bound twice."""

from __future__ import annotations

import os
import signal
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import ISOLATED_LABEL, OperatorProcess
from kubectl import Kubectl, namespace, pod, profile
from polling import wait_until

NS = "e2e-leader"
SCHEDULER = "leader-scheduler"
LEASE = "e2e-leader-lease"


def _bound(kubectl: Kubectl, count: int) -> list[dict[str, Any]] | None:
    pods = kubectl.items("pods", NS)
    if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
        return pods
    return None


def _holder(kubectl: Kubectl) -> str:
    lease = kubectl.get("lease", LEASE, NS)
    return str(lease["spec"].get("holderIdentity") or "")


@pytest.fixture
def operators(kubeconfig: Path, tmp_path: Path) -> Any:
    procs = [
        OperatorProcess(
            kubeconfig,
            tmp_path / f"op-{name}.log",
            "--lease-namespace",
            NS,
            "--lease-name",
            LEASE,
            "--identity",
            f"op-{name}",
            "--profile-selector",
            f"{ISOLATED_LABEL}=leader",
            # op-a brings even a small quiet collection up to date by a watch bookmark, op-b by a
            # list (the default below 2000 objects): each takes over once, so both paths run.
            *(["--catch-up-list-below", "0"] if name == "a" else []),
        )
        for name in ("a", "b")
    ]
    try:
        yield {f"op-{n}": p for n, p in zip(("a", "b"), procs, strict=True)}
    finally:
        for p in procs:
            p.stop()


def _micro_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def test_standby_takes_over_when_leader_dies(
    operators: dict[str, OperatorProcess], kubectl: Kubectl, record_property: Any
) -> None:
    kubectl.apply(namespace(NS))
    for proc in operators.values():
        proc.wait_ready()
    leader_profile = profile("leader", SCHEDULER)
    leader_profile["metadata"]["labels"] = {ISOLATED_LABEL: "leader"}
    kubectl.apply(leader_profile)

    kubectl.create(*(pod(f"first-{i}", NS, SCHEDULER) for i in range(10)))
    wait_until("first pods bound", lambda: _bound(kubectl, 10), timeout=60)
    leader = wait_until("a lease holder", lambda: _holder(kubectl), timeout=30)
    assert leader in operators
    standby = next(name for name in operators if name != leader)
    assert "policy_scheduler_leader 1.0" in operators[leader].metrics()
    assert "policy_scheduler_leader 0.0" in operators[standby].metrics()

    # A crash, not a clean shutdown: the lease has to expire before the standby may lead.
    standby_log = operators[standby].log_path.stat().st_size
    os.killpg(operators[leader].proc.pid, signal.SIGKILL)
    operators[leader].proc.wait()
    kubectl.create(*(pod(f"second-{i}", NS, SCHEDULER) for i in range(10)))
    wait_until("standby holds the lease", lambda: _holder(kubectl) == standby, timeout=60)
    pods = wait_until("second pods bound by the standby", lambda: _bound(kubectl, 20), timeout=60)
    assert len(pods) == 20

    # Every pod was bound exactly once: one Scheduled event each, and no binding conflicts.
    events = kubectl.items("events.events.k8s.io", NS)
    scheduled = Counter(e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled")
    assert set(scheduled) == {p["metadata"]["name"] for p in pods}
    assert all(count == 1 for count in scheduled.values()), scheduled
    assert all((e.get("series") or {}).get("count", 1) == 1 for e in events if e.get("reason") == "Scheduled")
    # The standby binds only once it holds the lease; how soon after is issue 12's takeover
    # figure (reported, not asserted: wall-clock targets are measured, not tested).
    acquired = _micro_time(kubectl.get("lease", LEASE, NS)["spec"]["acquireTime"])
    second_binds = [
        _micro_time(e["eventTime"])
        for e in events
        if e.get("reason") == "Scheduled" and e["regarding"]["name"].startswith("second-")
    ]
    takeover = (min(second_binds) - acquired).total_seconds()
    record_property("standby_first_bind_after_lease_s", round(takeover, 3))
    print(f"standby's first bind {takeover:.3f} s after it acquired the lease")
    assert takeover >= 0, "the standby bound a pod before it held the lease"
    # A second binding of a bound pod would be refused with a Conflict and reported on the pod.
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    assert not failed, [e.get("note") for e in failed]
    _assert_pod_catch_up(operators[standby], standby_log)

    # The old leader comes back as a standby, and takes over in turn when the new one crashes:
    # now the other catch-up path runs.
    operators[leader].restart()
    leader_log = operators[leader].log_path.stat().st_size
    os.killpg(operators[standby].proc.pid, signal.SIGKILL)
    operators[standby].proc.wait()
    kubectl.create(*(pod(f"third-{i}", NS, SCHEDULER) for i in range(10)))
    wait_until("the old leader holds the lease again", lambda: _holder(kubectl) == leader, timeout=60)
    wait_until("third pods bound by the old leader", lambda: _bound(kubectl, 30), timeout=60)
    _assert_pod_catch_up(operators[leader], leader_log)


def _assert_pod_catch_up(process: OperatorProcess, log_offset: int) -> None:
    """The pods written before a takeover reach the new leader's caches on a quiet pod stream by
    a short watch's bookmark (op-a, --catch-up-list-below 0), or by a list at the Lease's
    revision (op-b: its few pods are below the default threshold); never the other way."""
    with process.log_path.open() as log:
        log.seek(log_offset)
        lines = [
            line
            for line in log.read().splitlines()
            if "caught up by a" in line and "resource=/api/v1/pods " in line + " "
        ]
    print(f"pod catch-up of {' '.join(process.cmd[-4:])}:", lines)
    by_bookmark = "--catch-up-list-below" in process.cmd
    wanted, unwanted = ("bookmark", "list") if by_bookmark else ("list", "bookmark")
    assert not [line for line in lines if f"caught up by a {unwanted}" in line], lines
    assert [line for line in lines if f"caught up by a {wanted}" in line], lines
