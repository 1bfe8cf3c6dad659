"""`dev-cluster` subcommand: build, start, inspect and stop the local control plane.

`up` leaves the components running after it returns (their PIDs are in
<workdir>/state.json); `down` stops them. `up --foreground` instead keeps the cluster
tied to the terminal until Ctrl-C. `build` and `up` take `--kubernetes-version` (or
POLICY_SCHEDULER_K8S_VERSION); each version's binaries are cached in their own folder.
"""

# The arguments only: the commands (and the build and cluster code) are imported when they run.

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from policy_scheduler.app.commands import Deferred
from policy_scheduler.devcluster.versions import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSION_ENV,
    cache_root,
    supported_kubernetes_versions,
)

_CLI = "policy_scheduler.devcluster.cli"


def default_workdir() -> Path:
    return cache_root() / "dev-cluster"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "dev-cluster",
        help="run a local Kubernetes control plane (etcd, kube-apiserver, controller-manager, kwok)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=lambda _args: _usage(parser))
    actions = parser.add_subparsers(title="actions", metavar="{up,down,status,build}")

    up = actions.add_parser("up", help="build if needed, start the cluster and leave it running")
    up.add_argument("--nodes", type=int, default=10, help="fake (kwok) nodes to create (default 10)")
    up.add_argument("--foreground", action="store_true", help="stay attached; Ctrl-C stops the cluster")
    up.add_argument(
        "--workload-api",
        action="store_true",
        help="serve the Workload API (scheduling.k8s.io PodGroups; GenericWorkload on in the API server)",
    )
    up.set_defaults(func=Deferred(_CLI, "cmd_up"))

    down = actions.add_parser("down", help="stop the cluster started by `up`")
    down.set_defaults(func=Deferred(_CLI, "cmd_down"))

    status = actions.add_parser("status", help="show the cluster's components; exit 1 if not running")
    status.set_defaults(func=Deferred(_CLI, "cmd_status"))

    build = actions.add_parser("build", help="build etcd, Kubernetes, kwok and helm from source (cached)")
    build.set_defaults(func=Deferred(_CLI, "cmd_build"))

    for action in (up, build):
        action.add_argument(
            "--kubernetes-version",
            metavar="VERSION",
            help=(
                f"the control plane's Kubernetes version: {', '.join(supported_kubernetes_versions())} "
                f"(default: ${KUBERNETES_VERSION_ENV}, else {DEFAULT_KUBERNETES_VERSION})"
            ),
        )
    for action in (up, down, status):
        action.add_argument(
            "--workdir", type=Path, default=default_workdir(), help="cluster state, logs and kubeconfig"
        )
    return parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2
