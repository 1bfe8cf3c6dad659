"""`policy-scheduler simulate FILE...`: print where the pending pods would go."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from policy_scheduler.pressure.inputs import usage_store
from policy_scheduler.scheduler.versioning.semantics import command_semantics
from policy_scheduler.simulate.profiles import resolve_scenario_profiles
from policy_scheduler.simulate.progress import ProgressLine, summary_line, wants_progress
from policy_scheduler.simulate.run import PodOutcome, simulate
from policy_scheduler.simulate.scenario import ScenarioError, load_scenario, skipped_note
from policy_scheduler.simulate.verdicts import EVICTED_VERDICTS

EXIT_BAD_INPUT = 2


def _message(o: PodOutcome) -> str | None:
    if o.dry_run and o.message:
        return f"{o.message} ({o.dry_run})"
    return o.message


def outcomes_json(outcomes: list[PodOutcome]) -> dict[str, Any]:
    """The public JSON contract: keep it stable."""
    pods: list[dict[str, Any]] = []
    for o in outcomes:
        entry: dict[str, Any] = {
            "namespace": o.namespace,
            "name": o.name,
            "node": o.node,
            "nominatedNode": o.nominated_node,
            "message": None if o.node else _message(o),
        }
        if o.preempted:
            entry["preempted"] = list(o.preempted)
        if o.devices:
            entry["devices"] = list(o.devices)
        if o.extended_resource_claim is not None:
            entry["extendedResourceClaim"] = o.extended_resource_claim
        if o.victims:
            entry["victims"] = [{"pod": key, "verdict": verdict} for key, verdict in o.victims.items()]
        if o.pressure:
            entry["pressure"] = list(o.pressure)
        pods.append(entry)
    return {"pods": pods}


def outcomes_table(outcomes: list[PodOutcome]) -> str:
    rows = [("NAMESPACE", "NAME", "NODE", "NOMINATED", "MESSAGE")]
    for o in outcomes:
        message = "" if o.node else (_message(o) or "")
        if o.preempted:
            message = (message + " " if message else "") + f"(preempted: {', '.join(o.preempted)})"
        blocked = [key for key, verdict in o.victims.items() if verdict not in EVICTED_VERDICTS]
        if blocked and not o.dry_run:
            shown = ", ".join(f"{key}: {o.victims[key]}" for key in blocked)
            message = (message + " " if message else "") + f"(victims not evicted: {shown})"
        if o.pressure:
            message = (message + " " if message else "") + f"(pressure: {'; '.join(o.pressure)})"
        rows.append((o.namespace, o.name, o.node or "<pending>", o.nominated_node or "", message))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def write_outcomes(outcomes: list[PodOutcome], output: str) -> None:
    """The outcomes on stdout as `--output` asks: the JSON contract or the table."""
    if output == "json":
        sys.stdout.write(json.dumps(outcomes_json(outcomes), indent=2) + "\n")
    else:
        sys.stdout.write(outcomes_table(outcomes))


def simulate_command(args: argparse.Namespace) -> int:
    if args.from_cluster:
        from policy_scheduler.simulate.whatif import whatif_command

        return whatif_command(args)
    if args.apply or args.diff or args.namespace or not args.files:
        print("error: FILE... or --from-cluster (--apply, --diff, --namespace need it)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        scenario = load_scenario(args.files)
        semantics = command_semantics(getattr(args, "kubernetes_version", None))
        profiles = resolve_scenario_profiles(scenario, semantics.features)
        node_usage = usage_store(scenario) if scenario.usage_documents else None
    except (ScenarioError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    note = skipped_note(scenario)
    if note:
        print(note, file=sys.stderr)
    progress = None
    if wants_progress(sys.stderr, bool(getattr(args, "progress", False)), scenario):
        progress = ProgressLine(sys.stderr, tty=sys.stderr.isatty())
    outcomes = simulate(scenario, profiles, seed=args.seed, progress=progress, node_usage=node_usage)
    if progress is not None:
        progress.close()
    write_outcomes(outcomes, args.output)
    # stderr keeps stdout (the table or the JSON contract) unchanged for scripts.
    print(summary_line(scenario, outcomes), file=sys.stderr)
    return 0
