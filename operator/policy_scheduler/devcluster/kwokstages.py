"""The kwok Stage files that make fake nodes and pods behave like real ones.

Standalone kwok has no built-in stages; kwokctl passes the ones shipped in the kwok
module under kustomize/stage. The same files are taken from the Go module cache (the
build downloaded them) and copied into the cluster's work directory, so a running
cluster never depends on the cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from policy_scheduler.devcluster.versions import ControlPlaneVersions, control_plane

KWOK_MODULE = "sigs.k8s.io/kwok"

# The set kwokctl calls "fast" (kustomize/stage/fast): no artificial delays.
STAGE_FILES: tuple[str, ...] = (
    "node/fast/node-initialize.yaml",  # new node -> Ready, keeps the capacity we set
    # kwok renews node Leases (--node-lease-duration-seconds), so the node status only needs a
    # slow refresh; this causes far fewer Node update events than the plain heartbeat stage.
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",  # bound pod -> Running and Ready
    "pod/fast/pod-complete.yaml",  # Running pod owned by a Job -> Succeeded
    "pod/fast/pod-delete.yaml",  # terminating pod -> removed
)


class StagesError(RuntimeError):
    pass


def _go() -> str | None:
    return shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)


def _gomodcache(go: str | None) -> Path:
    if go is not None:
        result = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
        if result.returncode == 0 and result.stdout.strip():
            return Path(result.stdout.strip())
    return Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod"


def go_module_cache() -> Path:
    """Where Go keeps downloaded modules (the control plane's sources among them)."""
    return _gomodcache(_go())


def kwok_module_dir(versions: ControlPlaneVersions) -> Path:
    """The kwok source tree in the Go module cache, downloading it if needed."""
    go = _go()
    module_dir = _gomodcache(go) / f"{KWOK_MODULE}@{versions.kwok}"
    if (module_dir / "kustomize" / "stage").is_dir():
        return module_dir
    if go is None:
        raise StagesError(
            f"kwok stage files not found in {module_dir} and `go` is not installed to fetch them"
        )
    result = subprocess.run(
        [go, "mod", "download", KWOK_MODULE],
        cwd=versions.gomod("kwok"),
        env=dict(os.environ, GOFLAGS="-mod=mod"),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not module_dir.is_dir():
        raise StagesError(f"`go mod download {KWOK_MODULE}` failed: {result.stderr.strip()}")
    return module_dir


def install_stages(destination: Path, versions: ControlPlaneVersions | None = None) -> list[Path]:
    """Copy the stage files of `versions`' kwok (default: the selected version's) into
    `destination`/<kwok version> (once) and return their paths in order."""
    versions = versions or control_plane()
    destination = destination / versions.kwok
    targets = [destination / Path(name).name for name in STAGE_FILES]
    if all(target.is_file() for target in targets):
        return targets
    source = kwok_module_dir(versions) / "kustomize" / "stage"
    destination.mkdir(parents=True, exist_ok=True)
    for name, target in zip(STAGE_FILES, targets, strict=True):
        shutil.copyfile(source / name, target)
    return targets
