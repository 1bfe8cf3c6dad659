"""The secure port on the real control plane: TokenReview authentication, SubjectAccessReview
authorization, client certificates from the configured CA only, certificate files re-read, and
`explain` through the API server's pods/proxy over https.

The operator stands in for its own pod: a kwok pod in policy-scheduler named as the Lease
holder, whose (kwok) address the API server reaches through a test-only egress proxy that
tunnels to the operator on 127.0.0.1 (e2e/egressproxy.py). This module starts a cluster of
its own, with that egress configuration.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from egressproxy import EgressProxy
from fixtures_operator import OperatorProcess, apply_crds, private_cluster, service_account_token
from kubectl import Kubectl, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.kube.serving.certificates import (
    cert_pem,
    certificate,
    key_pem,
    new_key,
    self_signed_pem,
)
from polling import wait_until

OPERATOR_NS = "policy-scheduler"
OPERATOR_POD = "policy-scheduler-serving-e2e"
SCHEDULER = "serving-scheduler"
TENANT_NS = "shop"
OTHER_NS = "bank"


@dataclass(frozen=True)
class Pki:
    directory: Path
    client_ca: Path
    trusted_client: tuple[Path, Path]  # cert, key: CN=cert-admin, O=system:masters
    unknown_client: tuple[Path, Path]  # the same names, signed by a CA the operator does not know

    @property
    def serving(self) -> tuple[Path, Path]:
        return self.directory / "tls.crt", self.directory / "tls.key"


def write_serving_pair(pki: Pki, host: str) -> None:
    cert, key = self_signed_pem(host, ["127.0.0.1"])
    cert_file, key_file = pki.serving
    # The key first, then the certificate: the operator reloads on a change of either.
    key_file.write_bytes(key)
    cert_file.write_bytes(cert)


def make_pki(directory: Path) -> Pki:
    def authority(name: str) -> tuple[x509.Name, object]:
        key = new_key()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        (directory / f"{name}.crt").write_bytes(cert_pem(certificate(subject, key, ca=True)))
        return subject, key

    def client(issuer: tuple[x509.Name, object], stem: str) -> tuple[Path, Path]:
        key = new_key()
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                x509.NameAttribute(NameOID.COMMON_NAME, "cert-admin"),
            ]
        )
        cert = certificate(subject, key, issuer=issuer, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])  # type: ignore[arg-type]
        paths = directory / f"{stem}.crt", directory / f"{stem}.key"
        paths[0].write_bytes(cert_pem(cert))
        paths[1].write_bytes(key_pem(key))
        return paths

    trusted, unknown = authority("trusted-ca"), authority("unknown-ca")
    pki = Pki(directory, directory / "trusted-ca.crt", client(trusted, "trusted"), client(unknown, "unknown"))
    write_serving_pair(pki, "first")
    return pki


@pytest.fixture(scope="module")
def egress(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EgressProxy]:
    proxy = EgressProxy(tmp_path_factory.mktemp("egress") / "egress.sock")
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture(scope="module")
def cluster(
    egress: EgressProxy, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[DevCluster]:
    def egress_through_the_proxy(workdir: Path) -> list[str]:
        return [f"--egress-selector-config-file={egress.write_config(workdir)}"]

    with private_cluster(
        tmp_path_factory, pytestconfig, "serving-cluster", nodes=4, apiserver_flags=egress_through_the_proxy
    ) as dev:
        yield dev


@pytest.fixture(scope="module")
def admin(cluster: DevCluster) -> Kubectl:
    kubectl = Kubectl(cluster.kubeconfig)
    apply_crds(kubectl)
    return kubectl


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def operator(admin: Kubectl, pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    admin.apply(namespace(OPERATOR_NS), namespace(TENANT_NS), namespace(OTHER_NS))
    cert_file, key_file = pki.serving
    process = OperatorProcess(
        admin.kubeconfig,
        tmp_path_factory.mktemp("serving-operator") / "operator.log",
        "--lease-namespace",
        OPERATOR_NS,
        "--identity",
        f"{OPERATOR_POD}_e2e",
        "--tls-cert-file",
        str(cert_file),
        "--tls-private-key-file",
        str(key_file),
        "--client-ca-file",
        str(pki.client_ca),
    )
    try:
        process.wait_ready()
        # The pod the operator stands for: where the Lease holder's name leads `explain`.
        admin.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": OPERATOR_POD, "namespace": OPERATOR_NS},
                "spec": {
                    "nodeName": admin_node(admin),
                    "containers": [
                        {
                            "name": "policy-scheduler",
                            "image": "policy-scheduler:0.1.0",
                            "ports": [{"name": "https-metrics", "containerPort": process.port}],
                        }
                    ],
                },
            }
        )
        wait_until(
            "the stand-in pod running with an address",
            lambda: admin.get("pod", OPERATOR_POD, OPERATOR_NS).get("status", {}).get("podIP"),
            timeout=60,
        )
        yield process
    finally:
        process.stop()


def admin_node(admin: Kubectl) -> str:
    nodes = json.loads(admin.run("get", "nodes", "-o", "json").stdout)["items"]
    name: str = nodes[0]["metadata"]["name"]
    return name


@dataclass(frozen=True)
class Tenant:
    token: str
    kubeconfig: Path


@pytest.fixture(scope="module")
def tenant(admin: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> Tenant:
    """A ServiceAccount of shop that may get shop's pods, and reach the operator through
    pods/proxy (get on the Lease and the operator's pod and its proxy), nothing more."""
    admin.run("create", "serviceaccount", "tenant", "-n", TENANT_NS)
    admin.run("create", "role", "pod-reader", "-n", TENANT_NS, "--verb=get,list", "--resource=pods")
    admin.run(
        "create",
        "rolebinding",
        "pod-reader",
        "-n",
        TENANT_NS,
        "--role=pod-reader",
        f"--serviceaccount={TENANT_NS}:tenant",
    )
    admin.run(
        "create",
        "role",
        "explain-through-proxy",
        "-n",
        OPERATOR_NS,
        "--verb=get",
        "--resource=leases.coordination.k8s.io,pods,pods/proxy",
    )
    admin.run(
        "create",
        "rolebinding",
        "explain-through-proxy",
        "-n",
        OPERATOR_NS,
        "--role=explain-through-proxy",
        f"--serviceaccount={TENANT_NS}:tenant",
    )
    token = service_account_token(admin, name="tenant", namespace=TENANT_NS)
    config = yaml.safe_load(admin.kubeconfig.read_text())
    config["users"] = [{"name": "tenant", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "tenant"
    path = tmp_path_factory.mktemp("tenant") / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return Tenant(token, path)


def https(
    port: int, path: str, *, token: str | None = None, client_cert: tuple[Path, Path] | None = None
) -> tuple[int, dict[str, object] | str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client_cert is not None:
        context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            status, body = int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as exc:
        status, body = int(exc.code), exc.read().decode()
    try:
        return status, json.loads(body)
    except json.JSONDecodeError:
        return status, body


def served_common_name(port: int) -> str:
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    cert = x509.load_pem_x509_certificate(pem.encode())
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def explain(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "policy_scheduler", "explain", "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def stuck_pods(admin: Kubectl, operator: OperatorProcess) -> None:
    """A pod in each tenant namespace that can never fit, so the operator records why."""
    admin.apply(profile("serving", SCHEDULER))
    for ns in (TENANT_NS, OTHER_NS):
        admin.create(pod("stuck", ns, SCHEDULER, cpu="1000"))

    def recorded() -> bool:
        status, _ = https(operator.port, f"/debug/explain/{OTHER_NS}/stuck", token=operator.reader_token)
        return status == 200

    wait_until("the operator's explanation of the stuck pods", recorded, timeout=60)


# ---- authentication and authorization ---------------------------------------------------------------


def test_health_is_open_and_everything_else_needs_a_token(operator: OperatorProcess) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        assert https(operator.port, path) == (200, "ok")
    for path in ("/metrics", f"/debug/explain/{TENANT_NS}/stuck", "/no/such/path"):
        status, body = https(operator.port, path)
        assert status == 401, path
        assert isinstance(body, dict)
        assert body["reason"] == "Unauthorized"
        assert https(operator.port, path, token="not-a-token")[0] == 401


def test_metrics_need_get_on_the_url(operator: OperatorProcess, admin: Kubectl, tenant: Tenant) -> None:
    assert https(operator.port, "/metrics", token=operator.reader_token)[0] == 200
    status, body = https(operator.port, "/metrics", token=tenant.token)
    assert status == 403
    assert isinstance(body, dict)
    assert (
        body["message"]
        == f'forbidden: User "system:serviceaccount:{TENANT_NS}:tenant" cannot get path "/metrics"'
    )
    admin.run("create", "clusterrole", "metrics-reader", "--verb=get", "--non-resource-url=/metrics")
    admin.run(
        "create",
        "clusterrolebinding",
        "tenant-metrics",
        "--clusterrole=metrics-reader",
        f"--serviceaccount={TENANT_NS}:tenant",
    )
    try:
        # Denials are cached for --authorization-webhook-cache-unauthorized-ttl (10 s).
        wait_until(
            "the new grant honoured",
            lambda: https(operator.port, "/metrics", token=tenant.token)[0] == 200,
            timeout=30,
        )
    finally:
        admin.run("delete", "clusterrolebinding", "tenant-metrics")
        admin.run("delete", "clusterrole", "metrics-reader")


def test_a_tenant_explains_its_own_pods_only(
    operator: OperatorProcess, tenant: Tenant, stuck_pods: None
) -> None:
    own = https(operator.port, f"/debug/explain/{TENANT_NS}/stuck", token=tenant.token)
    assert own[0] == 200
    foreign = https(operator.port, f"/debug/explain/{OTHER_NS}/stuck", token=tenant.token)
    missing = https(operator.port, f"/debug/explain/{OTHER_NS}/no-such-pod", token=tenant.token)
    assert foreign[0] == missing[0] == 403  # the same answer whether the pod exists or not
    assert isinstance(foreign[1], dict)
    assert isinstance(missing[1], dict)
    assert foreign[1]["message"] == str(missing[1]["message"]).replace("no-such-pod", "stuck")
    assert https(operator.port, "/debug/pprof", token=tenant.token)[0] == 403
    assert https(operator.port, "/debug/pprof", token=operator.reader_token)[0] == 404


def test_client_certificates_only_from_the_client_ca(operator: OperatorProcess, pki: Pki) -> None:
    assert https(operator.port, "/metrics", client_cert=pki.trusted_client)[0] == 200
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        https(operator.port, "/metrics", client_cert=pki.unknown_client)
    assert operator.proc.poll() is None


def test_renewed_certificate_files_are_served_without_a_restart(operator: OperatorProcess, pki: Pki) -> None:
    assert served_common_name(operator.port).startswith("first@")
    write_serving_pair(pki, "second")
    wait_until(
        "the renewed certificate served",
        lambda: served_common_name(operator.port).startswith("second@"),
        timeout=30,
    )
    assert https(operator.port, "/metrics", token=operator.reader_token)[0] == 200


def test_tokens_never_reach_the_log(operator: OperatorProcess, tenant: Tenant) -> None:
    https(operator.port, "/metrics", token="bogus-token-that-must-not-be-logged")
    https(operator.port, "/metrics", token=tenant.token)
    log = operator.log_path.read_text()
    assert "bogus-token-that-must-not-be-logged" not in log
    assert tenant.token not in log
    assert operator.reader_token not in log


# ---- explain through the API server's pods/proxy ----------------------------------------------------


def test_explain_reaches_the_leader_through_pods_proxy(
    operator: OperatorProcess, admin: Kubectl, tenant: Tenant, egress: EgressProxy, stuck_pods: None
) -> None:
    pod_ip = admin.get("pod", OPERATOR_POD, OPERATOR_NS)["status"]["podIP"]
    result = explain(
        admin.kubeconfig,
        f"{TENANT_NS}/stuck",
        "--lease-namespace",
        OPERATOR_NS,
        "--no-recompute",
        "-o",
        "json",
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["note"] == f"answered by pod {OPERATOR_NS}/{OPERATOR_POD} (pods/proxy)"
    assert f"{pod_ip}:{operator.port}" in egress.targets  # the API server went to the pod's address
    # A tenant through the same route: its own pod explained, another namespace's refused.
    own = explain(tenant.kubeconfig, f"{TENANT_NS}/stuck", "--lease-namespace", OPERATOR_NS, "--no-recompute")
    assert own.returncode == 0, own.stderr
    assert "(pods/proxy)" in own.stdout
    foreign = explain(
        tenant.kubeconfig, f"{OTHER_NS}/stuck", "--lease-namespace", OPERATOR_NS, "--no-recompute"
    )
    assert foreign.returncode == 1
    assert "HTTP 403" in foreign.stderr
    assert "kubectl" not in foreign.stdout


# ---- a flood of unauthenticated requests does not slow scheduling ------------------------------------


def time_to_bind(admin: Kubectl, name: str, count: int) -> float:
    """Seconds from a profile's creation until the `count` pods already waiting for it are
    bound: the scheduling, not the pods' creation, is what is timed."""
    admin.apply(namespace(name))
    manifest = "".join(f"---\n{yaml.safe_dump(pod(f'p{i}', name, name))}" for i in range(count))
    admin.run("apply", "-f", "-", stdin=manifest)

    def all_bound() -> bool:
        items = json.loads(admin.run("get", "pods", "-n", name, "-o", "json").stdout)["items"]
        return len(items) == count and all(p["spec"].get("nodeName") for p in items)

    start = time.monotonic()
    admin.apply(profile(name, name))
    wait_until(f"{count} pods bound in {name}", all_bound, timeout=120, interval=0.2)
    return time.monotonic() - start


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_unauthenticated_flood_does_not_slow_scheduling(
    operator: OperatorProcess, admin: Kubectl, stuck_pods: None
) -> None:
    pods = 150
    before = cpu_seconds(operator.proc.pid)
    quiet = time_to_bind(admin, "flood-quiet", pods)
    quiet_cpu = cpu_seconds(operator.proc.pid) - before
    before = cpu_seconds(operator.proc.pid)
    flood = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "httpflood.py"), str(operator.port), "4"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        loud = time_to_bind(admin, "flood-loud", pods)
    finally:
        flood.terminate()
        out, _ = flood.communicate(timeout=30)
    loud_cpu = cpu_seconds(operator.proc.pid) - before
    answers = {int(code): count for code, count in json.loads(out).items()}
    requests = sum(answers.values())
    print(
        f"SERVING-FLOOD: {pods} pods bound in {quiet:.2f} s quiet ({pods / quiet:.0f} pods/s, operator "
        f"{quiet_cpu:.2f} CPU-s), {loud:.2f} s under {requests} unauthenticated requests "
        f"({pods / loud:.0f} pods/s, operator {loud_cpu:.2f} CPU-s: "
        f"{1e6 * max(0.0, loud_cpu - quiet_cpu) / max(requests, 1):.0f} us per refused request)"
    )
    assert set(answers) == {401}
    # The flood and the harness share two cores with the control plane; the bound is loose on
    # purpose: a flood that reached the scheduling loop would cost far more.
    assert loud < 3 * quiet + 5
