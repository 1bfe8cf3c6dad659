"""`policy-scheduler run`'s node-pressure options."""

from __future__ import annotations

import argparse
from typing import Any

from policy_scheduler.kube.pressure.options import PressureOptions

_DEFAULTS = PressureOptions()


def _seconds(text: str) -> float:
    from policy_scheduler.scheduler.framework.durations import parse_go_duration

    try:
        value = parse_go_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1s, not {text}")
    return value


def add_pressure_arguments(run: Any) -> None:
    group = run.add_argument_group("node pressure (docs/pressure.md)")
    group.add_argument(
        "--node-usage-interval",
        type=_seconds,
        default=_DEFAULTS.interval,
        metavar="DURATION",
        help="how often node usage is read from metrics.k8s.io (and the kubelets); metrics-server "
        "refreshes every 15s by default (default 15s)",
    )
    group.add_argument(
        "--kubelet-proxy",
        action="store_true",
        help="also read each node's kubelet Summary API (disk, inodes, PIDs) and /configz (its eviction "
        "thresholds) through nodes/proxy; needs RBAC get on nodes/proxy, which reaches every kubelet API "
        "(the opt-in RBAC of docs/deploy.md)",
    )


def pressure_options(args: argparse.Namespace) -> PressureOptions:
    return PressureOptions(interval=args.node_usage_interval, kubelet_proxy=args.kubelet_proxy)
