"""`policy-scheduler pressure`'s arguments; the command itself is imported only when it runs."""

from __future__ import annotations

from typing import Any

from policy_scheduler.app.commands import Deferred
from policy_scheduler.scheduler.pressure.signals import SIGNALS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pressure",
        help="what the kubelet's node-pressure eviction would do: signals, conditions, eviction order",
        description="Evaluate each node's eviction signals against the kubelet's thresholds, the node "
        "conditions it would report, and its pods in the order the kubelet would evict them, marking "
        "those it would have to evict (docs/pressure.md).",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="YAML files: Nodes, Pods, NodeMetrics, PodMetrics, at most one KubeletConfiguration "
        "(multi-document or kind: List)",
    )
    p.add_argument(
        "--summary",
        action="append",
        default=[],
        metavar="FILE",
        help="a node's Summary API JSON (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary); "
        "repeatable",
    )
    p.add_argument("--node", action="append", default=[], metavar="NAME", help="only this node (repeatable)")
    p.add_argument(
        "--signal",
        choices=SIGNALS,
        help="rank every node's pods for this signal (default: the one under pressure, else the first "
        "with data)",
    )
    p.add_argument("-o", "--output", choices=["table", "json"], default="table")
    p.set_defaults(func=Deferred("policy_scheduler.pressure.command", "pressure_command"))
