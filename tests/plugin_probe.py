"""Plugins the registry tests install through an entry point (tests/scheduler/framework/test_plugin_registry.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FilterResult, Handle, ScorePlugin
from policy_scheduler.scheduler.framework.plugin_args import ScalarArgs
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows


@dataclass(frozen=True, slots=True)
class ProbeArgs(ScalarArgs):
    weight: int = 1

    def problems(self) -> list[Problem]:
        return [Problem("weight", self.weight, "must be >= 0")] if self.weight < 0 else []


class Probe(FilterPlugin, ScorePlugin):
    """A Filter and Score plugin with typed args."""

    name = "Probe"
    args_type = ProbeArgs

    def __init__(self, handle: Handle, args: ProbeArgs) -> None:
        super().__init__(handle, args)
        self.weight = args.weight

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        return FilterResult.all_pass(len(rows))

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.full(len(rows), self.weight, dtype=np.int64)


class RawProbe(FilterPlugin):
    """A plugin without an args type: it gets the profile's args as they are."""

    name = "RawProbe"

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        return FilterResult.all_pass(len(rows))
