"""Both installs on a real API server, and the operator at work under what each created.

`helm install` of charts/policy-scheduler (release `e2e` in its own namespace, so every name differs
from the base's) and then `kubectl apply -k manifests/` over the CRDs the chart created. No kubelet
runs the Deployments' pods (there is no default scheduler either: they stay Pending); instead, for
each install, `policy-scheduler run` runs here as that install's ServiceAccount, with a
TokenRequest token against the cluster's loopback address and CA. It must become ready, hold the
Lease the install's Role allows, schedule a gang (a PodGroup from the install's PodGroup CRD, its
status written) and a pod of a profile, preempt through the Eviction API, write events and our
CRs' status, all without a 403. e2e/test_rbac.py checks the base's rules one by one with can-i.

A cluster of this module's own: the chart installs CRDs, which the shared cluster's operator owns.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fixtures_operator import (
    ROOT,
    ServiceAccountOperator,
    private_cluster,
    service_account_kubeconfig,
    wait_api_group_discovered,
    wait_crds_established,
)
from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.tools import ensure_helm
from polling import wait_until

API = "scheduling.policy-scheduler.io/v1alpha1"
PG_API = "scheduling.x-k8s.io/v1alpha1"
RELEASE = "e2e"
NODE_LABEL = "e2e-install"


@dataclass(frozen=True)
class Install:
    name: str  # also the tag of its nodes, namespace and profile
    namespace: str  # where it put the operator (and so its Lease)
    service_account: str
    cluster_role: str

    @property
    def scheduler(self) -> str:
        return f"install-{self.name}"


KUSTOMIZE = Install("kustomize", "policy-scheduler", "policy-scheduler", "policy-scheduler")
HELM = Install("helm", "ps-helm", f"{RELEASE}-policy-scheduler", f"{RELEASE}-policy-scheduler")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[DevCluster]:
    with private_cluster(tmp_path_factory, pytestconfig, "install-cluster", nodes=1) as dev:
        yield dev


class Helm:
    """The real helm against the cluster, its caches and release-independent state in `home`."""

    def __init__(self, binary: Path, kubeconfig: Path, home: Path) -> None:
        self.cmd = [str(binary), "--kubeconfig", str(kubeconfig)]
        self.env = dict(os.environ) | {
            var: str(home / var.lower()) for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")
        }

    def run(self, *args: str) -> str:
        result = subprocess.run(
            [*self.cmd, *args], env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, f"helm {' '.join(args)}: {result.stderr}"
        return result.stdout


@pytest.fixture(scope="module")
def helm(pytestconfig: pytest.Config, cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    with pytestconfig.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        binary = ensure_helm()
    return Helm(binary, cluster.kubeconfig, tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def admin(cluster: DevCluster, helm: Helm) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    chart = str(ROOT / "charts" / "policy-scheduler")
    helm.run("install", RELEASE, chart, "-n", HELM.namespace, "--create-namespace")
    # Over the CRDs the chart created (the base's PodGroup CRD is scheduler-plugins' file as it is).
    kubectl.run("apply", "-k", str(ROOT / "manifests"))
    wait_crds_established(kubectl, 3)
    podgroups = ("--field-selector", "metadata.name=podgroups.scheduling.x-k8s.io")
    wait_crds_established(kubectl, 1, *podgroups, what="the PodGroup CRD")
    wait_api_group_discovered(kubectl)
    wait_api_group_discovered(kubectl, PG_API, resources=2)
    for install in (KUSTOMIZE, HELM):
        cluster.create_nodes(
            2,
            prefix=f"install-{install.name}",
            labels={NODE_LABEL: install.name},
            taints=[{"key": NODE_LABEL, "value": install.name, "effect": "NoSchedule"}],
        )
    kubectl.apply(
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"install-{name}"},
                "value": value,
            }
            for name, value in (("low", 10), ("high", 1000))
        )
    )
    return kubectl


def test_both_installs_created_their_objects(admin: Kubectl, helm: Helm) -> None:
    releases = json.loads(helm.run("list", "-n", HELM.namespace, "-o", "json"))
    assert [(r["name"], r["status"]) for r in releases] == [(RELEASE, "deployed")]
    for install in (KUSTOMIZE, HELM):
        deployment = admin.get("deployment", install.cluster_role, install.namespace)
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == install.service_account
        admin.get("clusterrolebinding", install.cluster_role)
        admin.get("poddisruptionbudget", install.cluster_role, install.namespace)


def placed(install: Install, name: str, *, cpu: str = "100m", **kwargs: Any) -> dict[str, Any]:
    """A pod of the install's profile that only the install's nodes take."""
    toleration = {"key": NODE_LABEL, "operator": "Equal", "value": install.name, "effect": "NoSchedule"}
    extra = {"nodeSelector": {NODE_LABEL: install.name}, "tolerations": [toleration]}
    return pod(name, install.scheduler, install.scheduler, cpu=cpu, extra_spec=extra, **kwargs)


def node_of(admin: Kubectl, install: Install, name: str) -> str | None:
    node: str | None = admin.get("pod", name, install.scheduler)["spec"].get("nodeName")
    return node


@pytest.mark.parametrize("install", [HELM, KUSTOMIZE], ids=lambda i: i.name)
def test_operator_runs_under_the_install(admin: Kubectl, install: Install, tmp_path: Path) -> None:
    kubeconfig = service_account_kubeconfig(
        admin, tmp_path / "kubeconfig", namespace=install.namespace, name=install.service_account
    )
    whoami = json.loads(Kubectl(kubeconfig).run("auth", "whoami", "-o", "json").stdout)
    assert whoami["status"]["userInfo"]["username"] == (
        f"system:serviceaccount:{install.namespace}:{install.service_account}"
    )
    identity = f"install-{install.name}"
    operator = ServiceAccountOperator(
        kubeconfig, tmp_path / "operator.log", "--lease-namespace", install.namespace, "--identity", identity
    )
    try:
        operator.wait_ready()
        work(admin, install)
        lease = admin.get("lease", "policy-scheduler", install.namespace)
        assert lease["spec"]["holderIdentity"] == identity
        assert operator.proc.poll() is None, f"operator exited:\n{operator.tail()}"
        lines = operator.forbidden_lines()
        assert not lines, "the operator was refused something:\n" + "\n".join(lines[:20])
    finally:
        operator.stop()


def work(admin: Kubectl, install: Install) -> None:
    ns, scheduler = install.scheduler, install.scheduler
    admin.apply(
        namespace(ns),
        {"apiVersion": API, "kind": "EvictionPolicy", "metadata": {"name": scheduler}, "spec": {}},
        profile(
            scheduler,
            scheduler,
            evictionPolicyName=scheduler,
            plugins={
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"disabled": [{"name": "PrioritySort"}]},
            },
        ),
        {
            "apiVersion": PG_API,
            "kind": "PodGroup",
            "metadata": {"name": "pair", "namespace": ns},
            "spec": {"minMember": 2},
        },
    )

    def profile_ready() -> bool:
        cond = condition(admin.get("schedulingprofile", scheduler), "Ready")
        return bool(cond and cond["status"] == "True")

    wait_until("profile Ready (status written)", profile_ready, timeout=60)

    # A gang of two and, on the other node, a low-priority filler each node has room for once.
    gang_label = {"scheduling.x-k8s.io/pod-group": "pair"}
    admin.create(
        *(placed(install, f"pair-{i}", labels=gang_label) for i in range(2)),
        *(placed(install, f"filler-{i}", cpu="20", priority_class="install-low") for i in range(2)),
    )
    for name in ("pair-0", "pair-1", "filler-0", "filler-1"):
        wait_until(f"{name} bound", functools.partial(node_of, admin, install, name), timeout=60)

    def group_phase() -> str | None:
        phase: str | None = (admin.get("podgroup", "pair", ns).get("status") or {}).get("phase")
        return phase if phase in ("Scheduled", "Running") else None

    wait_until("PodGroup status written", group_phase, timeout=60)

    def scheduled_event() -> bool:
        return any(
            e["regarding"]["name"] == "filler-0"
            and e["reason"] == "Scheduled"
            and e.get("reportingController") == scheduler
            for e in admin.items("events.events.k8s.io", ns)
        )

    wait_until("Scheduled event", scheduled_event, timeout=60)

    # 20 more cpu fit on neither 32-cpu node: one filler is evicted for it.
    admin.create(placed(install, "urgent", cpu="20", priority_class="install-high"))
    wait_until("urgent bound after preemption", lambda: node_of(admin, install, "urgent"), timeout=90)

    def evicted() -> dict[str, Any] | None:
        status = admin.get("evictionpolicy", scheduler).get("status") or {}
        return status if (status.get("counters") or {}).get("evicted", 0) >= 1 else None

    status = wait_until("eviction counted in EvictionPolicy status", evicted, timeout=60)
    assert status["recentEvictions"][0]["result"] == "Evicted"


def test_helm_uninstall_keeps_the_crds_and_the_policies(admin: Kubectl, helm: Helm) -> None:
    helm.run("uninstall", RELEASE, "-n", HELM.namespace, "--wait")
    gone = admin.run("get", "clusterrole", HELM.cluster_role, "--ignore-not-found", "-o", "name").stdout
    assert not gone.strip()
    # helm.sh/resource-policy: keep on our CRDs; crds/ (the PodGroup CRD) is never deleted by Helm.
    wait_crds_established(admin, 3)
    admin.get("crd", "podgroups.scheduling.x-k8s.io")
    assert admin.get("schedulingprofile", HELM.scheduler)["spec"]["schedulerName"] == HELM.scheduler
