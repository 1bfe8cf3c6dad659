"""`policy-scheduler pressure FILE...`: what the kubelet's node-pressure eviction would do."""

from __future__ import annotations

import argparse
import json
import sys
import time

from policy_scheduler.pressure.inputs import load
from policy_scheduler.pressure.report import report_json, report_table
from policy_scheduler.scheduler.pressure.assess import assess
from policy_scheduler.simulate.scenario import ScenarioError

EXIT_BAD_INPUT = 2


def pressure_command(args: argparse.Namespace) -> int:
    try:
        inputs = load(args.files, args.summary, args.node)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
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
