"""`policy-scheduler pressure FILE...`: what the kubelet's node-pressure eviction would do."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from policy_scheduler.pressure.inputs import PressureInputs, load
from policy_scheduler.pressure.report import report_json, report_table
from policy_scheduler.scheduler.pressure.assess import assess
from policy_scheduler.simulate.scenario import ScenarioError

EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 1


def _inputs(args: argparse.Namespace) -> PressureInputs:
    if not args.from_cluster:
        if args.kubelet_proxy or args.kubeconfig:
            raise ScenarioError("--kubelet-proxy and --kubeconfig go with --from-cluster")
        if not args.files:
            raise ScenarioError("give the input FILEs, or --from-cluster")
        return load(args.files, args.summary, args.node)
    if args.files or args.summary:
        raise ScenarioError("--from-cluster reads the cluster: no FILE or --summary with it")
    from policy_scheduler.pressure.live import load_live

    return asyncio.run(load_live(args.kubeconfig, args.node, args.kubelet_proxy))


def pressure_command(args: argparse.Namespace) -> int:
    from policy_scheduler.pressure.live import ClusterUnreadable

    try:
        inputs = _inputs(args)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ClusterUnreadable as exc:
        print(f"error: reading the cluster: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    nodes = assess(
        inputs.nodes, inputs.facts, inputs.usage, inputs.pod_node, now=time.time(), signal=args.signal
    )
    if args.output == "json":
        sys.stdout.write(json.dumps(report_json(nodes, inputs.notes), indent=2) + "\n")
    else:
        sys.stdout.write(report_table(nodes))
        for note in inputs.notes:  # stderr keeps the table for scripts
            print(f"note: {note}", file=sys.stderr)
    return 0
