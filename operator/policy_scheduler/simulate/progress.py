"""Progress of a long simulation on stderr, and the closing summary line."""

from __future__ import annotations

from typing import TextIO

from policy_scheduler.simulate.run import PodOutcome
from policy_scheduler.simulate.scenario import Scenario

# Below this many pods to schedule a run is quick: no progress unless asked for.
LARGE_SNAPSHOT = 500


class ProgressLine:
    """`scheduling: 1200/5000 pods attempted`, rewritten in place on a terminal, printed at
    every tenth otherwise (e.g. CI logs with --progress)."""

    def __init__(self, stream: TextIO, *, tty: bool) -> None:
        self.stream = stream
        self.tty = tty
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        step = max(1, total // (100 if self.tty else 10))
        if total <= 0 or done == self.shown:
            return
        if done != total and self.shown >= 0 and done - self.shown < step:
            return
        self.shown = done
        text = f"scheduling: {done}/{total} pods attempted"
        if self.tty:
            self.stream.write("\r" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


def wants_progress(stream: TextIO, asked: bool, scenario: Scenario) -> bool:
    if asked:
        return True
    large = sum(1 for pod in scenario.pods if not pod.node_name) >= LARGE_SNAPSHOT
    return large and stream.isatty()


def summary_line(scenario: Scenario, outcomes: list[PodOutcome]) -> str:
    """Counts of what the simulation did to the pods that were pending, and to bound victims."""
    bound = {pod.key for pod in scenario.pods if pod.node_name}
    victims = {key for o in outcomes for key in o.preempted}
    scheduled = pending = 0
    for o in outcomes:
        key = f"{o.namespace}/{o.name}"
        if key in victims:
            continue
        if o.node is None:
            pending += 1
        elif key not in bound:
            scheduled += 1
    return (
        f"summary: {scheduled} scheduled, {pending} pending, {len(victims)} preempted "
        f"({len(bound)} already bound, {len(outcomes)} pods)"
    )
