"""The control plane versions the dev cluster can build and run.

Each supported Kubernetes release comes with the etcd and kwok it is built with. The version
in use is, first to last: an explicit `--kubernetes-version`, the environment variable
POLICY_SCHEDULER_K8S_VERSION (read by the e2e fixtures and the parity harness), the default.
Every version's binaries live in their own cache folder, so switching never rebuilds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION_ENV = "POLICY_SCHEDULER_K8S_VERSION"
DEFAULT_KUBERNETES_VERSION = "v1.37.2"

GOMOD_DIR = Path(__file__).parent / "gomod"


@dataclass(frozen=True)
class ControlPlaneVersions:
    """One Kubernetes release and the etcd and kwok versions built with it."""

    kubernetes: str
    etcd: str
    kwok: str

    @property
    def staging(self) -> str:
        """The tag of the staging modules (k8s.io/api, client-go...): v1.X.Y goes with v0.X.Y."""
        return "v0" + self.kubernetes[2:]

    @property
    def minor(self) -> int:
        return int(self.kubernetes.split(".")[1])

    def gomod(self, component: str) -> Path:
        """The wrapper module (go.mod, go.sum) that builds `component` (kubernetes, etcd, kwok)."""
        version = {"kubernetes": self.kubernetes, "etcd": self.etcd, "kwok": self.kwok}[component]
        return GOMOD_DIR / component / version

    def summary(self) -> str:
        return f"kubernetes {self.kubernetes}, etcd {self.etcd}, kwok {self.kwok}"

    @property
    def bin_dir_name(self) -> str:
        return f"k8s-{self.kubernetes}_etcd-{self.etcd}_kwok-{self.kwok}"


# Newest first. etcd: the minor that release's kubeadm and hack/lib/etcd.sh name (3.6 for
# v1.35 and v1.36, 3.7 for v1.37), at its newest patch. kwok: its newest release serves all.
SUPPORTED: tuple[ControlPlaneVersions, ...] = (
    ControlPlaneVersions("v1.37.2", "v3.7.3", "v0.8.0"),
    ControlPlaneVersions("v1.36.3", "v3.6.16", "v0.8.0"),
    ControlPlaneVersions("v1.35.4", "v3.6.16", "v0.8.0"),
)


class UnsupportedVersionError(ValueError):
    """A Kubernetes version the dev cluster cannot build; the message lists those it can."""


def supported_kubernetes_versions() -> list[str]:
    return [v.kubernetes for v in SUPPORTED]


def control_plane(kubernetes_version: str | None = None) -> ControlPlaneVersions:
    """The versions for `kubernetes_version`, else for $POLICY_SCHEDULER_K8S_VERSION, else the default."""
    source = ""
    requested = kubernetes_version
    if not requested:
        requested = os.environ.get(KUBERNETES_VERSION_ENV, "").strip()
        source = f" (from {KUBERNETES_VERSION_ENV})" if requested else ""
    requested = requested or DEFAULT_KUBERNETES_VERSION
    wanted = requested if requested.startswith("v") else f"v{requested}"
    for versions in SUPPORTED:
        if versions.kubernetes == wanted:
            return versions
    raise UnsupportedVersionError(
        f"Kubernetes {requested}{source} is not supported; "
        f"supported versions: {', '.join(supported_kubernetes_versions())}"
    )


def cache_root() -> Path:
    """Where built binaries live: outside the repository, shared by every clone."""
    base = os.environ.get("POLICY_SCHEDULER_CACHE") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    if not os.environ.get("POLICY_SCHEDULER_CACHE"):
        root = root / "policy-scheduler"
    return root


def bin_dir(versions: ControlPlaneVersions | None = None) -> Path:
    """The binaries of `versions` (default: the selected version, see `control_plane`)."""
    return cache_root() / "bin" / (versions or control_plane()).bin_dir_name
