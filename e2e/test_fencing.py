"""Never act on a stale lease: two policy-scheduler replicas with short lease timings (6 s lease,
4 s renew deadline: a 2 s margin), each behind its own fault proxy (e2e/fencing_probe.py). The
leader is frozen mid-burst (binds, then evictions) or partitioned away for longer than its lease;
the standby takes over; the old leader comes back while more pods arrive. Nothing it writes as a
leader reaches the API server after that, no node is over-committed and no pod is bound twice.
"""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from faultproxy import FaultProxy
from fencing_probe import (
    FIT,
    TIMING_FLAGS,
    Figures,
    Replica,
    Scene,
    freeze_during_evictions,
    freeze_through_lease,
    lease_path,
    proxied_kubeconfig,
)
from fixtures_operator import ISOLATED_LABEL, OperatorProcess, metric_sample
from kubectl import Kubectl, namespace, profile
from policy_scheduler.devcluster.cluster import DevCluster

LEASE_NS = "e2e-fencing"
LEASE = "e2e-fencing"
SCHEDULER = "fencing-scheduler"
PROFILE = "e2e-fencing"
POLICY = "e2e-fencing"
LOW, HIGH = "e2e-fencing-low", "e2e-fencing-high"
API = "scheduling.policy-scheduler.io/v1alpha1"
IDENTITY = re.compile(r"leader election identity=(\S+)")


@dataclass
class World:
    cluster: DevCluster
    kubectl: Kubectl
    replicas: list[Replica]
    processes: dict[str, OperatorProcess]

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def identity(self, replica: Replica) -> str:
        process = self.processes[replica.name]
        process.log.flush()
        found = IDENTITY.search(process.log_path.read_text())
        assert found, f"{replica.name} logged no identity"
        return found.group(1)

    def stood_down(self, replica: Replica) -> bool:
        return "policy_scheduler_leader 0.0" in self.processes[replica.name].metrics()

    def fenced_writes(self, replica: Replica) -> int:
        """Writes this replica's fence has refused so far (policy_scheduler_fenced_writes_total)."""
        text = self.processes[replica.name].metrics()
        return sum(
            int(metric_sample(text, "policy_scheduler_fenced_writes_total", resource=resource) or 0)
            for resource in ("pods/binding", "pods/eviction", "pods/status", "pods")
        )

    def fenced_counts(self) -> dict[str, int]:
        return {replica.name: self.fenced_writes(replica) for replica in self.replicas}

    def fenced_since(self, before: dict[str, int], name: str) -> int:
        return self.fenced_writes(self.replica(name)) - before[name]


@pytest.fixture(scope="module")
def world(
    dev_cluster: DevCluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    workdir = tmp_path_factory.mktemp("fencing")
    kubectl.apply(namespace(LEASE_NS))
    kubectl.apply(
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": n},
                "value": v,
            }
            for n, v in ((LOW, 100), (HIGH, 1000))
        )
    )
    proxies: list[FaultProxy] = []
    processes: dict[str, OperatorProcess] = {}
    try:
        replicas = []
        for name in ("a", "b"):
            proxy = FaultProxy(dev_cluster.server, dev_cluster.ca_file)
            proxy.start()
            proxies.append(proxy)
            process = OperatorProcess(
                proxied_kubeconfig(dev_cluster, proxy, workdir / f"kubeconfig-{name}"),
                workdir / f"operator-{name}.log",
                "--lease-namespace",
                LEASE_NS,
                "--lease-name",
                LEASE,
                "--profile-selector",
                f"{ISOLATED_LABEL}=fencing",
                *TIMING_FLAGS,
            )
            processes[name] = process
            replicas.append(Replica(name, proxy, process.proc, process.log_path, process.port))
        for process in processes.values():
            process.wait_ready()
        kubectl.apply(
            {
                "apiVersion": API,
                "kind": "EvictionPolicy",
                "metadata": {"name": POLICY},
                "spec": {"rateLimit": {"evictionsPerMinute": 120, "burst": 2}},
            }
        )
        fencing_profile = profile(
            PROFILE,
            SCHEDULER,
            evictionPolicyName=POLICY,
            podInitialBackoffSeconds=1,
            podMaxBackoffSeconds=2,
        )
        fencing_profile["metadata"]["labels"] = {ISOLATED_LABEL: "fencing"}
        kubectl.apply(fencing_profile)
        yield World(dev_cluster, kubectl, replicas, processes)
    finally:
        for process in processes.values():
            if process.proc.poll() is None:
                os.killpg(process.proc.pid, signal.SIGCONT)  # a failed test may leave it frozen
            process.stop()
        for proxy in proxies:
            proxy.stop()
        kubectl.delete("schedulingprofile", PROFILE)
        kubectl.delete("evictionpolicy", POLICY)
        for name in (LOW, HIGH):
            kubectl.delete("priorityclass", name)
        kubectl.delete("namespace", LEASE_NS)


@pytest.fixture
def scene(world: World, request: pytest.FixtureRequest) -> Iterator[Scene]:
    made = Scene(world.cluster, request.param, SCHEDULER, priority_class=LOW)
    made.setup_nodes()
    made.make_namespace()
    try:
        yield made
    finally:
        for replica in world.replicas:  # a failed test may leave one cut off or frozen
            replica.proxy.heal()
            if replica.proc.poll() is None:
                os.killpg(replica.proc.pid, signal.SIGCONT)
        made.cleanup()


LEASE_PATH = lease_path(LEASE_NS, LEASE)


def run_probe(world: World, scene: Scene, probe: Callable[..., Figures], **options: Any) -> dict[str, Any]:
    """Run a probe, add the writes the old leader's fence refused, report, and check what every
    probe must show: nothing the old leader wrote as a leader after it came back reached the API
    server, no node over its allocatable, no pod bound twice."""
    before = world.fenced_counts()
    figures = probe(scene, world.replicas, LEASE_PATH, stood_down=world.stood_down, **options)
    figures["fenced_writes_old_leader"] = world.fenced_since(before, figures["old_leader"])
    figures.report(scene.tag)
    stale = figures["stale_writes_after_back"]
    assert not any(stale.values()), f"the old leader wrote as a leader after it came back: {stale}"
    assert figures["overcommitted_nodes"] == 0, figures.values
    assert figures["violations"] == [], figures["violations"]
    return figures.values


@pytest.mark.parametrize("scene", ["freeze-binds"], indirect=True)
def test_a_frozen_leader_that_wakes_binds_nothing(world: World, scene: Scene) -> None:
    figures = run_probe(world, scene, freeze_through_lease)
    assert figures["bound"] == FIT  # every pod that fits, and no more
    assert figures["binds_old_leader"] + figures["binds_new_leader"] == FIT  # each pod bound once
    # Every binding the old leader had decided went out before the freeze (nothing holds binds
    # back), so its fence may have had nothing to refuse: what counts is that nothing it sent after
    # it came back reached the API server (run_probe), which tests/kube/test_kube_fence.py pins down
    # for a write caught waiting for a connection.
    # Who bound what: the Lease and the events name the replica (hostname_uuid by default).
    identities = {replica.name: world.identity(replica) for replica in world.replicas}
    for identity in identities.values():
        host, _, unique = identity.rpartition("_")
        assert host
        assert len(unique) == 36
    holder = world.kubectl.get("lease", LEASE, LEASE_NS)["spec"]["holderIdentity"]
    assert holder in identities.values()
    events = world.kubectl.items("events.events.k8s.io", scene.ns)
    by_instance = Counter(e["reportingInstance"] for e in events if e.get("reason") == "Scheduled")
    assert set(by_instance) <= {f"{SCHEDULER}-{identity}" for identity in identities.values()}
    assert len(by_instance) == 2, by_instance  # both replicas bound some, each under its own name


@pytest.mark.parametrize("scene", ["freeze-evictions"], indirect=True)
def test_a_frozen_leader_that_wakes_evicts_nothing(world: World, scene: Scene) -> None:
    figures = run_probe(world, scene, freeze_during_evictions, high_priority=HIGH)
    assert figures["high_bound"] == 25
    assert figures["victims_evicted_twice"] == 0


@pytest.mark.parametrize("scene", ["partition-binds"], indirect=True)
def test_a_partitioned_leader_that_reconnects_binds_nothing(world: World, scene: Scene) -> None:
    figures = run_probe(world, scene, freeze_through_lease, partition=True)
    assert figures["bound"] == FIT
    assert figures["binds_old_leader"] + figures["binds_new_leader"] == FIT
    # Cut off, it stopped acting by its own clock within the renew deadline, before a standby
    # could take the lease.
    assert figures["stood_down_after_cut_s"] < figures["takeover_s"]
