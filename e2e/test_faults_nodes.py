"""Issue 11, node faults: nodes cordoned, NoExecute-tainted, relabelled and deleted while pods
are assumed (their bindings held at the proxy) or queued; and a node under memory pressure,
tainted by the node lifecycle controller, kept free of new pods."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from fixtures_faults import FaultEnv, Scene, report
from kubectl import wait_for

PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"


def test_nodes_change_under_assumed_and_queued_pods(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    s = fault_scene("nodes")
    nodes = s.add_nodes(6, cpu="4", role="target")
    cordoned, tainted, relabelled, deleted, keep_a, keep_b = nodes
    binding = re.compile(rf"^/api/v1/namespaces/{s.ns}/pods/[^/]+/binding$")
    hold = faults.proxy.add("POST", binding, action="hold")
    target = {"nodeSelector": {"role": "target"}}
    assumed = [f"assumed-{i}" for i in range(6)]
    s.create(s.pod(n, cpu="2", extra_spec=dict(target)) for n in assumed)
    wait_for("6 bindings held", lambda: len(hold.held) >= 6, timeout=30)
    assert sorted(json.loads(body)["target"]["name"] for _, body in hold.held) == sorted(nodes)
    queued = [f"queued-{i}" for i in range(3)]  # for role=late, which no node has yet
    s.create(s.pod(n, cpu="2", extra_spec={"nodeSelector": {"role": "late"}}) for n in queued)
    s.stays_unbound(queued, 2)

    admin = faults.admin
    admin.patch("node", cordoned, {"spec": {"unschedulable": True}})
    admin.run("taint", "nodes", tainted, "e2e-fault-noexec=yes:NoExecute")
    admin.run("label", "nodes", relabelled, "role=late", "--overwrite")
    admin.delete("node", deleted)
    changed = time.monotonic()
    faults.proxy.remove(hold)  # the assumed pods' bindings go through as they were decided
    s.wait_bound(assumed)

    # Exactly one queued pod fits on the relabelled node (2 of its 4 cpu are taken).
    wait_for("a queued pod on the relabelled node", lambda: relabelled in s.placement().values(), timeout=30)
    later = [f"later-{i}" for i in range(5)]
    s.create(s.pod(n, cpu="2", extra_spec=dict(target)) for n in later)

    def settled() -> dict[str, str] | None:
        current = s.placement()
        return current if sum(bool(current[n]) for n in later) >= 2 else None

    placement = wait_for("2 later pods on the untouched nodes", settled, timeout=30)
    recovered = time.monotonic() - changed
    s.stays_unbound([n for n in later if not placement[n]], 2)
    placement = s.placement()
    assert sorted(placement[n] for n in later if placement[n]) == sorted([keep_a, keep_b])
    assert [placement[n] for n in queued].count(relabelled) == 1
    assert sum(bool(placement[n]) for n in queued) == 1

    # Uncordoned, the node takes one more of the waiting pods.
    admin.patch("node", cordoned, {"spec": {"unschedulable": False}})
    wait_for(
        "a later pod on the uncordoned node",
        lambda: cordoned in [s.placement()[n] for n in later],
        timeout=30,
    )
    # The assumed pods were placed before their nodes changed: only they may break the new rules.
    s.check(exempt_nodes={cordoned, tainted, relabelled}, expect_bound=s.keys(assumed))
    report("node-changes", assumed=6, queued=3, later=5, misplaced=0, settled_seconds=round(recovered, 1))


def _pressure_condition() -> dict[str, str]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": "MemoryPressure",
        "status": "True",
        "reason": "KubeletHasInsufficientMemory",
        "message": "injected by the fault suite",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def test_memory_pressure_taints_the_node_and_keeps_pods_off(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    s = fault_scene("pressure")
    hot, cool = s.add_nodes(2, cpu="8")
    started = time.monotonic()
    # What a kubelet (here kwok's place) reports: conditions merge by type.
    faults.admin.run(
        "patch",
        "node",
        hot,
        "--subresource=status",
        "--type=strategic",
        "-p",
        json.dumps({"status": {"conditions": [_pressure_condition()]}}),
    )

    def tainted() -> bool:
        taints = faults.admin.get("node", hot)["spec"].get("taints") or []
        return any(t["key"] == PRESSURE_TAINT and t["effect"] == "NoSchedule" for t in taints)

    wait_for("the node lifecycle controller's memory-pressure taint", tainted, timeout=60)
    taint_seconds = time.monotonic() - started
    pods = [f"p-{i}" for i in range(10)]
    s.create(s.pod(n, cpu="500m") for n in pods)
    placement = s.wait_bound(pods)
    assert set(placement.values()) == {cool}
    s.check(expect_bound=s.keys(pods))
    report("memory-pressure", taint_seconds=round(taint_seconds, 1), pods=10, on_pressured_node=0)


def test_a_node_added_while_a_pod_waits_for_room_takes_it(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    """The node's arrival (a NodeAdd event) moves the unschedulable pod back to the queue."""
    s = fault_scene("added")
    s.add_nodes(1, cpu="1")
    s.create([s.pod("p", cpu="2")])
    s.stays_unbound(["p"], 3)
    (added,) = s.add_nodes(1, cpu="4")
    assert s.wait_bound(["p"], timeout=60) == {"p": added}
    s.check(expect_bound=s.keys(["p"]))
