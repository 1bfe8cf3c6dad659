"""Issue 11, API server faults: a restart mid-burst, and 410 Gone hiding a deletion.

Both run on the fault cluster (fixtures_faults): the operator as its ServiceAccount, behind the
fault proxy with no rules (it forwards, counts, and drops the client's connection whenever the
API server is unreachable, as the server itself would). The API server is killed, as in a crash:
stopped with SIGTERM it waits 60 s for long-running watches to drain before it exits.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable

from faultproxy import FaultProxy
from fixtures_faults import FaultEnv, Scene, report
from fixtures_operator import SA_NAMESPACE
from kubectl import wait_for

RELISTED_PODS = re.compile(r"resource version expired; relisting.*resource=/api/v1/pods")
WAITING_FOR_NODES = re.compile(r"waiting for watches to reconnect.*/api/v1/nodes\b")


def test_apiserver_restart_mid_burst(faults: FaultEnv, fault_scene: Callable[..., Scene]) -> None:
    s = fault_scene("restart")
    s.add_nodes(4, cpu="8")
    first = [f"before-{i}" for i in range(30)]
    s.create(s.pod(n, cpu="500m") for n in first)

    stopped = time.monotonic()
    faults.cluster.restart_component("kube-apiserver", down_for=3.0, kill=True)
    back = time.monotonic()
    # Created the moment the server is back, before the operator's watches have reconnected.
    second = [f"after-{i}" for i in range(30)]
    s.create(s.pod(n, cpu="500m") for n in second)
    s.wait_bound(first + second, timeout=90)
    recovered = time.monotonic() - back

    s.check(expect_bound=s.keys(first + second))
    outage = faults.proxy.records(since=stopped)
    failed = [r for r in outage if r.status == 0 and r.at < back]
    # Retries of one request (one watch, one event write) have the same method, path and body.
    per_target = Counter((r.method, r.path, r.body) for r in failed)
    worst, worst_count = per_target.most_common(1)[0] if per_target else (("", "", b""), 0)
    down = back - stopped
    report(
        "apiserver-restart",
        pods=60,
        down_seconds=round(down, 1),
        recovered_seconds=round(recovered, 1),
        refused_requests_while_down=len(failed),
        max_attempts_of_one_request=f"{worst_count} ({worst[0]} {worst[1]})",
        peak_requests_per_second=FaultProxy.peak_rate(outage),
    )
    # Reconnecting informers and writers back off instead of hammering the dead server.
    assert worst_count <= down + 3, per_target.most_common(5)


def test_gone_relist_reconciles_a_missed_deletion(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    """A pod deleted while the operator could not watch (frozen, then its resourceVersion
    compacted away and the watch cache rebuilt) is only found missing by a relist after 410
    Gone; the capacity it frees lets a waiting pod in."""
    s = fault_scene("gone")
    (node,) = s.add_nodes(1, cpu="4")
    s.create([s.pod("holder", cpu="3")])
    s.wait_bound(["holder"])
    s.create([s.pod("waiter", cpu="3")])
    s.stays_unbound(["waiter"], 2)

    log_offset = faults.log_size()
    faults.freeze_operator()
    try:
        # Its watches are cut first: the deletion must not wait in a socket buffer for it.
        assert faults.proxy.cut_streams() > 0
        s.delete_pods(["holder"])
        revision = faults.cluster.compact_etcd()
        faults.cluster.restart_component("kube-apiserver", kill=True)
    finally:
        faults.thaw_operator()
    thawed = time.monotonic()
    placement = s.wait_bound(["waiter"], timeout=60)
    recovered = time.monotonic() - thawed

    assert placement == {"waiter": node}
    log = faults.log_since(log_offset)
    assert RELISTED_PODS.search(log), "the pod informer never got 410 Gone:\n" + log[-3000:]
    s.check(expect_bound=s.keys(["waiter"]))
    report("gone-relist", compacted_revision=revision, recovered_seconds=round(recovered, 1))


def test_a_regained_lease_waits_for_current_watches(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    """Lease renewals fail until leadership is lost, while the node watch cannot reconnect; the
    lease comes back first. The new period of leadership must not schedule on a cache that
    stopped following the server: the pod waits until the node watch is open again."""
    s = fault_scene("regain")
    (node,) = s.add_nodes(1, cpu="4")
    s.create([s.pod("before", cpu="1")])
    s.wait_bound(["before"])
    proxy = faults.proxy
    log_offset = faults.log_size()
    held_nodes = proxy.add("GET", re.compile(r"^/api/v1/nodes$"), action="hold")
    lease = proxy.add(
        "*", re.compile(rf"^/apis/coordination\.k8s\.io/v1/namespaces/{SA_NAMESPACE}/leases"), status=503
    )
    try:
        assert proxy.cut_streams() > 0
        wait_for("leadership lost", lambda: not faults.leading(), timeout=40)
        proxy.remove(lease)
        wait_for("leadership regained", faults.leading, timeout=40)
        s.create([s.pod("after", cpu="1")])
        s.stays_unbound(["after"], 4)
        assert held_nodes.held, "the node watch was not held"
        log = faults.log_since(log_offset)
        assert WAITING_FOR_NODES.search(log), "the wait is not logged:\n" + log[-3000:]
    finally:
        proxy.remove(lease)
        proxy.remove(held_nodes)
    assert s.wait_bound(["after"], timeout=30)["after"] == node
    s.check(expect_bound=s.keys(["before", "after"]))
