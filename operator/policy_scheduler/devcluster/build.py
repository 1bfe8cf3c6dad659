"""Build the local control plane (etcd, Kubernetes, kwok) from published Go modules.

Idempotent: each binary is built once into the cache directory; a rerun with everything
present returns at once. Builds are resumable because Go's own build cache keeps every
compiled package, so an interrupted build picks up where it stopped.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from policy_scheduler.devcluster.versions import ControlPlaneVersions, bin_dir, control_plane

log = logging.getLogger(__name__)


class BuildError(RuntimeError):
    """The control plane could not be built; the message says what to do."""


@dataclass(frozen=True)
class GoTarget:
    module_dir: Path
    package: str
    binary: str
    ldflags: str


def _k8s_ldflags(kubernetes_version: str) -> str:
    major, minor = kubernetes_version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": kubernetes_version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "0000000000000000000000000000000000000000",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    # Without these /version reports v0.0.0-master and version skew checks misfire.
    flags = [
        f"-X k8s.io/{pkg}/version.{key}={value}"
        for pkg in ("component-base", "client-go/pkg")
        for key, value in values.items()
    ]
    return " ".join(["-s", "-w", *flags])


KUBERNETES_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
BINARIES = ("etcd", "kwok", *KUBERNETES_BINARIES)


def targets(versions: ControlPlaneVersions) -> tuple[GoTarget, ...]:
    """What to build for `versions`, each from its own wrapper module under gomod/."""
    return (
        GoTarget(versions.gomod("etcd"), "go.etcd.io/etcd/server/v3", "etcd", "-s -w"),
        GoTarget(
            versions.gomod("kwok"),
            "sigs.k8s.io/kwok/cmd/kwok",
            "kwok",
            f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={versions.kwok}",
        ),
        *(
            GoTarget(
                versions.gomod("kubernetes"),
                f"k8s.io/kubernetes/cmd/{name}",
                name,
                _k8s_ldflags(versions.kubernetes),
            )
            for name in KUBERNETES_BINARIES
        ),
    )


def missing_binaries(directory: Path | None = None) -> list[str]:
    """The binaries not yet built in `directory` (default: the selected version's folder)."""
    directory = directory or bin_dir()
    return [name for name in BINARIES if not (directory / name).is_file()]


def _find_go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
    if go is None:
        raise BuildError(
            "the Go toolchain (>= 1.25) is required to build the local control plane but `go` "
            "is not on PATH; install it (e.g. `apt-get install golang-go` or from go.dev) and rerun"
        )
    return go


def build_all(
    versions: ControlPlaneVersions | None = None, *, directory: Path | None = None, out: TextIO | None = None
) -> Path:
    """Build every missing binary of `versions` (default: the selected version, see
    `versions.control_plane`); return the directory that holds them all."""
    versions = versions or control_plane()
    directory = directory or bin_dir(versions)
    stream = out or sys.stderr
    todo = [t for t in targets(versions) if not (directory / t.binary).is_file()]
    if not todo:
        return directory
    go = _find_go()
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
    for index, target in enumerate(todo, 1):
        started = time.monotonic()
        print(
            f"[build {index}/{len(todo)}] {target.binary} from {target.package} "
            f"(first build takes minutes; cached afterwards in {directory})",
            file=stream,
            flush=True,
        )
        tmp = directory / f".{target.binary}.partial"
        cmd = [
            go,
            "build",
            "-trimpath",
            "-tags=selinux,notest",
            "-ldflags",
            target.ldflags,
            "-o",
            str(tmp),
            target.package,
        ]
        result = subprocess.run(cmd, cwd=target.module_dir, env=env, check=False)
        if result.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise BuildError(
                f"building {target.binary} failed (exit {result.returncode}); command: "
                f"(cd {target.module_dir} && {' '.join(cmd)})"
            )
        tmp.replace(directory / target.binary)  # atomic: a half-written binary never counts
        print(
            f"[build {index}/{len(todo)}] {target.binary} done in {time.monotonic() - started:.0f}s",
            file=stream,
            flush=True,
        )
    return directory
