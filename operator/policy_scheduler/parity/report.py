"""Counting verdicts and printing them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.parity.runner import PodResult, ScenarioResult


@dataclass(slots=True)
class Tally:
    scenarios: int = 0
    harness_errors: list[str] = field(default_factory=list)
    judged: int = 0
    scored: int = 0  # bound with two or more feasible nodes: score vectors compared
    agreed: int = 0
    full: int = 0
    inconclusive: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    mismatches: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)
    disagreements: list[tuple[ScenarioResult, PodResult]] = field(default_factory=list)

    def add(self, result: ScenarioResult) -> None:
        self.scenarios += 1
        self.seconds.append(result.seconds)
        for pod in result.pods:
            verdict = pod.verdict
            self.outcomes[pod.reference.outcome + (" (after preemption)" if pod.followup else "")] += 1
            if verdict.decision is None:
                self.inconclusive += 1
                continue
            self.judged += 1
            self.scored += bool(pod.reference.scores)
            self.agreed += verdict.decision
            self.full += verdict.full
            for name in ("decision", "feasible", "scores", "message"):
                if getattr(verdict, name) is False:
                    self.mismatches[name] += 1
            if not verdict.full:
                self.disagreements.append((result, pod))

    @staticmethod
    def pct(part: int, whole: int) -> str:
        return f"{100.0 * part / whole:.2f}%" if whole else "n/a"

    def progress(self) -> str:
        return (
            f"{self.scenarios} scenarios, {self.judged} pods: decisions agree {self.agreed}/{self.judged} "
            f"({self.pct(self.agreed, self.judged)}), fully {self.full}/{self.judged}"
        )

    def summary(self) -> str:
        times = sorted(self.seconds) or [0.0]
        lines = [
            f"scenarios:            {self.scenarios} ({len(self.harness_errors)} harness errors)",
            f"pods judged:          {self.judged} (+{self.inconclusive} without a usable reference answer),"
            f" {self.scored} with score vectors",
            f"decision agreement:   {self.agreed}/{self.judged} ({self.pct(self.agreed, self.judged)})",
            f"full agreement:       {self.full}/{self.judged} ({self.pct(self.full, self.judged)})"
            " (same feasible nodes, score vector and failure message too)",
            "reference outcomes:   " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            "mismatches:           "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.mismatches.items())) or "none"),
            f"seconds per scenario: mean {sum(times) / len(times):.2f}, median {times[len(times) // 2]:.2f}, "
            f"max {times[-1]:.2f}",
        ]
        return "\n".join(lines)


def describe(result: ScenarioResult, pod: PodResult) -> str:
    ref, ours = pod.reference, pod.ours
    what = " (the preemptor's second attempt)" if pod.followup else ""
    scenario = result.scenario
    kube_feasible = ref.feasible or len(ref.scores)
    lines = [
        f"scenario seed {scenario.seed} (profile {scenario.scheduler_name}), pod {pod.key}{what}",
        f"  kube-scheduler: {ref.outcome} {ref.node} feasible={kube_feasible} {ref.message}",
        f"  ours:           {ours.outcome} best={sorted(ours.best)} feasible={sorted(ours.feasible)}"
        f" {ours.message}",
    ]
    if ours.nominees:
        lines.append(f"  ours nominees:  {sorted(ours.nominees)} victims={ours.victims}")
    if ref.victims:
        lines.append(f"  kube victims:   {ref.victims}")
    lines.extend("  " + note.replace("\n", "\n  ") for note in pod.verdict.notes)
    return "\n".join(lines)


def as_json(result: ScenarioResult, pod: PodResult) -> dict[str, Any]:
    return {
        "seed": result.scenario.seed,
        "profile": result.scenario.scheduler_name,
        "pod": pod.key,
        "followup": pod.followup,
        "kube": {
            "outcome": pod.reference.outcome,
            "node": pod.reference.node,
            "message": pod.reference.message,
        },
        "ours": {"outcome": pod.ours.outcome, "best": sorted(pod.ours.best), "message": pod.ours.message},
        "notes": pod.verdict.notes,
    }
