"""`dev-cluster`'s commands (its arguments are in `arguments`)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from policy_scheduler.devcluster.arguments import add_parser, default_workdir
from policy_scheduler.devcluster.build import BuildError, build_all, missing_binaries
from policy_scheduler.devcluster.cluster import DevCluster
from policy_scheduler.devcluster.errors import DevClusterError
from policy_scheduler.devcluster.flags import workload_api_flags
from policy_scheduler.devcluster.tools import HELM_VERSION, ensure_helm
from policy_scheduler.devcluster.versions import ControlPlaneVersions, UnsupportedVersionError, control_plane

PROG = "policy-scheduler dev-cluster"


def _raise_keyboard_interrupt(signum: int, _frame: FrameType | None) -> None:
    # SIGTERM gets the same cleanup path as Ctrl-C: DevCluster.start() stops what it started.
    raise KeyboardInterrupt(f"signal {signum}")


def _handle_termination_signals() -> None:
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def _selected_versions(args: argparse.Namespace) -> ControlPlaneVersions | None:
    """The versions `--kubernetes-version` (or the environment) selects; None after printing
    why the request is not supported."""
    try:
        return control_plane(args.kubernetes_version)
    except UnsupportedVersionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def cmd_build(args: argparse.Namespace) -> int:
    versions = _selected_versions(args)
    if versions is None:
        return 2
    try:
        directory = build_all(versions, out=sys.stderr)
        # The install tests and the chart's render need helm: built with the rest, once.
        helm = ensure_helm(out=sys.stderr)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{versions.summary()} ready in {directory}")
    print(f"helm {HELM_VERSION} ready in {helm.parent}")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    workdir: Path = args.workdir
    versions = _selected_versions(args)
    if versions is None:
        return 2
    try:
        running = DevCluster.from_state(workdir)
        if running is not None and running.status().running:
            if running.versions != versions:
                print(
                    f"error: a Kubernetes {running.versions.kubernetes} dev cluster is already running in "
                    f"{workdir}; stop it with `{PROG} down --workdir {workdir}` first "
                    f"to start {versions.kubernetes}",
                    file=sys.stderr,
                )
                return 1
            print(f"dev cluster already running in {workdir} ({running.versions.summary()})")
            _print_hints(running, detached=True)
            return 0
        extra = workload_api_flags(versions.kubernetes) if args.workload_api else []
        cluster = DevCluster(
            workdir, args.nodes, die_with_parent=args.foreground, versions=versions, apiserver_flags=extra
        )
        if missing_binaries(cluster.binaries):
            build_all(versions, out=sys.stderr)
        print(
            f"starting dev cluster ({versions.summary()}, {args.nodes} nodes) in {workdir} ...",
            file=sys.stderr,
        )
        _handle_termination_signals()
        cluster.start()
    except (BuildError, DevClusterError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; stopped everything that had started", file=sys.stderr)
        return 130
    if args.foreground:
        return _run_foreground(cluster)
    cluster.detach()  # before any output: a closed stdout must not take the cluster down
    print(f"dev cluster up in {cluster.startup_seconds:.1f}s")
    _print_hints(cluster, detached=True)
    return 0


def _print_hints(cluster: DevCluster, *, detached: bool) -> None:
    print(f"  kubeconfig: {cluster.kubeconfig}")
    print(f"  export KUBECONFIG={cluster.kubeconfig}; {cluster.kubectl} get nodes")
    print(f"  logs:       {cluster.logs_dir}")
    if detached:
        workdir = f" --workdir {cluster.workdir}" if cluster.workdir != default_workdir() else ""
        print(f"  stop with:  {PROG} down{workdir}")


def _run_foreground(cluster: DevCluster) -> int:
    try:
        print(f"dev cluster up in {cluster.startup_seconds:.1f}s; Ctrl-C stops it")
        _print_hints(cluster, detached=False)
        while all(c.alive() for c in cluster.components):
            time.sleep(1.0)
        print(cluster.status().describe(), file=sys.stderr)
        print("a component died; stopping the cluster", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


def _recorded(workdir: Path, absent: str, absent_code: int) -> DevCluster | int:
    """The cluster recorded in `workdir`, or the exit code after saying why there is none."""
    try:
        cluster = DevCluster.from_state(workdir)
    except DevClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if cluster is None:
        print(absent)
        return absent_code
    return cluster


def cmd_down(args: argparse.Namespace) -> int:
    cluster = _recorded(args.workdir, f"no dev cluster recorded in {args.workdir}", 0)
    if isinstance(cluster, int):
        return cluster
    cluster.stop()
    print("dev cluster stopped")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cluster = _recorded(args.workdir, f"dev cluster: not running (no state in {args.workdir})", 1)
    if isinstance(cluster, int):
        return cluster
    status = cluster.status()
    print(status.describe())
    return 0 if status.running else 1


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point: `python -m policy_scheduler.devcluster up`."""
    parser = argparse.ArgumentParser(prog="policy-scheduler")
    subparsers = parser.add_subparsers(required=True)
    add_parser(subparsers)
    args = parser.parse_args(["dev-cluster", *(sys.argv[1:] if argv is None else argv)])
    code: int = args.func(args)
    return code
