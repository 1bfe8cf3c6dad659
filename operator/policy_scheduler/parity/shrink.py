"""Shrink a disagreement to a small scenario that still shows it.

The state the pod was judged on is frozen into running pods (spec.nodeName set), so the
repro has a single pending pod; then running pods and nodes are dropped one at a time
while the disagreement persists (each try is a real run against kube-scheduler).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

from policy_scheduler.parity.compare import Verdict
from policy_scheduler.parity.generator import Scenario
from policy_scheduler.parity.runner import HarnessError, PodResult, Runner, ScenarioResult

_counter = itertools.count()


def frozen(result: ScenarioResult, pod: PodResult) -> Scenario:
    """The scenario as it stood for `pod`: earlier placements become running pods."""
    pending = next(p for p in result.scenario.pending if _key(p) == pod.key)
    return dataclasses.replace(
        result.scenario, running=list(pod.state), pending=[pending], pdbs=list(pod.pdbs)
    )


def _key(pod: dict[str, object]) -> str:
    meta = pod["metadata"]
    assert isinstance(meta, dict)
    return f"{meta['namespace']}/{meta['name']}"


def same_kind(original: Verdict) -> Callable[[Verdict], bool]:
    if original.decision is False:
        return lambda v: v.decision is False
    return lambda v: v.decision is not None and not v.full


def reproduces(
    runner: Runner, scenario: Scenario, fails: Callable[[Verdict], bool], run_id: str
) -> PodResult | None:
    """Run `scenario` under fresh names; the failing result of its last pending pod, or None."""
    trial = scenario.renamed(f"{run_id}-x{next(_counter)}-")
    try:
        result = runner.run(trial)
    except HarnessError:
        return None
    firsts = [p for p in result.pods if not p.followup]
    if firsts and fails(firsts[-1].verdict):
        return firsts[-1]
    return None


def shrink(
    runner: Runner, scenario: Scenario, fails: Callable[[Verdict], bool], run_id: str, budget: int = 60
) -> tuple[Scenario, PodResult] | None:
    """Greedy one-object-at-a-time minimisation; None if the frozen scenario does not reproduce."""
    last = reproduces(runner, scenario, fails, run_id)
    if last is None:
        return None
    changed = True
    while changed and budget > 0:
        changed = False
        candidates = [scenario.without(running=i) for i in range(len(scenario.running))]
        candidates += [scenario.without(node=i) for i in range(len(scenario.nodes))]
        for candidate in candidates:
            budget -= 1
            found = reproduces(runner, candidate, fails, run_id)
            if found is not None:
                scenario, last, changed = candidate, found, True
                break
            if budget <= 0:
                break
    return scenario, last
