"""`python -m policy_scheduler.parity run --count N --seed S [--kubeconfig K] [--kubernetes-version V]`."""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from policy_scheduler.devcluster.build import missing_binaries
from policy_scheduler.devcluster.versions import (
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSION_ENV,
    ControlPlaneVersions,
    UnsupportedVersionError,
    bin_dir,
    control_plane,
    supported_kubernetes_versions,
)
from policy_scheduler.parity.api import ClusterApi
from policy_scheduler.parity.generator import generate
from policy_scheduler.parity.kubesched import KubeScheduler
from policy_scheduler.parity.profiles import reference_features
from policy_scheduler.parity.report import Tally, as_json, describe
from policy_scheduler.parity.runner import HarnessError, Runner
from policy_scheduler.parity.shrink import frozen, same_kind, shrink


def scenario_seed(seed: int, index: int) -> int:
    """Scenario `index` of a run with `seed`: `generate(scenario_seed(...))` reproduces it."""
    return seed * 100_000 + index


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m policy_scheduler.parity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="compare random scenarios against kube-scheduler")
    run.add_argument("--count", type=int, default=100, help="scenarios to run (default 100)")
    run.add_argument("--seed", type=int, default=1, help="run seed; scenario k uses seed*100000+k")
    run.add_argument("--kubeconfig", type=Path, help="a running (dev) cluster; default: start one")
    run.add_argument(
        "--kubernetes-version",
        metavar="VERSION",
        help=(
            f"the reference kube-scheduler's version, and the started cluster's: "
            f"{', '.join(supported_kubernetes_versions())} "
            f"(default: ${KUBERNETES_VERSION_ENV}, else {DEFAULT_KUBERNETES_VERSION})"
        ),
    )
    run.add_argument("--workdir", type=Path, help="logs and the started cluster (default: a temp dir)")
    run.add_argument("--report", type=Path, help="write every disagreement as JSON here")
    run.add_argument("--no-shrink", action="store_true", help="print the first disagreement unshrunk")
    run.add_argument("--show", type=int, default=1, help="disagreements to print in full (default 1)")
    run.add_argument(
        "--no-pod-level", action="store_true", help="leave out pod-level resources (spec.resources)"
    )
    gen = sub.add_parser("generate", help="print scenario k of a run as simulate YAML")
    gen.add_argument("--seed", type=int, default=1)
    gen.add_argument("--index", type=int, default=0)
    return parser


@contextlib.contextmanager
def _cluster(kubeconfig: Path | None, workdir: Path, versions: ControlPlaneVersions) -> Iterator[Path]:
    if kubeconfig is not None:
        yield kubeconfig
        return
    from policy_scheduler.devcluster.cluster import DevCluster

    cluster = DevCluster(workdir / "cluster", nodes=0, versions=versions)
    print(f"starting a dev cluster in {cluster.workdir} ...", flush=True)
    with cluster:
        yield cluster.kubeconfig


def run(args: argparse.Namespace) -> int:
    try:
        versions = control_plane(args.kubernetes_version)
    except UnsupportedVersionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = missing_binaries(bin_dir(versions))
    if missing:
        print(
            f"error: the {versions.kubernetes} control plane is not built (missing {', '.join(missing)}); "
            f"build it with `policy-scheduler dev-cluster build --kubernetes-version {versions.kubernetes}`",
            file=sys.stderr,
        )
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="parity-"))
    run_id = f"q{secrets.token_hex(2)}"
    tally = Tally()
    started = time.monotonic()
    with (
        _cluster(args.kubeconfig, workdir, versions) as kubeconfig,
        KubeScheduler(kubeconfig, workdir, versions) as log,
    ):
        api = ClusterApi.from_kubeconfig(kubeconfig)
        runner = Runner(api, log, reference_features(versions))
        print(f"reference: kube-scheduler {versions.kubernetes}", flush=True)
        print(f"kube-scheduler log: {workdir / 'kube-scheduler.log'}", flush=True)
        for k in range(args.count):
            seed = scenario_seed(args.seed, k)
            try:
                result = runner.run(generate(seed, f"{run_id}-{k}-", pod_level=not args.no_pod_level))
            except HarnessError as exc:
                tally.harness_errors.append(f"seed {seed}: {exc}")
                print(f"  harness error in scenario {k} (seed {seed}): {exc}", flush=True)
                continue
            before = len(tally.disagreements)
            tally.add(result)
            for _result, pod in tally.disagreements[before:]:
                print(
                    f"  DISAGREEMENT in scenario {k}: {pod.key}: {'; '.join(pod.verdict.notes)[:300]}",
                    flush=True,
                )
            if (k + 1) % 25 == 0 or k + 1 == args.count:
                print(f"[{time.monotonic() - started:6.0f}s] {tally.progress()}", flush=True)
        print("\n" + tally.summary())
        _show(tally, runner, run_id, args)
    if args.report:
        args.report.write_text(json.dumps([as_json(r, p) for r, p in tally.disagreements], indent=2) + "\n")
    return 0 if not tally.disagreements and not tally.harness_errors else 1


def _show(tally: Tally, runner: Runner, run_id: str, args: argparse.Namespace) -> None:
    for result, pod in tally.disagreements[: args.show]:
        print("\n" + describe(result, pod))
        scenario = frozen(result, pod)
        if not args.no_shrink and not pod.followup:
            shrunk = shrink(runner, scenario, same_kind(pod.verdict), run_id)
            if shrunk is None:
                print("  (the frozen scenario did not reproduce the disagreement; unshrunk scenario below)")
            else:
                scenario, last = shrunk
                print("  shrunk:\n  " + describe(result, last).replace("\n", "\n  "))
        print("\n# minimal scenario (policy-scheduler simulate FILE -o json)")
        sys.stdout.write(scenario.renamed("").to_yaml() if scenario.prefix else scenario.to_yaml())


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "generate":
        sys.stdout.write(generate(scenario_seed(args.seed, args.index)).to_yaml())
        return 0
    return run(args)
