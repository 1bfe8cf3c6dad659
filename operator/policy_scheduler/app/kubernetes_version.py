"""The --kubernetes-version option of the offline commands (simulate, validate, explain,
import-config): which kube-scheduler release they decide and check like."""

from __future__ import annotations

import argparse

from policy_scheduler.scheduler.versioning.version import (
    NEWEST_SUPPORTED,
    KubernetesVersion,
    VersionError,
    parse_supported,
    supported_list,
)


def _release(text: str) -> KubernetesVersion:
    try:
        return parse_supported(text)
    except VersionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


FROM_CLUSTER_DEFAULT = f"the cluster's with --from-cluster, else {NEWEST_SUPPORTED}"
CLUSTER_DEFAULT = "the cluster's"
NEWEST_DEFAULT = str(NEWEST_SUPPORTED)


def add_kubernetes_version_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """`default` says what the command follows without the option (one of the *_DEFAULT)."""
    parser.add_argument(
        "--kubernetes-version",
        type=_release,
        metavar="vX.Y[.Z]",
        help=f"decide as kube-scheduler of this release ({supported_list()}; default: {default})",
    )
