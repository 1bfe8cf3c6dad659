"""`policy-scheduler` command line: run, simulate, validate, explain, pressure, import-config, crds,
dev tools."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from policy_scheduler.app.kubernetes_version import (
    FROM_CLUSTER_DEFAULT,
    NEWEST_DEFAULT,
    add_kubernetes_version_argument,
)
from policy_scheduler.observability.logs import configure as configure_logging

if TYPE_CHECKING:
    from policy_scheduler.scheduler.versioning.features import Features


def _run(args: argparse.Namespace) -> int:
    from policy_scheduler.service.config import OperatorConfig
    from policy_scheduler.service.startup import Startup

    try:
        config = OperatorConfig.from_args(args)
    except ValueError as exc:
        print(f"policy-scheduler run: error: {exc}", file=sys.stderr)
        return 2
    return Startup(config).run()


def _simulate(args: argparse.Namespace) -> int:
    from policy_scheduler.simulate.command import simulate_command

    return simulate_command(args)


def _validate(args: argparse.Namespace) -> int:
    from policy_scheduler.validate.command import validate_command

    return validate_command(args)


def _features(args: argparse.Namespace) -> Features:
    from policy_scheduler.scheduler.versioning.semantics import command_semantics

    return command_semantics(args.kubernetes_version).features


def _import_config(args: argparse.Namespace) -> int:
    import yaml

    from policy_scheduler.policy.importconfig import import_config

    try:
        with open(args.file, encoding="utf-8") as handle:
            manifests = import_config(handle.read(), features=_features(args))
    except (OSError, ValueError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(yaml.safe_dump_all(manifests, sort_keys=False))
    return 0


def _crds(args: argparse.Namespace) -> int:
    from policy_scheduler.policy.crdgen import render_crds

    for name, text in sorted(render_crds().items()):
        if args.write:
            from pathlib import Path

            Path(args.write, name).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text if text.startswith("---") else "---\n" + text)
    return 0


# Developer-only modules: in a source checkout, not in the runtime image (see the Dockerfile).
DEV_MODULES = ("policy_scheduler.devcluster",)


def dev_tools_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in DEV_MODULES)


def _dev_only(command: str) -> int:
    print(
        f"error: `{command}` is a developer command and is not part of this installation "
        "(the runtime image ships without it); run it from a source checkout (pip install -e .)",
        file=sys.stderr,
    )
    return 2


def _demo(args: argparse.Namespace) -> int:
    from policy_scheduler.devcluster.demo import run_demo

    return run_demo(args)


def _duration(text: str) -> float:
    """A duration flag as kube-scheduler takes it ("15s", "1m30s", "500ms"), in seconds."""
    from policy_scheduler.scheduler.framework.durations import parse_go_duration

    try:
        return parse_go_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="policy-scheduler", description=__doc__)
    parser.add_argument(
        "--log-level",
        help="DEBUG, INFO, WARNING, ERROR (default: INFO for `run`, WARNING for the other commands)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more: -v info, -vv debug (commands other than `run` log warnings only)",
    )
    parser.add_argument("--log-format", default="text", choices=["text", "json"])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the operator and its scheduler against a cluster")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or in-cluster)")
    run.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    run.add_argument("--lease-namespace", default="policy-scheduler")
    run.add_argument("--lease-name", default="policy-scheduler")
    run.add_argument(
        "--identity",
        help="leader election identity, also in events' reportingInstance (default: hostname_uuid)",
    )
    run.add_argument(
        "--leader-elect-lease-duration",
        type=_duration,
        default=15.0,
        metavar="DURATION",
        help="a standby takes the lease once the leader has not renewed it for this long "
        "(whole seconds; default 15s)",
    )
    run.add_argument(
        "--leader-elect-renew-deadline",
        type=_duration,
        default=10.0,
        metavar="DURATION",
        help="the leader acts until this long after its last successful renewal was sent, by its own "
        "clock, and stops leading if it cannot renew by then (default 10s)",
    )
    run.add_argument(
        "--leader-elect-retry-period",
        type=_duration,
        default=2.0,
        metavar="DURATION",
        help="between attempts to acquire or renew the lease (default 2s)",
    )
    run.add_argument(
        "--api-discovery-interval",
        type=_duration,
        default=60.0,
        metavar="DURATION",
        help="how often the served APIs are discovered again, so that one served later (a CRD "
        "installed, an upgraded API server) is used without a restart (default 1m)",
    )
    run.add_argument("--install-crds", action="store_true", help="apply crds/ before starting")
    run.add_argument(
        "--profile-selector",
        default="",
        help="serve only SchedulingProfiles whose labels match (kubectl -l syntax, e.g. 'shard=a,!canary')",
    )
    run.add_argument(
        "--event-qps",
        type=float,
        help="event writes per second, more wait their turn (default: kube-scheduler's clientConnection.qps)",
    )
    run.add_argument(
        "--event-burst",
        type=int,
        help="event writes at once (default: kube-scheduler's clientConnection.burst)",
    )
    run.add_argument(
        "--catch-up-list-below",
        type=_count,
        metavar="OBJECTS",
        help="a new leader brings a quiet collection with fewer cached objects than this up to date "
        "by listing it, a bigger one by a watch bookmark (about 1s whatever its size; spares the API "
        "server the list); 0: always by bookmark (default 2000)",
    )
    run.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="NAME=BOOL,...",
        help="kube-scheduler's feature gates (e.g. NodeDeclaredFeatures=false), on top of the Kubernetes "
        "release's defaults; repeatable. SchedulingProfiles can set more in spec.featureGates",
    )
    run.add_argument(
        "--emulated-version",
        metavar="[kube=]MAJOR.MINOR",
        help="decide as kube-scheduler of this release (e.g. kube=1.36), not of the API server's",
    )
    from policy_scheduler.kube.serving.arguments import add_serving_arguments

    add_serving_arguments(run)
    from policy_scheduler.kube.pressure.arguments import add_pressure_arguments

    add_pressure_arguments(run)
    run.set_defaults(func=_run)

    sim = sub.add_parser("simulate", help="schedule the pending pods of YAML files in memory")
    sim.add_argument("files", nargs="*", help="YAML files (multi-document or kind: List)")
    sim.add_argument("-o", "--output", choices=["table", "json"], default="table")
    sim.add_argument("--seed", type=int, default=0, help="seed for tie-breaks")
    sim.add_argument(
        "--progress", action="store_true", help="progress on stderr (default: large runs on a TTY)"
    )
    sim.add_argument(
        "--from-cluster", action="store_true", help="what-if on a read-only snapshot of the live cluster"
    )
    sim.add_argument("--kubeconfig", help="with --from-cluster: kubeconfig (default: $KUBECONFIG)")
    sim.add_argument(
        "--namespace", action="append", metavar="NS", help="with --from-cluster: pending pods of NS only"
    )
    sim.add_argument(
        "--apply",
        action="append",
        metavar="FILE",
        help="with --from-cluster: policy objects to try (validated)",
    )
    sim.add_argument("--diff", action="store_true", help="with --from-cluster: only pods --apply changes")
    sim.add_argument(
        "--profile-selector", default="", help="with --from-cluster: the operator's --profile-selector"
    )
    add_kubernetes_version_argument(sim, FROM_CLUSTER_DEFAULT)
    sim.set_defaults(func=_simulate)

    val = sub.add_parser("validate", help="check policy manifests offline, as the server and operator do")
    val.add_argument("paths", nargs="+", metavar="FILE|DIR|-", help="YAML/JSON files, dirs, - (stdin)")
    val.add_argument("-o", "--output", choices=["text", "json"], default="text")
    val.add_argument(
        "--validate",
        choices=["strict", "warn", "ignore"],
        default="strict",
        help="unknown fields, as kubectl apply --validate: refused, or dropped with(out) a warning",
    )
    add_kubernetes_version_argument(val, NEWEST_DEFAULT)
    val.set_defaults(func=_validate)

    from policy_scheduler.explain.arguments import add_parser as add_explain

    add_explain(sub)

    from policy_scheduler.pressure.arguments import add_parser as add_pressure

    add_pressure(sub)

    imp = sub.add_parser("import-config", help="convert a KubeSchedulerConfiguration into SchedulingProfiles")
    imp.add_argument("file")
    add_kubernetes_version_argument(imp, NEWEST_DEFAULT)
    imp.set_defaults(func=_import_config)

    crds = sub.add_parser("crds", help="print (or --write DIR) the CustomResourceDefinitions")
    crds.add_argument("--write", metavar="DIR")
    crds.set_defaults(func=_crds)

    if not dev_tools_available():
        for command in ("demo", "dev-cluster"):
            stub = sub.add_parser(command, help="(developer checkout only)", add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
            stub.set_defaults(func=lambda _args, command=command: _dev_only(command))
        return parser

    demo = sub.add_parser("demo", help="dev cluster + operator + example workload, prints placements")
    demo.add_argument("--nodes", type=int, default=6)
    demo.add_argument("--keep", action="store_true", help="leave the cluster and operator running")
    demo.set_defaults(func=_demo)

    from policy_scheduler.devcluster.arguments import add_parser as add_devcluster

    add_devcluster(sub)
    return parser


def log_level(args: argparse.Namespace) -> str:
    """The operator logs its work at info; a command's output is for its user, so its own logs
    stay at warning unless asked for (--log-level, -v)."""
    if args.log_level:
        return str(args.log_level)
    if args.verbose:
        return "DEBUG" if args.verbose > 1 else "INFO"
    return "INFO" if args.command == "run" else "WARNING"


def main(argv: Sequence[str] | None = None) -> int:
    # Before numpy is imported: its OpenBLAS would start a thread per CPU, which doubles the CPU
    # cost of that import at every start. Nothing here multiplies float matrices, so one thread
    # loses nothing. A value the user set stays.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser().parse_args(argv)
    configure_logging(log_level(args), str(args.log_format))
    result: int = args.func(args)
    return result


def kubectl_main() -> int:
    """`kubectl policy-scheduler ...` (krew naming: the binary is kubectl-policy_scheduler)."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
