"""The operator under test: the real `policy-scheduler run` process against the dev cluster."""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from controlplane import build_if_needed
from kubectl import Kubectl
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.policy.crdgen import render_crds
from polling import wait_until

# Profiles labelled with this are served only by the operators their test starts itself.
ISOLATED_LABEL = "e2e-isolated"


def metric_sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample `name` (as exposed: `_total`, `_count`, `_sum` included) whose
    labels include `labels`, from a /metrics text; None if there is none."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubeconfig_token(kubeconfig: Path) -> str:
    """The bearer token of the kubeconfig's (only) user."""
    users = yaml.safe_load(kubeconfig.read_text())["users"]
    token: str = users[0]["user"]["token"]
    return token


def https_get(port: int, path: str, token: str | None) -> tuple[int, str]:
    """GET on the operator's secure port (its certificate is self-signed: not checked here)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


class OperatorProcess:
    # The admin installs CRDs; an operator running as its ServiceAccount may not (RBAC test).
    install_crds = True

    def __init__(
        self, kubeconfig: Path, log_path: Path, *extra: str, reader_token: str | None = None
    ) -> None:
        self.port = free_port()
        self.kubeconfig = kubeconfig
        # Who reads /metrics: the kubeconfig's own user unless told otherwise.
        self.reader_token = reader_token or kubeconfig_token(kubeconfig)
        self.log_path = log_path
        cmd = [
            sys.executable,
            "-m",
            "policy_scheduler",
            "--log-level",
            "INFO",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            *(["--install-crds"] if self.install_crds else []),
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(self.port),
            *extra,
        ]
        self.cmd = cmd
        self.log = log_path.open("w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def restart(self) -> None:
        """Stop the process and start the same command again (same port, log appended)."""
        self.stop()
        self.log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            self.cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                return self.get("/readyz", token=None)[0] == 200
            except OSError:
                return False

        try:
            wait_until("the operator's /readyz", ready, timeout=timeout, interval=0.3)
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{self.tail()}") from None

    def get(self, path: str, *, token: str | None) -> tuple[int, str]:
        return https_get(self.port, path, token)

    def metrics(self) -> str:
        status, text = self.get("/metrics", token=self.reader_token)
        assert status == 200, f"/metrics: HTTP {status}: {text[:300]}"
        return text

    def tail(self, lines: int = 40) -> str:
        self.log.flush()
        return "\n".join(self.log_path.read_text().splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def kubectl(kubeconfig: Path) -> Kubectl:
    return Kubectl(kubeconfig)


@pytest.fixture(scope="session")
def operator_process(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """One operator for the session (leader election off); tests use their own profiles."""
    process = OperatorProcess(
        kubeconfig,
        tmp_path_factory.mktemp("operator") / "operator.log",
        "--no-leader-elect",
        "--profile-selector",
        f"!{ISOLATED_LABEL}",
    )
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


# ---- the operator as its ServiceAccount (manifests/rbac.yaml) -------------------------------------


ROOT = Path(__file__).resolve().parents[1]
SA_NAMESPACE = "policy-scheduler"
SA_NAME = "policy-scheduler"
SA_USER = f"system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"
API_GROUP = "scheduling.policy-scheduler.io/v1alpha1"
PART_OF = "policy-scheduler"
# A refusal as our client, kopf or kubernetes-asyncio log it (403 apart from timestamps and ids).
FORBIDDEN = re.compile(r"forbidden|not enough permissions|(?<![\d,.:-])403(?![\d-])", re.IGNORECASE)
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


@contextmanager
def private_cluster(
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
    name: str,
    nodes: int,
    apiserver_flags: Callable[[Path], Sequence[str]] = lambda _workdir: (),
) -> Iterator[DevCluster]:
    """A cluster of a module's own: on the shared one, the session's operator (admin, no leader
    election) would serve the same profiles and could do the work of an operator under test.
    `apiserver_flags(workdir)`: more kube-apiserver flags, given the cluster's directory."""
    build_if_needed(pytestconfig)
    workdir = tmp_path_factory.mktemp(name)
    dev = DevCluster(workdir, nodes=nodes, apiserver_flags=apiserver_flags(workdir))
    dev.start()
    try:
        yield dev
    finally:
        dev.stop()


class ServiceAccountOperator(OperatorProcess):
    """`policy-scheduler run` without --install-crds (the ServiceAccount cannot write CRDs)."""

    install_crds = False

    def forbidden_lines(self) -> list[str]:
        self.log.flush()
        lines = self.log_path.read_text().splitlines()
        return [line for line in lines if FORBIDDEN.search(TIMESTAMP.sub("", line))]


def apply_crds(kubectl: Kubectl) -> None:
    """Apply our CRDs and wait until each is Established."""
    crds = render_crds()
    kubectl.run("apply", "-f", "-", stdin="".join(f"---\n{text}" for text in crds.values()))
    wait_crds_established(kubectl, len(crds))


def wait_crds_established(kubectl: Kubectl, count: int, *selector: str, what: str = "our CRDs") -> None:
    """Wait until `count` CRDs are Established: ours, or those `selector` (kubectl get arguments) picks."""
    selector = selector or ("-l", f"app.kubernetes.io/part-of={PART_OF}")

    # Polled rather than `kubectl wait`, which fails at once on a CRD whose status has no
    # conditions yet (".status.conditions accessor error: <nil>"), as a loaded server leaves it.
    def established() -> bool:
        result = kubectl.run("get", "crd", *selector, "-o", "json")
        ready = [
            item
            for item in json.loads(result.stdout)["items"]
            if any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (item.get("status") or {}).get("conditions") or []
            )
        ]
        return len(ready) == count

    wait_until(f"{what} established", established, timeout=60)


def wait_api_group_discovered(kubectl: Kubectl, group_version: str = API_GROUP, resources: int = 6) -> None:
    """Established comes a moment before the group is in discovery, which kubectl caches;
    `resources` counts /status subresources too."""

    def discovered() -> bool:
        result = kubectl.run("get", "--raw", f"/apis/{group_version}", check=False)
        return result.returncode == 0 and len(json.loads(result.stdout)["resources"]) >= resources

    wait_until(f"{group_version} in discovery", discovered, timeout=30)


def install_crds_and_rbac(kubectl: Kubectl) -> None:
    """As the admin: our CRDs (established and discoverable), then manifests/' namespace,
    ServiceAccount and least-privilege RBAC."""
    apply_crds(kubectl)
    wait_api_group_discovered(kubectl)
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        kubectl.run("apply", "-f", str(ROOT / "manifests" / name))


def service_account_token(
    admin: Kubectl, duration: str = "1h", *, namespace: str = SA_NAMESPACE, name: str = SA_NAME
) -> str:
    token = admin.run("create", "token", name, "-n", namespace, f"--duration={duration}").stdout.strip()
    assert token, "TokenRequest returned no token"
    return token


def service_account_kubeconfig(
    admin: Kubectl,
    path: Path,
    *,
    server: str | None = None,
    namespace: str = SA_NAMESPACE,
    name: str = SA_NAME,
) -> Path:
    """The admin kubeconfig's cluster with a token of the ServiceAccount `namespace/name`
    (TokenRequest API); `server` (plain http, e.g. a fault proxy) replaces the cluster's address and CA."""
    token = service_account_token(admin, "6h", namespace=namespace, name=name)
    config = yaml.safe_load(admin.kubeconfig.read_text())
    config["users"] = [{"name": name, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = name
    if server is not None:
        for cluster in config["clusters"]:
            cluster["cluster"] = {"server": server}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
