"""metrics.k8s.io in the dev cluster: the real metrics-server, built from its Go module,
registered through the API server's aggregation layer, scraping kwok's simulated usage.

How the parts meet, all on loopback:

- kwok simulates each pod's usage with its ClusterResourceUsage `usage-from-annotation` (a
  pod's `kwok.x-k8s.io/usage-memory` annotation, 1Mi without one; change the annotation and the
  usage follows) and serves it as the kubelet's `/metrics/resource` would, per node, at
  `/metrics/nodes/NODE/metrics/resource` (its Metric `metrics-resource`). Both come from kwok's
  own module (kustomize/metrics), put in kwok's configuration file before the cluster starts:
  the dev cluster's kwok reads `<workdir>/kwok/kwok.yaml` (`install_kwok_usage`).
- metrics-server scrapes each node at the address of the type it is told to prefer. A kwok
  node's InternalIP is not on this machine, so the nodes of such a cluster also carry an
  ExternalIP of 127.0.0.1 and the path annotation metrics-server honours
  (`metrics.k8s.io/resource-metrics-path`), and metrics-server prefers ExternalIP and uses
  kwok's port (`scraped_node`). kwok's server speaks plain HTTP, so metrics-server reads it
  with --deprecated-kubelet-completely-insecure (no TLS, no credentials sent).
- The API server proxies metrics.k8s.io to metrics-server (APIService v1beta1.metrics.k8s.io,
  an ExternalName Service of 127.0.0.1) once it has the front-proxy flags
  (`aggregation_flags`): a client certificate it presents, and the CA metrics-server checks it
  against. The API server checks metrics-server's serving certificate (made here for the
  Service's name) against the APIService's caBundle.

A cluster meant for this is started with those flags and the kwok file, then `MetricsServer`
is started against it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from policy_scheduler.devcluster.build import GoTarget
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.errors import DevClusterError
from policy_scheduler.devcluster.hostnet import LOOPBACK, free_ports
from policy_scheduler.devcluster.kubeapi import ApiError
from policy_scheduler.devcluster.kwokstages import kwok_module_dir
from policy_scheduler.devcluster.nodes import NodeShape, node_manifest
from policy_scheduler.devcluster.procs import Component, spawn, terminate, wait_until
from policy_scheduler.devcluster.tools import ensure_tool
from policy_scheduler.devcluster.versions import GOMOD_DIR, ControlPlaneVersions, control_plane
from policy_scheduler.kube.serving.certificates import (
    cert_pem,
    certificate,
    key_pem,
    new_key,
    self_signed_pem,
)

METRICS_SERVER_VERSION = "v0.8.0"
METRICS_PATH_ANNOTATION = "metrics.k8s.io/resource-metrics-path"
USAGE_MEMORY_ANNOTATION = "kwok.x-k8s.io/usage-memory"
SCRAPE_ADDRESS_TYPE = "ExternalIP"
FRONT_PROXY_CLIENT = "front-proxy-client"
APISERVICE = "v1beta1.metrics.k8s.io"
NAMESPACE = "kube-system"
SERVICE = "metrics-server"
# kwok's own objects for simulated usage, from its module (what `kwokctl --enable-metrics-server`
# configures).
KWOK_USAGE_FILES = (
    "kustomize/metrics/resource/metrics-resource.yaml",
    "kustomize/metrics/usage/usage-from-annotation.yaml",
)


def metrics_server_target() -> GoTarget:
    return GoTarget(
        GOMOD_DIR / "metrics-server",
        "sigs.k8s.io/metrics-server/cmd/metrics-server",
        "metrics-server",
        f"-s -w -X k8s.io/client-go/pkg/version.gitVersion={METRICS_SERVER_VERSION}",
    )


def ensure_metrics_server() -> Path:
    """The metrics-server binary, built from gomod/metrics-server first if not cached (minutes, once)."""
    return ensure_tool(metrics_server_target(), METRICS_SERVER_VERSION)


def install_kwok_usage(workdir: Path, versions: ControlPlaneVersions | None = None) -> Path:
    """kwok's simulated usage in the configuration file the cluster's kwok reads at start
    (`versions`: the cluster's; the default control plane's if not given)."""
    source = kwok_module_dir(versions or control_plane())
    target = workdir / "kwok" / "kwok.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    documents = [(source / name).read_text(encoding="utf-8").strip() for name in KWOK_USAGE_FILES]
    target.write_text("\n---\n".join(documents) + "\n", encoding="utf-8")
    return target


def aggregation_flags(workdir: Path) -> list[str]:
    """The API server's front-proxy flags (the aggregation layer), with a CA and client pair
    made for this cluster in <workdir>/front-proxy."""
    directory = workdir / "front-proxy"
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = new_key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-ca")])
    (directory / "ca.crt").write_bytes(cert_pem(certificate(ca_name, ca_key, ca=True)))
    client_key = new_key()
    client_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CLIENT)])
    client = certificate(
        client_name, client_key, issuer=(ca_name, ca_key), usage=(ExtendedKeyUsageOID.CLIENT_AUTH,)
    )
    (directory / "client.crt").write_bytes(cert_pem(client))
    (directory / "client.key").write_bytes(key_pem(client_key))
    (directory / "client.key").chmod(0o600)
    return [
        f"--requestheader-client-ca-file={directory / 'ca.crt'}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--proxy-client-cert-file={directory / 'client.crt'}",
        f"--proxy-client-key-file={directory / 'client.key'}",
    ]


def scraped_node(
    name: str,
    zone: str,
    shape: NodeShape,
    internal_ip: str,
    *,
    kubelet_port: int = 0,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A kwok node metrics-server can scrape: an ExternalIP of 127.0.0.1 beside its InternalIP,
    kwok's per-node metrics path, and (when given) the port its kubelet API answers on."""
    manifest = node_manifest(name, zone, shape, internal_ip=internal_ip)
    manifest["metadata"]["annotations"].update(
        {METRICS_PATH_ANNOTATION: f"/metrics/nodes/{name}/metrics/resource", **(annotations or {})}
    )
    manifest["status"]["addresses"].append({"type": SCRAPE_ADDRESS_TYPE, "address": LOOPBACK})
    if kubelet_port:
        manifest["status"]["daemonEndpoints"] = {"kubeletEndpoint": {"Port": kubelet_port}}
    return manifest


def kwok_port(cluster: DevCluster) -> int:
    kwok = next((c for c in cluster.components if c.name == "kwok"), None)
    flag = next((a for a in kwok.argv if a.startswith("--server-address=")), None) if kwok else None
    if flag is None:
        raise DevClusterError("the dev cluster's kwok serves no metrics (no --server-address)")
    return int(flag.rsplit(":", 1)[1])


class MetricsServer:
    """metrics-server for a dev cluster started with `aggregation_flags` and `install_kwok_usage`."""

    def __init__(self, cluster: DevCluster, *, resolution: str = "10s", timeout: float = 90.0) -> None:
        self.cluster = cluster
        self.resolution = resolution
        self.timeout = timeout
        self.port = free_ports(1)[0]
        self.component: Component | None = None
        self.directory = cluster.workdir / "metrics-server"
        self.certificate = b""

    def args(self, binary: Path) -> list[str]:
        kubeconfig = str(self.cluster.kubeconfig)
        return [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.directory / 'serving.crt'}",
            f"--tls-private-key-file={self.directory / 'serving.key'}",
            f"--metric-resolution={self.resolution}",
            "--kubelet-request-timeout=5s",
            f"--kubelet-preferred-address-types={SCRAPE_ADDRESS_TYPE}",
            f"--kubelet-port={kwok_port(self.cluster)}",
            "--deprecated-kubelet-completely-insecure",
        ]

    def start(self) -> None:
        self.launch()
        self.wait_serving()

    def launch(self) -> None:
        """Start the process; `wait_serving` registers it and waits until it serves."""
        binary = ensure_metrics_server()
        self._serving_certificate()
        self.component = spawn(
            "metrics-server", self.args(binary), self.cluster.logs_dir / "metrics-server.log"
        )

    def wait_serving(self) -> None:
        """Registered once it listens: the API server's availability checks back off while an
        APIService fails them, so one registered early turns Available seconds late."""
        assert self.component is not None, "launch() first"
        wait_until(self.component, self._listening, "listening", self.timeout)
        self.register()
        wait_until(self.component, self._serving, "serving metrics.k8s.io", self.timeout)

    def _listening(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, self.port), timeout=1.0):
            return True
        return False

    def _serving_certificate(self) -> None:
        """Made once: a restarted metrics-server keeps the certificate the APIService trusts."""
        if self.certificate:
            return
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        self.certificate, key = self_signed_pem(f"{SERVICE}.{NAMESPACE}.svc", [LOOPBACK])
        (self.directory / "serving.crt").write_bytes(self.certificate)
        (self.directory / "serving.key").write_bytes(key)
        (self.directory / "serving.key").chmod(0o600)

    def register(self) -> None:
        api = self.cluster.api()
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": NAMESPACE},
            "spec": {"type": "ExternalName", "externalName": LOOPBACK, "ports": [{"port": self.port}]},
        }
        apiservice = {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {
                "service": {"name": SERVICE, "namespace": NAMESPACE, "port": self.port},
                "group": "metrics.k8s.io",
                "version": "v1beta1",
                "caBundle": base64.b64encode(self.certificate).decode(),
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        }
        for path, body in (
            (f"/api/v1/namespaces/{NAMESPACE}/services", service),
            ("/apis/apiregistration.k8s.io/v1/apiservices", apiservice),
        ):
            try:
                api.post(path, body)
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def _serving(self) -> bool:
        try:
            status = self.cluster.api().get(f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE}")
            available = any(
                c.get("type") == "Available" and c.get("status") == "True"
                for c in (status.get("status") or {}).get("conditions") or []
            )
            return available and bool(self.cluster.api().get("/apis/metrics.k8s.io/v1beta1/nodes"))
        except (ApiError, OSError, json.JSONDecodeError):
            return False

    def wait_nodes(self, names: Sequence[str], timeout: float = 90.0) -> None:
        """Until metrics-server has a sample of each of these nodes."""

        def sampled() -> bool:
            items = self.cluster.api().get("/apis/metrics.k8s.io/v1beta1/nodes").get("items") or []
            return set(names) <= {i["metadata"]["name"] for i in items}

        wait_until(self.component, sampled, f"sampling {', '.join(names)}", timeout)

    def stop(self) -> None:
        if self.component is not None:
            terminate(self.component)
