"""Pinned versions of the control plane components built from Go modules."""

from __future__ import annotations

import os
from pathlib import Path

KUBERNETES_VERSION = "v1.35.4"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"

GOMOD_DIR = Path(__file__).parent / "gomod"


def cache_root() -> Path:
    """Where built binaries live: outside the repository, shared by every clone."""
    base = os.environ.get("POLICY_SCHEDULER_CACHE") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    if not os.environ.get("POLICY_SCHEDULER_CACHE"):
        root = root / "policy-scheduler"
    return root


def bin_dir() -> Path:
    return cache_root() / "bin" / f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"
