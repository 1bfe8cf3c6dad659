"""`policy-scheduler simulate --from-cluster`: what the operator would do with the cluster's
pending pods, under the policy in force or with --apply objects, changing nothing.

Exit 0: done; 1: the cluster could not be read; 2: invalid --apply input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from policy_scheduler.scheduler.versioning.semantics import command_semantics
from policy_scheduler.simulate.budget_probe import explain_budget_blocks
from policy_scheduler.simulate.diff import changes_json, changes_table, diff_outcomes
from policy_scheduler.simulate.live_snapshot import SnapshotError, SnapshotStats, api_get, read_snapshot
from policy_scheduler.simulate.overrides import OverrideError, load_overrides, with_overrides
from policy_scheduler.simulate.policy_in_force import PolicyInForce, policy_in_force
from policy_scheduler.simulate.progress import ProgressLine, summary_line, wants_progress
from policy_scheduler.simulate.run import PodOutcome, simulate
from policy_scheduler.simulate.scenario import Scenario, ScenarioError

EXIT_UNREACHABLE = 1
EXIT_BAD_INPUT = 2


async def take_snapshot(kubeconfig: str | None, namespaces: Sequence[str]) -> tuple[Scenario, SnapshotStats]:
    from policy_scheduler.kube.client import make_api_client

    api = await make_api_client(kubeconfig)
    try:
        return await read_snapshot(api_get(api), namespaces=namespaces)
    finally:
        await api.close()


def _note_snapshot(stats: SnapshotStats, scenario: Scenario) -> None:
    pending = sum(1 for p in scenario.pods if not p.node_name)
    print(
        f"snapshot: {len(scenario.nodes)} nodes, {len(scenario.pods)} pods ({pending} pending), "
        f"{len(scenario.pdbs)} PodDisruptionBudgets, {len(scenario.profiles)} SchedulingProfiles, "
        f"{len(scenario.eviction_policies)} EvictionPolicies",
        file=sys.stderr,
    )
    for line in stats.unreadable:
        print(f"note: skipped unreadable object {line}", file=sys.stderr)
    for path in stats.missing:
        print(f"note: {path} is not served (CRDs not installed?): read as empty", file=sys.stderr)


def _run(scenario: Scenario, policy: PolicyInForce, args: argparse.Namespace) -> list[PodOutcome]:
    progress = None
    if wants_progress(sys.stderr, bool(getattr(args, "progress", False)), scenario):
        progress = ProgressLine(sys.stderr, tty=sys.stderr.isatty())
    outcomes = simulate(
        scenario, policy.profiles, seed=args.seed, progress=progress, policy_for=policy.policy_for
    )
    if progress is not None:
        progress.close()
    explain_budget_blocks(scenario, policy.profiles, policy.policy_for, outcomes, args.seed)
    return outcomes


def reported(
    scenario: Scenario, runs: Sequence[list[PodOutcome]], schedulers: set[str]
) -> list[list[PodOutcome]]:
    """The pods a what-if is about, in each run: pending ones our profiles serve, and victims
    (of any of the runs, so that a diff shows both sides)."""
    keys = {p.key for p in scenario.pods if not p.node_name and p.scheduler_name in schedulers}
    keys |= {key for outcomes in runs for o in outcomes for key in o.preempted}
    return [[o for o in outcomes if f"{o.namespace}/{o.name}" in keys] for outcomes in runs]


def whatif_command(args: argparse.Namespace) -> int:
    from policy_scheduler.kube.client import CONNECTION_ERRORS
    from policy_scheduler.kube.kubeconfig import KubeconfigError
    from policy_scheduler.simulate.command import write_outcomes

    unreadable: tuple[type[BaseException], ...] = (
        SnapshotError,
        KubeconfigError,
        OSError,
        ValueError,
    )
    try:
        scenario, stats = asyncio.run(take_snapshot(args.kubeconfig, args.namespace or ()))
    except unreadable + CONNECTION_ERRORS as exc:
        print(f"error: reading the cluster: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    _note_snapshot(stats, scenario)
    semantics = command_semantics(
        getattr(args, "kubernetes_version", None), scenario.server_version, from_cluster=True
    )
    print(f"note: {semantics.describe()}", file=sys.stderr)
    try:
        known = [str((p.get("metadata") or {}).get("name", "")) for p in scenario.eviction_policies]
        overrides = load_overrides(args.apply or [], known)
    except OverrideError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        return EXIT_BAD_INPUT
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for note in overrides.notes:
        print(note, file=sys.stderr)
    selector = args.profile_selector or ""
    changed = with_overrides(scenario, overrides)
    after_policy = policy_in_force(changed.profiles, changed.eviction_policies, selector, semantics)
    for note in after_policy.notes:
        print(f"note: {note}", file=sys.stderr)
    after = _run(changed, after_policy, args)
    if args.diff:
        before_policy = policy_in_force(scenario.profiles, scenario.eviction_policies, selector, semantics)
        schedulers = before_policy.scheduler_names | after_policy.scheduler_names
        before, after = reported(scenario, [_run(scenario, before_policy, args), after], schedulers)
        changes = diff_outcomes(before, after)
        if args.output == "json":
            sys.stdout.write(json.dumps(changes_json(changes, before, after), indent=2) + "\n")
        else:
            sys.stdout.write(changes_table(changes, before, after))
        print(f"diff: {len(changes)} pod(s) change outcome ({len(after)} pods compared)", file=sys.stderr)
    else:
        [after] = reported(changed, [after], after_policy.scheduler_names)
        write_outcomes(after, args.output)
    print(summary_line(changed, after), file=sys.stderr)
    return 0
