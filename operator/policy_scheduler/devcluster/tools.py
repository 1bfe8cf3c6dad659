"""Tools some tests need besides the control plane, built from their Go modules: helm (the
install tests) and metrics-server (node pressure, devcluster/metrics_server.py).

Cached outside the repository like the control plane (one directory per version), built once;
`kubectl kustomize` comes with the control plane's kubectl.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from policy_scheduler.devcluster.build import BuildError, GoTarget
from policy_scheduler.devcluster.versions import GOMOD_DIR, cache_root

HELM_VERSION = "v3.22.0"


def _helm_target() -> GoTarget:
    # As helm's Makefile: the Kubernetes version helm reports as `.Capabilities.KubeVersion` and
    # lints against is the minor of the client-go it is built with.
    go_mod = (GOMOD_DIR / "helm" / "go.mod").read_text(encoding="utf-8")
    match = re.search(r"^\s*k8s\.io/client-go v0\.(\d+)\.", go_mod, re.MULTILINE)
    if match is None:
        raise BuildError(f"{GOMOD_DIR / 'helm' / 'go.mod'} requires no k8s.io/client-go")
    flags = [
        "-s -w",
        f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
        "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
        *(
            f"-X helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
            for pkg in ("lint/rules", "chartutil")
            for part, value in (("Major", "1"), ("Minor", match.group(1)))
        ),
    ]
    return GoTarget(GOMOD_DIR / "helm", "helm.sh/helm/v3/cmd/helm", "helm", " ".join(flags))


def tool_path(binary: str, version: str) -> Path:
    return cache_root() / "bin" / f"{binary}-{version}" / binary


def helm_path() -> Path:
    return tool_path("helm", HELM_VERSION)


def find_go() -> str:
    """`go` from PATH, the usual install location, or where scripts/ensure-go.sh puts it."""
    for candidate in (shutil.which("go"), "/usr/local/go/bin/go", str(cache_root() / "go" / "bin" / "go")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise BuildError(
        "the Go toolchain (>= 1.25) is required to build this tool but `go` is not on PATH; "
        "run scripts/ensure-go.sh (it installs one) or install Go, and rerun"
    )


def ensure_tool(tool: GoTarget, version: str, *, out: TextIO | None = None) -> Path:
    """The tool's binary, built from its pinned module (gomod/<module_dir>) first if it is not
    cached yet (minutes, once)."""
    target = tool_path(tool.binary, version)
    if target.is_file():
        return target
    stream = out or sys.stderr
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{tool.binary}.partial")
    cmd = [find_go(), "build", "-trimpath", "-ldflags", tool.ldflags, "-o", str(partial), tool.package]
    module_dir = GOMOD_DIR / tool.module_dir
    print(
        f"[build] {tool.binary} {version} from {tool.package} into {target.parent}", file=stream, flush=True
    )
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
    result = subprocess.run(cmd, cwd=module_dir, env=env, check=False)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BuildError(
            f"building {tool.binary} failed (exit {result.returncode}); command: "
            f"(cd {module_dir} && {' '.join(cmd)})"
        )
    partial.replace(target)  # atomic: a half-written binary never counts
    return target


def ensure_helm(*, out: TextIO | None = None) -> Path:
    """The helm binary, built first if it is not cached yet (minutes, once)."""
    return ensure_tool(_helm_target(), HELM_VERSION, out=out)


def main() -> int:
    try:
        print(ensure_helm())
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
