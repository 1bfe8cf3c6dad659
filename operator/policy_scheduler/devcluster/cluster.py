"""A real Kubernetes control plane on 127.0.0.1, for development and end-to-end tests.

etcd, kube-apiserver, kube-controller-manager and kwok run as plain child processes (no
containers). kwok plays the kubelet of every node, so pods bound to a node become
Running without any container runtime. There is deliberately no kube-scheduler: binding
pods is the job of the scheduler under test.

Each start is a fresh cluster (etcd data is wiped). The PIDs of the components are recorded
in <workdir>/state.json so that another process (`dev-cluster down`) can stop them.
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import secrets
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from policy_scheduler.devcluster.build import missing_binaries
from policy_scheduler.devcluster.hostnet import LOOPBACK, advertise_address, free_ports
from policy_scheduler.devcluster.kubeapi import KubeApi, probe
from policy_scheduler.devcluster.kwokstages import install_stages
from policy_scheduler.devcluster.nodes import (
    DEFAULT_ZONES,
    NodeShape,
    is_ready,
    next_names,
    node_ip,
    node_manifest,
)
from policy_scheduler.devcluster.procs import Component, log_tail, spawn, terminate
from policy_scheduler.devcluster.versions import bin_dir

log = logging.getLogger(__name__)

ADMIN_USER = "admin"
CONTEXT_NAME = "policy-scheduler-dev"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.0.0.0/16"  # kwok hands out pod IPs from here
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Just what workloads and PodDisruptionBudgets need; no node lifecycle controller, so nothing
# evicts pods or taints nodes behind the scheduler's back.
CONTROLLERS: tuple[str, ...] = (
    "disruption-controller",
    "garbage-collector-controller",
    "replicaset-controller",
    "deployment-controller",
    "namespace-controller",
    "statefulset-controller",
    # Binds claims to PVs (the scheduler only pre-binds for WaitForFirstConsumer classes).
    "persistentvolume-binder-controller",
    # DRA: creates claims from pods' ResourceClaimTemplates and drops reservations of pods that
    # are gone (deallocating claims no pod uses any more).
    "resourceclaim-controller",
)
# ServiceAccount: pods would need a token volume nobody mounts. TaintNodesByCondition: it
# puts a not-ready taint on every new node that only the (absent) node lifecycle
# controller would remove.
DISABLED_ADMISSION = ("ServiceAccount", "TaintNodesByCondition")
# `node_lifecycle=True` (fault tests): the node lifecycle controller taints nodes by their
# conditions (memory pressure, not ready) and TaintNodesByCondition taints new nodes until then.
NODE_LIFECYCLE_CONTROLLERS = ("node-lifecycle-controller",)
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
KWOK_NODE_LEASE_SECONDS = 40
STATE_FILE = "state.json"


class DevClusterError(RuntimeError):
    """The dev cluster could not be started or reached; the message says why."""


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    kwok: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(*free_ports(5))


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    alive: bool
    log: Path


@dataclass(frozen=True)
class ClusterStatus:
    workdir: Path
    server: str | None
    kubeconfig: Path
    components: tuple[ComponentStatus, ...]
    api_ready: bool

    @property
    def running(self) -> bool:
        return bool(self.components) and self.api_ready and all(c.alive for c in self.components)

    def describe(self) -> str:
        if not self.components:
            return f"dev cluster: not running (workdir {self.workdir})"
        alive = sum(c.alive for c in self.components)
        state = "running" if self.running else "DEAD (stale state)" if not alive else "DEGRADED"
        lines = [
            f"dev cluster: {state}",
            f"  server:     {self.server} ({'ready' if self.api_ready else 'not ready'})",
            f"  kubeconfig: {self.kubeconfig}",
        ]
        for c in self.components:
            lines.append(f"  {c.name:<24} pid {c.pid:<8} {'up' if c.alive else 'DEAD':<5} log {c.log}")
        return "\n".join(lines)


# --- command lines -----------------------------------------------------------------------


def etcd_args(binary: Path, data_dir: Path, ports: Ports) -> list[str]:
    client, peer = f"http://{LOOPBACK}:{ports.etcd_client}", f"http://{LOOPBACK}:{ports.etcd_peer}"
    return [
        str(binary),
        "--name=devcluster",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=devcluster={peer}",
        "--unsafe-no-fsync",  # throwaway data: durability only costs time
        "--log-level=warn",
    ]


def apiserver_args(
    binary: Path, pki: Path, ports: Ports, advertise: str | None, *, node_lifecycle: bool = False
) -> list[str]:
    disabled = [p for p in DISABLED_ADMISSION if not (node_lifecycle and p == "TaintNodesByCondition")]
    args = [
        str(binary),
        f"--etcd-servers=http://{LOOPBACK}:{ports.etcd_client}",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={ports.apiserver}",
        f"--cert-dir={pki}",  # the apiserver writes a self-signed apiserver.crt/.key here
        "--authorization-mode=Node,RBAC",
        f"--token-auth-file={pki / 'tokens.csv'}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-account-issuer={SA_ISSUER}",
        f"--disable-admission-plugins={','.join(disabled)}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
    ]
    if advertise is not None:
        args.append(f"--advertise-address={advertise}")
    return args


def controller_manager_args(
    binary: Path, kubeconfig: Path, ports: Ports, *, node_lifecycle: bool = False
) -> list[str]:
    controllers = CONTROLLERS + (NODE_LIFECYCLE_CONTROLLERS if node_lifecycle else ())
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--controllers={','.join(controllers)}",
        "--leader-elect=false",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={ports.controller_manager}",
        "--use-service-account-credentials=false",
        "--kube-api-qps=100",
        "--kube-api-burst=200",
    ]


def kwok_args(binary: Path, kubeconfig: Path, ports: Ports, stages: Sequence[Path]) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--manage-all-nodes=true",
        f"--server-address={LOOPBACK}:{ports.kwok}",
        f"--node-lease-duration-seconds={KWOK_NODE_LEASE_SECONDS}",
        f"--cidr={POD_CIDR}",
        "--v=WARN",  # INFO logs every lease renewal: a line per node every ~10s
        *(f"--config={stage}" for stage in stages),
    ]


def kubeconfig_document(server: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT_NAME,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT_NAME, "context": {"cluster": CONTEXT_NAME, "user": ADMIN_USER}}],
        "current-context": CONTEXT_NAME,
    }


def _write_private(path: Path, text: str) -> None:
    """Write a file readable only by its owner, atomically (readers never see half of it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)


# --- the cluster ---------------------------------------------------------------------------


class DevCluster:
    """Start, inspect and stop the local control plane.

    >>> with DevCluster(Path("/tmp/dc"), nodes=3) as cluster:
    ...     print(cluster.kubeconfig)
    """

    def __init__(
        self,
        workdir: Path,
        nodes: int = 10,
        *,
        binaries: Path | None = None,
        die_with_parent: bool = True,
        timeout: float = 120.0,
        node_lifecycle: bool = False,
    ) -> None:
        """`die_with_parent`: components get SIGTERM from the kernel if this process dies,
        even by SIGKILL. Turn it off to leave the cluster running after exit (CLI `up`).
        `node_lifecycle`: run the node lifecycle controller and TaintNodesByCondition, so node
        conditions become taints as in a real cluster (fault tests)."""
        self.workdir = Path(workdir).expanduser().absolute()
        self.nodes = nodes
        self.binaries = binaries or bin_dir()
        self.die_with_parent = die_with_parent
        self.timeout = timeout
        self.node_lifecycle = node_lifecycle
        self.startup_seconds: float | None = None
        self._components: list[Component] = []
        self._server: str | None = None
        self._token: str | None = None

    # paths and connection details

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.workdir / STATE_FILE

    @property
    def logs_dir(self) -> Path:
        return self.workdir / "logs"

    @property
    def pki_dir(self) -> Path:
        return self.workdir / "pki"

    @property
    def ca_file(self) -> Path:
        return self.pki_dir / "apiserver.crt"

    @property
    def kubectl(self) -> Path:
        return self.binaries / "kubectl"

    @property
    def server(self) -> str:
        if self._server is None:
            raise DevClusterError("the dev cluster has not been started")
        return self._server

    @property
    def token(self) -> str:
        if self._token is None:
            raise DevClusterError("the dev cluster has not been started")
        return self._token

    @property
    def components(self) -> tuple[Component, ...]:
        return tuple(self._components)

    def api(self) -> KubeApi:
        return KubeApi(self.server, self.token, self.ca_file)

    # lifecycle

    @classmethod
    def from_state(cls, workdir: Path) -> DevCluster | None:
        """The cluster recorded in `workdir`/state.json (possibly dead), or None."""
        path = Path(workdir).expanduser() / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise DevClusterError(f"unreadable dev cluster state {path}: {exc}") from exc
        cluster = cls(workdir, int(data["nodes"]), binaries=Path(data["binaries"]), die_with_parent=False)
        cluster._components = [Component.from_json(c) for c in data["components"]]
        cluster._server = data.get("server")
        cluster._token = data.get("token")
        return cluster

    def start(self) -> None:
        if self._components:
            raise DevClusterError("this dev cluster is already started")
        missing = missing_binaries(self.binaries)
        if missing:
            raise DevClusterError(
                f"missing binaries in {self.binaries}: {', '.join(missing)}; build them with "
                "`policy-scheduler dev-cluster build`"
            )
        self._clear_previous()
        started = time.monotonic()
        atexit.register(self.stop)
        try:
            self._launch()
            self.create_nodes(self.nodes)
        except BaseException:  # includes KeyboardInterrupt: never leave half a cluster
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        log.info("dev cluster up in %.1fs at %s", self.startup_seconds, self._server)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every component, newest first, so nothing outlives what it depends on.

        The etcd data goes too (the next start wipes it anyway, and its preallocated WAL
        is 64 MB); logs, certificates and the kubeconfig stay for inspection.
        """
        atexit.unregister(self.stop)
        if not self._components:
            return  # never started (or already stopped): the workdir may belong to another cluster
        for component in reversed(self._components):
            terminate(component, timeout)
        self._components = []
        self.state_file.unlink(missing_ok=True)
        shutil.rmtree(self.workdir / "etcd", ignore_errors=True)

    def detach(self) -> None:
        """Leave the cluster running when this process exits; `from_state` finds it again."""
        atexit.unregister(self.stop)

    def status(self) -> ClusterStatus:
        components = tuple(ComponentStatus(c.name, c.pid, c.alive(), c.log_path) for c in self._components)
        ready = self._server is not None and probe(f"{self._server}/readyz", token=self._token)
        return ClusterStatus(self.workdir, self._server, self.kubeconfig, components, ready)

    def __enter__(self) -> DevCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # nodes

    def create_nodes(
        self,
        count: int,
        prefix: str = "kwok-node",
        cpu: str = "32",
        memory: str = "256Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        zones: Sequence[str] = DEFAULT_ZONES,
        *,
        ephemeral_storage: str = "1Ti",
        taints: Sequence[Mapping[str, str]] = (),
        wait: bool = True,
    ) -> list[str]:
        """Create `count` fake nodes named `<prefix>-<i>`, spread round-robin over `zones`,
        and (by default) wait until kwok reports them Ready. Returns their names."""
        api = self.api()
        shape = NodeShape(
            cpu, memory, pods, ephemeral_storage, dict(labels or {}), tuple(zones), tuple(taints)
        )
        existing = [n["metadata"]["name"] for n in api.get("/api/v1/nodes")["items"]]
        names = next_names(prefix, count, existing)
        for ordinal, name in enumerate(names, start=len(existing)):
            index = int(name.rsplit("-", 1)[1])
            zone = shape.zones[index % len(shape.zones)]
            api.post("/api/v1/nodes", node_manifest(name, zone, shape, internal_ip=node_ip(ordinal)))
        if wait:
            self.wait_nodes_ready(names, expected_cpu=cpu)
        return names

    def wait_nodes_ready(self, names: Sequence[str], *, expected_cpu: str | None = None) -> None:
        api = self.api()
        wanted = set(names)

        def all_ready() -> bool:
            nodes = [n for n in api.get("/api/v1/nodes")["items"] if n["metadata"]["name"] in wanted]
            return len(nodes) == len(wanted) and all(is_ready(n) for n in nodes)

        self._wait_until(self._component("kwok"), all_ready, f"{len(wanted)} nodes Ready")
        if self.node_lifecycle:
            # Ready nodes lose the admission plugin's not-ready taint a moment later.
            def untainted() -> bool:
                nodes = [n for n in api.get("/api/v1/nodes")["items"] if n["metadata"]["name"] in wanted]
                return not any(
                    t.get("key") == NOT_READY_TAINT for n in nodes for t in n["spec"].get("taints") or []
                )

            self._wait_until(self._component("kube-controller-manager"), untainted, "not-ready taints gone")
        if expected_cpu is not None:
            for name in names:
                allocatable = api.get(f"/api/v1/nodes/{name}")["status"].get("allocatable", {})
                if allocatable.get("cpu") != expected_cpu:
                    raise DevClusterError(f"node {name} lost its capacity: allocatable={allocatable}")

    # faults (tests): stop and restart components, compact etcd

    def stop_component(self, name: str, *, kill: bool = False) -> None:
        """Stop one component (SIGKILL if `kill`, else SIGTERM); `start_component` brings it back."""
        component = self._require(name)
        terminate(component, 0.0 if kill else self.timeout)

    def start_component(self, name: str) -> None:
        """Start a stopped component again with its original command line, ports and log, and
        wait until it is healthy (the API server: ready)."""
        old = self._require(name)
        if old.alive():
            raise DevClusterError(f"{name} is still running")
        new = spawn(name, old.argv, old.log_path, env=old.env, die_with_parent=self.die_with_parent)
        self._components[self._components.index(old)] = new
        self._write_state()
        if name == "kube-apiserver":
            self._wait_until(new, lambda: probe(f"{self.server}/readyz", token=self._token), "ready")
        elif name == "etcd":
            self._wait_until(new, lambda: probe(f"{self.etcd_url}/health"), "healthy")

    def restart_component(self, name: str, *, down_for: float = 0.0, kill: bool = False) -> None:
        self.stop_component(name, kill=kill)
        time.sleep(down_for)  # the outage itself: nothing to poll for
        self.start_component(name)

    @property
    def etcd_url(self) -> str:
        etcd = self._require("etcd")
        url = next(a for a in etcd.argv if a.startswith("--advertise-client-urls="))
        return url.split("=", 1)[1]

    def compact_etcd(self) -> int:
        """Compact etcd's whole history up to its current revision (physically, so it is gone
        at once); returns that revision. Watches from older resourceVersions then get 410 Gone."""
        revision = int(
            self._etcd("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
        )
        self._etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def _etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        # etcd's gRPC gateway: JSON over HTTP, no etcdctl needed.
        request = urllib.request.Request(self.etcd_url + path, data=json.dumps(body).encode(), method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=15) as response:
            result: dict[str, Any] = json.loads(response.read())
        return result

    def _require(self, name: str) -> Component:
        component = self._component(name)
        if component is None:
            raise DevClusterError(f"no component {name!r} in this dev cluster")
        return component

    # startup steps

    def _clear_previous(self) -> None:
        previous = DevCluster.from_state(self.workdir)
        if previous is None:
            return
        if previous.status().running:
            raise DevClusterError(
                f"a dev cluster is already running in {self.workdir}; stop it with "
                "`policy-scheduler dev-cluster down` or use another workdir"
            )
        previous.stop()  # leftovers of a crashed run

    def _launch(self) -> None:
        self._prepare_workdir()
        ports = Ports.pick()
        self._token = secrets.token_urlsafe(32)
        _write_private(
            self.pki_dir / "tokens.csv", f'{self._token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n'
        )
        self._ensure_service_account_keys()
        stages = install_stages(self.workdir / "kwok" / "stages")
        advertise = advertise_address()

        etcd = self._spawn("etcd", etcd_args(self.binaries / "etcd", self.workdir / "etcd", ports))
        self._wait_until(etcd, lambda: probe(f"http://{LOOPBACK}:{ports.etcd_client}/health"), "healthy")

        self._server = f"https://{LOOPBACK}:{ports.apiserver}"
        binary = self.binaries / "kube-apiserver"
        apiserver = self._spawn(
            "kube-apiserver",
            apiserver_args(binary, self.pki_dir, ports, advertise, node_lifecycle=self.node_lifecycle),
        )
        self._wait_until(apiserver, lambda: probe(f"{self.server}/readyz", token=self._token), "ready")
        self._write_kubeconfig()

        # Both only need the API server, so they start together.
        binary = self.binaries / "kube-controller-manager"
        kcm = self._spawn(
            "kube-controller-manager",
            controller_manager_args(binary, self.kubeconfig, ports, node_lifecycle=self.node_lifecycle),
        )
        kwok = self._spawn(
            "kwok",
            kwok_args(self.binaries / "kwok", self.kubeconfig, ports, stages),
            # Keeps kwok from reading a personal ~/.kwok/kwok.yaml.
            env=dict(os.environ, KWOK_WORKDIR=str(self.workdir / "kwok")),
        )
        self._wait_until(
            kcm, lambda: probe(f"https://{LOOPBACK}:{ports.controller_manager}/healthz"), "healthy"
        )
        self._wait_until(kwok, lambda: probe(f"http://{LOOPBACK}:{ports.kwok}/healthz"), "healthy")

    def _prepare_workdir(self) -> None:
        shutil.rmtree(self.workdir / "etcd", ignore_errors=True)  # every start is a fresh cluster
        shutil.rmtree(self.logs_dir, ignore_errors=True)
        for directory in (self.workdir, self.logs_dir, self.pki_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.pki_dir.chmod(0o700)

    def _ensure_service_account_keys(self) -> None:
        key, pub = self.pki_dir / "sa.key", self.pki_dir / "sa.pub"
        if key.is_file() and pub.is_file():
            return
        openssl = shutil.which("openssl")
        if openssl is None:
            raise DevClusterError("the `openssl` command is needed to create the service-account key pair")
        for cmd in (
            [openssl, "genrsa", "-out", str(key), "2048"],
            [openssl, "rsa", "-in", str(key), "-pubout", "-out", str(pub)],
        ):
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise DevClusterError(f"{' '.join(cmd)} failed: {result.stderr.strip()}")

    def _write_kubeconfig(self) -> None:
        document = kubeconfig_document(self.server, self.token, self.ca_file.read_bytes())
        _write_private(self.kubeconfig, yaml.safe_dump(document, sort_keys=False))

    def _write_state(self) -> None:
        state = {
            "workdir": str(self.workdir),
            "nodes": self.nodes,
            "binaries": str(self.binaries),
            "server": self._server,
            "token": self._token,
            "kubeconfig": str(self.kubeconfig),
            "components": [c.to_json() for c in self._components],
        }
        _write_private(self.state_file, json.dumps(state, indent=2) + "\n")

    def _spawn(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Component:
        log.debug("starting %s: %s", name, " ".join(argv))
        component = spawn(
            name, argv, self.logs_dir / f"{name}.log", env=env, die_with_parent=self.die_with_parent
        )
        self._components.append(component)
        self._write_state()  # recorded at once, so `down` can clean up even a half-started cluster
        return component

    def _component(self, name: str) -> Component | None:
        return next((c for c in self._components if c.name == name), None)

    def _wait_until(self, component: Component | None, check: Callable[[], bool], what: str) -> None:
        """Poll `check` until it holds; fail early, with the log tail, if `component` dies."""
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        while not check():
            if component is not None and not component.alive():
                raise DevClusterError(
                    f"{component.name} exited (code {component.exit_code()}) before it was {what}"
                    + _log_excerpt(component)
                )
            if time.monotonic() > deadline:
                name = component.name if component is not None else "dev cluster"
                excerpt = _log_excerpt(component) if component is not None else ""
                raise DevClusterError(f"{name} not {what} after {self.timeout:.0f}s{excerpt}")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def _log_excerpt(component: Component) -> str:
    return f"; last lines of {component.log_path}:\n{log_tail(component.log_path)}"
