"""A real Kubernetes control plane on 127.0.0.1, for development and end-to-end tests.

etcd, kube-apiserver, kube-controller-manager and kwok run as plain child processes (no
containers). kwok plays the kubelet of every node, so pods bound to a node become
Running without any container runtime. There is deliberately no kube-scheduler: binding
pods is the job of the scheduler under test.

Each start is a fresh cluster (etcd data is wiped). The PIDs of the components are recorded
in <workdir>/state.json so that another process (`dev-cluster down`) can stop them.
Command lines are in flags.py, credentials in credentials.py, processes in procs.py.
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import secrets
import shutil
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from policy_scheduler.devcluster.build import missing_binaries
from policy_scheduler.devcluster.credentials import (
    ensure_service_account_keys,
    kubeconfig_document,
    write_private,
    write_token_file,
)
from policy_scheduler.devcluster.errors import DevClusterError
from policy_scheduler.devcluster.flags import (
    Ports,
    apiserver_args,
    controller_manager_args,
    etcd_args,
    kwok_args,
    with_overrides,
)
from policy_scheduler.devcluster.hostnet import LOOPBACK, advertise_address
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
from policy_scheduler.devcluster.procs import Component, spawn, terminate, wait_until
from policy_scheduler.devcluster.status import ClusterStatus, ComponentStatus
from policy_scheduler.devcluster.versions import ControlPlaneVersions, bin_dir, control_plane

log = logging.getLogger(__name__)

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
STATE_FILE = "state.json"
UNVERSIONED_STATE_KUBERNETES = "v1.35.4"


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
        apiserver_flags: Sequence[str] = (),
        versions: ControlPlaneVersions | None = None,
    ) -> None:
        """`die_with_parent`: components get SIGTERM from the kernel if this process dies,
        even by SIGKILL. Turn it off to leave the cluster running after exit (CLI `up`).
        `node_lifecycle`: run the node lifecycle controller and TaintNodesByCondition, so node
        conditions become taints as in a real cluster (fault tests). `apiserver_flags`: more
        kube-apiserver flags (e.g. --runtime-config, --egress-selector-config-file).
        `versions`: what to run (default: the selected version, see `versions.control_plane`);
        `binaries`: where its binaries are (default: that version's cache folder)."""
        self.workdir = Path(workdir).expanduser().absolute()
        self.nodes = nodes
        self.versions = versions or control_plane()
        self.binaries = binaries or bin_dir(self.versions)
        self.die_with_parent = die_with_parent
        self.timeout = timeout
        self.node_lifecycle = node_lifecycle
        self.apiserver_flags = tuple(apiserver_flags)
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
        cluster = cls(
            workdir,
            int(data["nodes"]),
            binaries=Path(data["binaries"]),
            die_with_parent=False,
            versions=_recorded_versions(data),
        )
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
                f"`policy-scheduler dev-cluster build --kubernetes-version {self.versions.kubernetes}`"
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
        return ClusterStatus(
            self.workdir, self._server, self.kubeconfig, components, ready, self.versions.summary()
        )

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
        write_token_file(self.pki_dir, self._token)
        ensure_service_account_keys(self.pki_dir)
        stages = install_stages(self.workdir / "kwok" / "stages", self.versions)
        advertise = advertise_address()

        etcd = self._spawn("etcd", etcd_args(self.binaries / "etcd", self.workdir / "etcd", ports))
        self._wait_until(etcd, lambda: probe(f"http://{LOOPBACK}:{ports.etcd_client}/health"), "healthy")

        self._server = f"https://{LOOPBACK}:{ports.apiserver}"
        binary = self.binaries / "kube-apiserver"
        apiserver = self._spawn(
            "kube-apiserver",
            with_overrides(
                apiserver_args(binary, self.pki_dir, ports, advertise, node_lifecycle=self.node_lifecycle),
                self.apiserver_flags,
            ),
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

    def _write_kubeconfig(self) -> None:
        document = kubeconfig_document(self.server, self.token, self.ca_file.read_bytes())
        write_private(self.kubeconfig, yaml.safe_dump(document, sort_keys=False))

    def _write_state(self) -> None:
        state = {
            "workdir": str(self.workdir),
            "nodes": self.nodes,
            "binaries": str(self.binaries),
            "versions": {
                "kubernetes": self.versions.kubernetes,
                "etcd": self.versions.etcd,
                "kwok": self.versions.kwok,
            },
            "server": self._server,
            "token": self._token,
            "kubeconfig": str(self.kubeconfig),
            "components": [c.to_json() for c in self._components],
        }
        write_private(self.state_file, json.dumps(state, indent=2) + "\n")

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
        wait_until(component, check, what, self.timeout)


def _recorded_versions(state: Mapping[str, Any]) -> ControlPlaneVersions:
    """The versions a state file records; files written before it recorded them are v1.35.4's,
    the only version then."""
    recorded = state.get("versions")
    if not isinstance(recorded, Mapping):
        return control_plane(UNVERSIONED_STATE_KUBERNETES)
    return ControlPlaneVersions(str(recorded["kubernetes"]), str(recorded["etcd"]), str(recorded["kwok"]))
