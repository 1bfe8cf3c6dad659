"""Command lines of the dev cluster's components: etcd, kube-apiserver, kube-controller-manager, kwok."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from policy_scheduler.devcluster.hostnet import LOOPBACK, free_ports

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


# The scheduling.k8s.io version that serves the Workload API, by Kubernetes minor release.
WORKLOAD_API_VERSIONS: Mapping[str, str] = MappingProxyType(
    {"1.35": "v1alpha1", "1.36": "v1alpha2", "1.37": "v1beta1"}
)


def workload_api_flags(kubernetes: str) -> list[str]:
    """kube-apiserver flags that serve the Workload API (scheduling.k8s.io Workloads/PodGroups)
    and keep pods' spec.schedulingGroup (or v1.35's workloadRef): GenericWorkload on, the
    release's version enabled. ValueError for a release without it."""
    minor = ".".join(kubernetes.lstrip("v").split(".")[:2])
    version = WORKLOAD_API_VERSIONS.get(minor)
    if version is None:
        raise ValueError(f"Kubernetes {kubernetes} has no Workload API this dev cluster knows")
    gates = "GenericWorkload=true" + (",GangScheduling=true" if minor in ("1.35", "1.36") else "")
    return [f"--feature-gates={gates}", f"--runtime-config=scheduling.k8s.io/{version}=true"]


def with_overrides(args: Sequence[str], extra: Sequence[str]) -> list[str]:
    """`args` then `extra`, where a flag in `extra` replaces the same flag in `args` (list flags
    such as --authorization-mode would otherwise be given twice, which the API server refuses)."""
    names = {flag.split("=", 1)[0] for flag in extra if flag.startswith("--")}
    return [*(arg for arg in args if arg.split("=", 1)[0] not in names), *extra]


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
