"""The fault suite's own world: a control plane with the node lifecycle controller, the
operator running as its ServiceAccount (manifests/rbac.yaml) behind a fault proxy, and one
Scene (namespace, SchedulingProfile, tainted nodes) per test.

The cluster is separate from the session's: fault tests restart its API server, compact its
etcd and freeze its operator, which other tests must never see. Only this operator runs
against it, so profiles need no isolation label.
"""

from __future__ import annotations

import concurrent.futures
import copy
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import invariants
from controlplane import build_if_needed
from faultproxy import FaultProxy
from fixtures_operator import (
    SA_NAMESPACE,
    ServiceAccountOperator,
    install_crds_and_rbac,
    kubeconfig_token,
    service_account_kubeconfig,
)
from kubectl import Kubectl, condition, namespace, pod, profile, wait_for
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.kubeapi import ApiError, KubeApi

IDENTITY = "faults"
NODE_KEY = "e2e-fault"  # label and taint of a scene's nodes
API_GROUP = "scheduling.policy-scheduler.io/v1alpha1"


@dataclass
class FaultEnv:
    cluster: DevCluster
    admin: Kubectl
    proxy: FaultProxy
    operator: ServiceAccountOperator
    operator_args: tuple[Path, Path, tuple[str, ...]]
    restarts: int = 0

    def leading(self) -> bool:
        try:
            return "policy_scheduler_leader 1.0" in self.operator.metrics()
        except OSError:
            return False

    def ensure_leader(self, timeout: float = 30) -> None:
        """Restart the operator if it has not led for `timeout` seconds, so that one test's
        wedged operator does not fail the next ones (the test that wedged it fails itself)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.leading():
                return
            time.sleep(0.5)
        self.operator.stop()
        kubeconfig, log_path, extra = self.operator_args
        self.operator = ServiceAccountOperator(
            kubeconfig,
            log_path.with_suffix(f".{self.restarts}.log"),
            *extra,
            reader_token=self.operator.reader_token,
        )
        self.restarts += 1
        self.operator.wait_ready()
        wait_for("the restarted operator leads", self.leading, timeout=60)

    @property
    def api(self) -> KubeApi:
        return self.cluster.api()

    def freeze_operator(self) -> None:
        os.killpg(self.operator.proc.pid, signal.SIGSTOP)

    def thaw_operator(self) -> None:
        os.killpg(self.operator.proc.pid, signal.SIGCONT)

    def log_since(self, offset: int) -> str:
        self.operator.log.flush()
        return self.operator.log_path.read_text()[offset:]

    def log_size(self) -> int:
        self.operator.log.flush()
        return len(self.operator.log_path.read_text())


@pytest.fixture(scope="session")
def faults(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[FaultEnv]:
    build_if_needed(pytestconfig)
    workdir = tmp_path_factory.mktemp("fault-cluster")
    cluster = DevCluster(workdir / "cluster", nodes=0, node_lifecycle=True)
    cluster.start()
    proxy = FaultProxy(cluster.server, cluster.ca_file)
    operator: ServiceAccountOperator | None = None
    try:
        admin = Kubectl(cluster.kubeconfig)
        install_crds_and_rbac(admin)
        proxy.start()
        kubeconfig = service_account_kubeconfig(admin, workdir / "operator-kubeconfig", server=proxy.url)
        extra = ("--lease-namespace", SA_NAMESPACE, "--identity", IDENTITY)
        # The operator's account may not read /metrics itself (the secure port asks the API
        # server, as test_rbac shows): the admin's token reads them.
        operator = ServiceAccountOperator(
            kubeconfig, workdir / "operator.log", *extra, reader_token=kubeconfig_token(cluster.kubeconfig)
        )
        operator.wait_ready()
        env = FaultEnv(cluster, admin, proxy, operator, (kubeconfig, workdir / "operator.log", extra))
        yield env
        operator = env.operator
    finally:
        if operator is not None:
            if operator.proc.poll() is None:
                os.killpg(operator.proc.pid, signal.SIGCONT)  # a failed test may leave it frozen
            operator.stop()
        proxy.stop()
        cluster.stop()


def parallel(fn: Callable[[Any], Any], items: Iterable[Any], workers: int = 8) -> list[Any]:
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


class Scene:
    """One test's namespace, scheduler (SchedulingProfile) and nodes, which only its pods tolerate."""

    def __init__(self, env: FaultEnv, tag: str, **profile_spec: Any) -> None:
        self.env = env
        self.tag = tag
        self.ns = f"fault-{tag}"
        self.scheduler = f"fault-{tag}"
        self.nodes: list[str] = []
        self.cluster_objects: list[tuple[str, str]] = []
        env.admin.apply(namespace(self.ns))
        spec = {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 4, **profile_spec}
        env.admin.apply(profile(self.scheduler, self.scheduler, **spec))
        self.cluster_objects.append(("schedulingprofile", self.scheduler))
        wait_for(f"profile {self.scheduler} ready", lambda: self._ready(), timeout=60)

    def _ready(self) -> bool:
        cond = condition(self.env.admin.get("schedulingprofile", self.scheduler), "Ready")
        return bool(cond and cond["status"] == "True")

    @property
    def api(self) -> KubeApi:
        return self.env.api

    # ---- nodes -----------------------------------------------------------------------------------

    def add_nodes(
        self, count: int, cpu: str = "4", memory: str = "16Gi", pods: str = "110", **labels: str
    ) -> list[str]:
        names = self.env.cluster.create_nodes(
            count,
            prefix=f"{self.tag}",
            cpu=cpu,
            memory=memory,
            pods=pods,
            labels={NODE_KEY: self.tag, **labels},
            taints=[{"key": NODE_KEY, "value": self.tag, "effect": "NoSchedule"}],
        )
        self.nodes += names
        return names

    # ---- pods ------------------------------------------------------------------------------------

    def pod(self, name: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
        """A pod for this scene's scheduler, kept to its nodes (kwargs as kubectl.pod's)."""
        extra = copy.deepcopy(kwargs.pop("extra_spec", None) or {})
        extra.setdefault("nodeSelector", {}).setdefault(NODE_KEY, self.tag)
        extra.setdefault("tolerations", []).append(
            {"key": NODE_KEY, "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
        )
        kwargs.setdefault("memory", "64Mi")
        return pod(name, self.ns, self.scheduler, cpu=cpu, extra_spec=extra, **kwargs)

    def create(self, manifests: Iterable[dict[str, Any]]) -> None:
        path = f"/api/v1/namespaces/{self.ns}/pods"
        parallel(lambda m: self.api.post(path, m), list(manifests))

    def delete_pods(self, names: Iterable[str]) -> None:
        def delete(name: str) -> None:
            try:
                self.api.request("DELETE", f"/api/v1/namespaces/{self.ns}/pods/{name}")
            except ApiError as exc:
                if exc.status != 404:
                    raise

        parallel(delete, list(names))

    def bind(self, name: str, node: str) -> None:
        """Bind as a competing scheduler would."""
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": self.ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.api.post(f"/api/v1/namespaces/{self.ns}/pods/{name}/binding", body)

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.api.get(f"/api/v1/namespaces/{self.ns}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def placement(self) -> dict[str, str]:
        """Pod name -> node ("" when not bound)."""
        return {n: p["spec"].get("nodeName") or "" for n, p in self.pods().items()}

    def wait_bound(self, names: Iterable[str], timeout: float = 60) -> dict[str, str]:
        wanted = set(names)

        def bound() -> dict[str, str] | None:
            placement = self.placement()
            return placement if all(placement.get(n) for n in wanted) else None

        return wait_for(f"{len(wanted)} pods of {self.ns} bound", bound, timeout=timeout, interval=0.3)

    def wait_all_bound(self, timeout: float = 60) -> list[str]:
        """Wait until every pod of the scene that is not being deleted is bound; their names.
        (Preemption may still evict some meanwhile: those are no longer waited for.)"""

        def all_bound() -> list[str] | None:
            live = {n: p for n, p in self.pods().items() if not p["metadata"].get("deletionTimestamp")}
            return sorted(live) if all(p["spec"].get("nodeName") for p in live.values()) else None

        return wait_for(f"every pod of {self.ns} bound", all_bound, timeout=timeout, interval=0.5)

    def stays_unbound(self, names: Iterable[str], seconds: float) -> None:
        wanted = set(names)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            placement = self.placement()
            bound = {n: placement[n] for n in wanted if placement.get(n)}
            assert not bound, f"bound although nothing fits: {bound}"
            time.sleep(0.5)

    def snapshot(self) -> invariants.Snapshot:
        return invariants.take(self.api, [self.ns])

    def check(self, **kwargs: Any) -> None:
        invariants.assert_holds(self.snapshot(), **kwargs)

    def keys(self, names: Iterable[str]) -> list[str]:
        return [f"{self.ns}/{n}" for n in names]

    # ---- teardown --------------------------------------------------------------------------------

    def cleanup(self) -> None:
        self.env.proxy.clear()
        self.env.admin.delete("namespace", self.ns)
        for kind, name in self.cluster_objects:
            self.env.admin.delete(kind, name)
        for node in self.nodes:
            self.env.admin.delete("node", node)


@pytest.fixture
def fault_scene(faults: FaultEnv) -> Iterator[Callable[..., Scene]]:
    made: list[Scene] = []

    def make(tag: str, **profile_spec: Any) -> Scene:
        made.append(Scene(faults, tag, **profile_spec))
        return made[-1]

    yield make
    for s in made:
        s.cleanup()
    faults.ensure_leader()


def report(name: str, **figures: Any) -> None:
    """One line of measured results for docs/reliability.md: shown by `pytest -s`, and appended
    to the file $FAULT_RESULTS names."""
    line = f"FAULT-RESULT {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items())
    print("\n" + line)
    target = os.environ.get("FAULT_RESULTS")
    if target:
        with Path(target).open("a") as handle:
            handle.write(line + "\n")
