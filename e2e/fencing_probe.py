"""The fencing probe (docs/reliability.md): two replicas of a scheduler with leader election, each
behind its own fault proxy, which records when each request reached the API server. The leader is
frozen with SIGSTOP (or cut off by its proxy) in the middle of a burst, for longer than its lease;
the standby takes the Lease and schedules; then the old leader comes back while more pods arrive.

The same probe runs against policy-scheduler (e2e/test_fencing.py, in the default suite) and
against kube-scheduler (e2e/test_fencing_kube_scheduler.py, opt-in), so their figures compare.
The scene: 10 kwok nodes of 32 cpu that only the probe's pods tolerate, pods of 3 cpu (100 fit).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import invariants
from faultproxy import BINDING, POD_STATUS, FaultProxy, Record
from kubectl import namespace, pod
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.kubeapi import ApiError, KubeApi
from polling import wait_until

NODES = 10
NODE_CPU = 32
POD_CPU = 3
FIT = NODES * (NODE_CPU // POD_CPU)  # 100
# Short timings so the probe fits the default suite; the margin is lease - renew = 2 s.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6, 4, 1
TIMING_FLAGS = (
    f"--leader-elect-lease-duration={LEASE_DURATION}s",
    f"--leader-elect-renew-deadline={RENEW_DEADLINE}s",
    f"--leader-elect-retry-period={RETRY_PERIOD}s",
)
BIND_DELAY = 0.5  # seconds each binding spends in the proxy (the bind probe)
EVICTION = re.compile(r"^/api/v1/namespaces/[^/]+/pods/[^/]+/eviction$")
POD = re.compile(r"^/api/v1/namespaces/[^/]+/pods/[^/]+$")


LEADER_WRITES = {
    "binds": ("POST", BINDING),
    "evictions": ("POST", EVICTION),
    "pod deletions": ("DELETE", POD),
    "pod status writes": ("PATCH", POD_STATUS),
}


def lease_path(namespace_: str, name: str) -> re.Pattern[str]:
    return re.compile(rf"^/apis/coordination\.k8s\.io/v1/namespaces/{namespace_}/leases(/{name})?$")


def proxied_kubeconfig(cluster: DevCluster, proxy: FaultProxy, path: Path) -> Path:
    """The admin's token, talking to the API server through `proxy` (plain http on loopback)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "proxied", "cluster": {"server": proxy.url}}],
        "users": [{"name": "admin", "user": {"token": cluster.token}}],
        "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": "admin"}}],
        "current-context": "proxied",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


@dataclass
class Replica:
    """One scheduler process and the proxy it reaches the API server through."""

    name: str
    proxy: FaultProxy
    proc: subprocess.Popen[bytes]
    log_path: Path
    metrics_port: int | None = None

    def freeze(self) -> None:
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def arrived(self, method: str, path: re.Pattern[str], since: float = 0.0) -> list[Record]:
        """Requests of this replica that reached the API server (not stopped by the proxy)."""
        return [r for r in self.proxy.records(method, path, since) if not r.injected and r.status]

    def lease_writes(self, lease: re.Pattern[str], since: float = 0.0) -> list[Record]:
        """Successful writes of the Lease: only its holder makes them (acquire, renew)."""
        return [
            r
            for method in ("PUT", "POST")
            for r in self.arrived(method, lease, since)
            if 200 <= r.status < 300
        ]

    def leader_writes(self, since: float, until: float = float("inf")) -> dict[str, int]:
        """Writes only a leader makes that this replica sent in [since, until), whether or not
        they got through (a process that exits cancels the ones in flight)."""
        return {
            kind: sum(1 for at in self.proxy.arrivals(method, path, since) if at < until)
            for kind, (method, path) in LEADER_WRITES.items()
        }


@dataclass
class Scene:
    """The probe's namespace, nodes and pods; `scheduler` is the schedulerName its pods ask for."""

    cluster: DevCluster
    tag: str
    scheduler: str
    priority_class: str | None = None
    nodes: list[str] = field(default_factory=list)

    @property
    def ns(self) -> str:
        return f"fencing-{self.tag}"

    @property
    def api(self) -> KubeApi:
        return self.cluster.api()

    def setup_nodes(self) -> None:
        taint = {"key": "e2e-fencing", "value": self.tag, "effect": "NoSchedule"}
        self.nodes = self.cluster.create_nodes(
            NODES,
            prefix=f"fencing-{self.tag}",
            cpu=str(NODE_CPU),
            memory="256Gi",
            pods="110",
            labels={"e2e-fencing": self.tag},
            taints=[taint],
        )

    def make_namespace(self) -> None:
        self.api.post("/api/v1/namespaces", namespace(self.ns))

    def manifest(self, name: str, priority_class: str | None = None) -> dict[str, Any]:
        extra = {
            "nodeSelector": {"e2e-fencing": self.tag},
            "tolerations": [
                {"key": "e2e-fencing", "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
            ],
        }
        return pod(
            name,
            self.ns,
            self.scheduler,
            cpu=str(POD_CPU),
            memory="64Mi",
            priority_class=priority_class or self.priority_class,
            extra_spec=extra,
        )

    def create(self, manifests: Iterable[dict[str, Any]]) -> None:
        path = f"/api/v1/namespaces/{self.ns}/pods"
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda m: self.api.post(path, m), list(manifests)))

    def stream(self, manifests: list[dict[str, Any]], per_second: float) -> threading.Thread:
        """Create the pods at a steady rate, in the background (a burst that lasts a while)."""

        def run() -> None:
            start = time.monotonic()
            for i in range(0, len(manifests), 5):
                self.create(manifests[i : i + 5])
                delay = start + (i + 5) / per_second - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

        thread = threading.Thread(target=run, name=f"pods for {self.ns}", daemon=True)
        thread.start()
        return thread

    def pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.api.get(f"/api/v1/namespaces/{self.ns}/pods")["items"]
        return items

    def bound(self, prefix: str = "") -> list[dict[str, Any]]:
        return [
            p
            for p in self.pods()
            if p["spec"].get("nodeName")
            and p["metadata"]["name"].startswith(prefix)
            and not p["metadata"].get("deletionTimestamp")
        ]

    def node_cpu(self) -> dict[str, int]:
        """Requested millicores per probe node, of every pod bound there (terminating included)."""
        used: Counter[str] = Counter({n: 0 for n in self.nodes})
        for p in self.api.get("/api/v1/pods")["items"]:
            node = p["spec"].get("nodeName")
            if node in used and (p.get("status") or {}).get("phase") not in invariants.TERMINAL:
                used[node] += invariants.requests(p).get("cpu", 0)
        return dict(used)

    def cleanup(self) -> None:
        api = self.api
        for path in [f"/api/v1/namespaces/{self.ns}", *(f"/api/v1/nodes/{n}" for n in self.nodes)]:
            with contextlib.suppress(ApiError):  # already gone
                api.request("DELETE", path)


@dataclass
class Figures:
    """What a probe run measured, printed as one FENCING-RESULT line."""

    values: dict[str, Any] = field(default_factory=dict)

    def __setitem__(self, key: str, value: Any) -> None:
        self.values[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def report(self, name: str) -> str:
        line = f"FENCING-RESULT {name}: " + ", ".join(f"{k}={v}" for k, v in self.values.items())
        print("\n" + line)
        target = os.environ.get("FAULT_RESULTS")
        if target:
            with Path(target).open("a") as handle:
                handle.write(line + "\n")
        return line


def current_leader(replicas: list[Replica], lease: re.Pattern[str], timeout: float = 60) -> Replica:
    """The replica that writes the Lease now (its holder renews every retry period)."""

    def writing() -> Replica | None:
        since = time.monotonic() - 2.5 * RETRY_PERIOD
        found = [r for r in replicas if r.lease_writes(lease, since)]
        return found[0] if len(found) == 1 else None

    leader: Replica = wait_until("one replica renewing the lease", writing, timeout=timeout, interval=0.2)
    return leader


def wait_bound(scene: Scene, count: int, prefix: str = "", timeout: float = 60) -> None:
    wait_until(
        f"{count} pods {prefix}* of {scene.ns} bound",
        lambda: len(scene.bound(prefix)) >= count,
        timeout=timeout,
        interval=0.1,
    )


def settle(scene: Scene, expected: int, quiet: float, timeout: float) -> int:
    """Wait until `expected` pods are bound (or more), then until nothing changes for `quiet`
    seconds; the number bound."""
    wait_bound(scene, expected, timeout=timeout)
    last, since = len(scene.bound()), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.3)
        now = len(scene.bound())
        if now != last:
            last, since = now, time.monotonic()
    return last


def first_after(records: list[Record], since: float) -> float | None:
    times = [r.at for r in records if r.at >= since]
    return min(times) if times else None


def wait_writes(replica: Replica, method: str, path: re.Pattern[str], since: float, count: int) -> None:
    """Until `count` of the replica's requests of this kind succeeded since `since`."""
    wait_until(
        f"{count} successful {method} {path.pattern} of {replica.name}",
        lambda: succeeded(replica.arrived(method, path, since)) >= count,
        timeout=60,
        interval=0.05,
    )


def takeover(standby: Replica, lease: re.Pattern[str], cut_at: float) -> float:
    """Seconds from `cut_at` until the standby's first write of the Lease: it takes the lease a
    lease duration (plus its retry jitter) after the leader's last renewal."""
    wait_until("the standby writes the lease", lambda: standby.lease_writes(lease, cut_at), timeout=60)
    took_over = first_after(standby.lease_writes(lease, cut_at), cut_at)
    assert took_over is not None
    return round(took_over - cut_at, 1)


def wait_stood_down(replica: Replica, stood_down: Callable[[Replica], bool], since: float) -> float:
    """Seconds from `since` until `stood_down(replica)` holds (polled every 50 ms)."""
    wait_until(f"{replica.name} stands down", lambda: stood_down(replica), timeout=60, interval=0.05)
    return round(time.monotonic() - since, 2)


def succeeded(records: list[Record]) -> int:
    return sum(1 for r in records if 200 <= r.status < 300)


def _common(figures: Figures, scene: Scene, old: Replica, lease: re.Pattern[str], back_at: float) -> None:
    """The figures both probes report once the scene has settled."""
    figures["old_leader"] = old.name
    # The old leader's writes after it came back, until it might have won the lease again.
    regained = first_after(old.lease_writes(lease, back_at), back_at) or float("inf")
    figures["stale_writes_after_back"] = old.leader_writes(back_at, regained)
    cpu = scene.node_cpu()
    figures["max_node_cpu"] = f"{max(cpu.values()) / 1000:g}/{NODE_CPU}"
    figures["overcommitted_nodes"] = sum(1 for used in cpu.values() if used > NODE_CPU * 1000)
    figures["violations"] = invariants.violations(invariants.take(scene.api, [scene.ns]), spread=False)


def freeze_through_lease(
    scene: Scene,
    replicas: list[Replica],
    lease: re.Pattern[str],
    *,
    stood_down: Callable[[Replica], bool],
    partition: bool = False,
) -> Figures:
    """The bind probe: 20 pods at once, bindings slowed down; after the leader's first binds it
    is frozen (or, with `partition`, cut off by its proxy) while 20 more arrive; the standby takes
    over and binds them; then the old leader comes back while 70 more pods arrive (110 in all,
    100 fit)."""
    figures = Figures()
    start = time.monotonic()
    old = current_leader(replicas, lease)
    new = next(r for r in replicas if r is not old)
    # Slow bindings: when the leader stops, some are in flight and more are decided but wait
    # for their turn (writes that would go out after the pause).
    slow = [r.proxy.add("POST", BINDING, action="delay", delay=BIND_DELAY) for r in replicas]
    first = [scene.manifest(f"a-{i:03d}") for i in range(40)]
    scene.create(first[:20])
    wait_writes(old, "POST", BINDING, start, 4)
    cut_at = time.monotonic()
    creating = scene.stream(first[20:], per_second=10)  # the burst goes on meanwhile
    if partition:
        old.proxy.partition()
        figures["stood_down_after_cut_s"] = wait_stood_down(old, stood_down, cut_at)
    else:
        old.freeze()
    creating.join()
    figures["takeover_s"] = takeover(new, lease, cut_at)
    wait_bound(scene, len(first), "a-")
    for replica, rule in zip(replicas, slow, strict=True):
        replica.proxy.remove(rule)  # whatever the old leader sends now goes straight through
    back_at = time.monotonic()
    later = [scene.manifest(f"b-{i:03d}") for i in range(70)]
    creating = scene.stream(later, per_second=35)
    if partition:
        old.proxy.heal()
    else:
        old.thaw()
        figures["stood_down_after_back_s"] = wait_stood_down(old, stood_down, back_at)
    creating.join()
    figures["bound"] = settle(scene, FIT, quiet=3.0, timeout=90)
    figures["binds_old_leader"] = succeeded(old.arrived("POST", BINDING, start))
    figures["binds_new_leader"] = succeeded(new.arrived("POST", BINDING, start))
    _common(figures, scene, old, lease, back_at)
    return figures


def freeze_during_evictions(
    scene: Scene,
    replicas: list[Replica],
    lease: re.Pattern[str],
    *,
    stood_down: Callable[[Replica], bool],
    high_priority: str,
) -> Figures:
    """The eviction probe: 100 low-priority pods fill the nodes; 20 high-priority pods each need
    one victim, evicted at the EvictionPolicy's rate; after the leader's 4th eviction it is
    frozen; the standby takes over and goes on; the old leader is woken while 5 more arrive."""
    figures = Figures()
    scene.create(scene.manifest(f"low-{i:03d}") for i in range(FIT))
    wait_bound(scene, FIT, "low-", timeout=90)
    old = current_leader(replicas, lease)
    new = next(r for r in replicas if r is not old)
    start = time.monotonic()
    scene.create(scene.manifest(f"high-{i:03d}", high_priority) for i in range(20))
    wait_writes(old, "POST", EVICTION, start, 4)
    cut_at = time.monotonic()
    old.freeze()
    figures["takeover_s"] = takeover(new, lease, cut_at)
    wait_writes(new, "POST", EVICTION, cut_at, 1)
    back_at = time.monotonic()
    old.thaw()
    scene.create(scene.manifest(f"high-x{i}", high_priority) for i in range(5))
    figures["stood_down_after_back_s"] = wait_stood_down(old, stood_down, back_at)
    wait_bound(scene, 25, "high-", timeout=120)
    figures["high_bound"] = len(scene.bound("high-"))
    evictions = [
        r for replica in (old, new) for r in replica.arrived("POST", EVICTION, start) if 200 <= r.status < 300
    ]
    figures["evictions_old_leader"] = succeeded(old.arrived("POST", EVICTION, start))
    figures["evictions_new_leader"] = succeeded(new.arrived("POST", EVICTION, start))
    # One victim per high-priority pod is the least; a preemptor whose nomination the new leader
    # never saw may cost one more, as at any change of leader.
    figures["victims_evicted_twice"] = len(evictions) - len({r.path for r in evictions})
    _common(figures, scene, old, lease, back_at)
    return figures
