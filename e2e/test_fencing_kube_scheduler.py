"""The fencing probe (e2e/fencing_probe.py) against kube-scheduler v1.35.4: two kube-scheduler
processes with leader election on the same short timings as ours (6 s lease, 4 s renew deadline,
1 s retry period), each behind its own fault proxy. Its figures go beside ours in
docs/reliability.md.

Not in the default suite: it measures the reference, it does not test us (kube-scheduler acts on
a lapsed lease, so its runs are expected to show stale writes). Run it with
`FENCING_KUBE_SCHEDULER=1 .venv/bin/pytest e2e/test_fencing_kube_scheduler.py -s`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from faultproxy import FaultProxy
from fencing_probe import (
    LEASE_DURATION,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    Replica,
    Scene,
    freeze_through_lease,
    lease_path,
    proxied_kubeconfig,
)
from kubectl import Kubectl, namespace
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.hostnet import LOOPBACK, free_ports
from policy_scheduler.devcluster.versions import bin_dir

pytestmark = pytest.mark.skipif(
    not os.environ.get("FENCING_KUBE_SCHEDULER"), reason="opt-in: set FENCING_KUBE_SCHEDULER=1"
)

LEASE_NS = "e2e-fencing-kube"  # each test's Lease is named after its scene
SCHEDULER = "fencing-kube-scheduler"


def config(kubeconfig: Path, lease: str) -> dict[str, object]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {
            "leaderElect": True,
            "leaseDuration": f"{LEASE_DURATION}s",
            "renewDeadline": f"{RENEW_DEADLINE}s",
            "retryPeriod": f"{RETRY_PERIOD}s",
            "resourceLock": "leases",
            "resourceName": lease,
            "resourceNamespace": LEASE_NS,
        },
        "profiles": [{"schedulerName": SCHEDULER}],
    }


@pytest.fixture(scope="module")
def lease_namespace(kubectl: Kubectl) -> Iterator[str]:
    kubectl.apply(namespace(LEASE_NS))
    yield LEASE_NS
    kubectl.delete("namespace", LEASE_NS)


@pytest.fixture
def replicas(
    dev_cluster: DevCluster, lease_namespace: str, scene: Scene, tmp_path: Path
) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for name in ("a", "b"):
            # client-go sends no token to a plain-http server: the proxy adds the admin's.
            proxy = FaultProxy(dev_cluster.server, dev_cluster.ca_file, token=dev_cluster.token)
            proxy.start()
            path = tmp_path / f"config-{name}.yaml"
            kubeconfig = proxied_kubeconfig(dev_cluster, proxy, tmp_path / name)
            path.write_text(yaml.safe_dump(config(kubeconfig, scene.tag)))
            log_path = tmp_path / f"kube-scheduler-{name}.log"
            with log_path.open("w") as log:
                proc = subprocess.Popen(
                    [
                        str(bin_dir() / "kube-scheduler"),
                        f"--config={path}",
                        f"--bind-address={LOOPBACK}",
                        f"--secure-port={free_ports(1)[0]}",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append(Replica(name, proxy, proc, log_path))
        yield started
    finally:
        for replica in started:
            if replica.proc.poll() is None:
                os.killpg(replica.proc.pid, signal.SIGCONT)
                replica.proc.terminate()
                replica.proc.wait(15)
            replica.proxy.stop()


@pytest.fixture
def scene(dev_cluster: DevCluster, request: pytest.FixtureRequest) -> Iterator[Scene]:
    made = Scene(dev_cluster, request.param, SCHEDULER)
    made.setup_nodes()
    made.make_namespace()
    try:
        yield made
    finally:
        made.cleanup()


def exited(replica: Replica) -> bool:
    """kube-scheduler stands down by exiting ("Leaderelection lost")."""
    return replica.proc.poll() is not None


@pytest.mark.parametrize("scene", ["kube-freeze"], indirect=True)
def test_kube_scheduler_frozen_through_its_lease(replicas: list[Replica], scene: Scene) -> None:
    figures = freeze_through_lease(scene, replicas, lease_path(LEASE_NS, scene.tag), stood_down=exited)
    figures.report("kube-scheduler freeze-binds")


@pytest.mark.parametrize("scene", ["kube-partition"], indirect=True)
def test_kube_scheduler_partitioned_through_its_lease(replicas: list[Replica], scene: Scene) -> None:
    figures = freeze_through_lease(
        scene, replicas, lease_path(LEASE_NS, scene.tag), stood_down=exited, partition=True
    )
    figures.report("kube-scheduler partition-binds")
