"""`policy-scheduler explain`'s arguments; the command itself is imported only when it runs."""

from __future__ import annotations

import argparse
from typing import Any

from policy_scheduler.app.commands import Deferred
from policy_scheduler.app.kubernetes_version import CLUSTER_DEFAULT, add_kubernetes_version_argument


def add_parser(sub: Any) -> None:
    p = sub.add_parser("explain", help="why a pod is pending, or why its node won")
    p.add_argument("pod", metavar="NAMESPACE/NAME", help="the pod (or NAME with -n)")
    p.add_argument("-n", "--namespace", default="default", help="namespace when the pod is given as NAME")
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
    p.add_argument(
        "--endpoint",
        help="the operator's address (e.g. https://127.0.0.1:10259) instead of the leader pod",
    )
    p.add_argument(
        "--certificate-authority",
        help="with an https --endpoint: the CA file its certificate is checked with",
    )
    p.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="with an https --endpoint: do not check its certificate (a self-signed one, locally)",
    )
    p.add_argument("--lease-namespace", default="policy-scheduler", help="where the operator's lease is")
    p.add_argument("--lease-name", default="policy-scheduler")
    p.add_argument(
        "--recompute",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="when the operator has no answer, recompute one from a live snapshot (default: on)",
    )
    add_kubernetes_version_argument(p, CLUSTER_DEFAULT)
    p.set_defaults(func=Deferred("policy_scheduler.explain.command", "explain_command"))
