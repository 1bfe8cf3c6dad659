"""Finding and ranking preemption candidates (framework/preemption v1.35.4, sequential).

Upstream dry-runs nodes in parallel and cancels once enough candidates exist; this does the
same search one node at a time from the random offset, which is what upstream's tests pin
with parallelism 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.interfaces import FrameworkHandle
from policy_scheduler.scheduler.framework.services import PDB
from policy_scheduler.scheduler.framework.status import Code, Status, error, unresolvable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable, Rows
from policy_scheduler.scheduler.plugins.defaultpreemption.victims import (
    budget_overruns,
    select_victims_on_node,
)

MAX_INT32 = 2**31 - 1
# Our message for nodes dropped because budgetMode is Enforce.
BUDGET_VIOLATION = "Preemption victims would violate a PodDisruptionBudget"


@dataclass(slots=True)
class Candidate:
    name: str
    victims: list[Pod]  # most important first
    num_pdb_violations: int = 0


@dataclass(slots=True)
class DryRunResult:
    candidates: list[Candidate]  # non-violating first, then violating, each in search order
    node_to_status: dict[str, Status] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """calculateNumCandidates: a percentage of the nodes, at least `absolute`, at most all."""
    n = num_nodes * percentage // 100
    return min(max(n, absolute), num_nodes)


def nodes_where_preemption_might_help(table: NodeTable, diagnosis: Diagnosis) -> Rows:
    """NodesForStatusCode(Unschedulable): rows whose status is Unschedulable (absent nodes take
    the absent status), in the node tree order."""
    order = table.order()
    if diagnosis.absent_nodes_status.code == Code.UNSCHEDULABLE:
        nodes = table.nodes
        keep = [
            int(row) for row in order if diagnosis.status_of(nodes[int(row)].name).code == Code.UNSCHEDULABLE
        ]
        return np.asarray(keep, dtype=np.intp)
    index = table.index
    names = diagnosis.node_to_status.names_where(lambda status: status.code == Code.UNSCHEDULABLE)
    rows = [index[name] for name in names if name in index]
    if not rows:
        return np.empty(0, dtype=np.intp)
    position = np.empty(len(table), dtype=np.intp)
    position[order] = np.arange(len(order), dtype=np.intp)
    chosen = np.asarray(rows, dtype=np.intp)
    ordered: Rows = chosen[np.argsort(position[chosen], kind="stable")]
    return ordered


def dry_run_preemption(
    framework: FrameworkHandle,
    state: CycleState,
    pod: Pod,
    rows: Rows,
    pdbs: Sequence[PDB],
    offset: int,
    num_candidates: int,
    eligible: Callable[[Pod], bool],
    now: float,
    enforce_budgets: bool,
) -> DryRunResult:
    """DryRunPreemption: visit rows from `offset`, stop once there are `num_candidates` and at
    least one does not violate a PDB. With `enforce_budgets` a node whose victims the Eviction
    API would refuse is no candidate at all."""
    table: NodeTable = framework.table
    non_violating: list[Candidate] = []
    violating: list[Candidate] = []
    result = DryRunResult([])
    adjusted = framework.adjusting_filter(state)  # the state is only read: the same for every node
    for i in range(len(rows)):
        row = int(rows[(offset + i) % len(rows)])
        name = table.nodes[row].name
        found = select_victims_on_node(framework, state, pod, row, pdbs, eligible, now, adjusted)
        status = found.status
        if status.is_success and found.victims:
            violations = found.num_pdb_violations
            if enforce_budgets:
                if budget_overruns(found.victims, pdbs):
                    result.node_to_status[name] = unresolvable(BUDGET_VIOLATION)
                    continue
                violations = 0  # every eviction would be admitted
            group = violating if violations else non_violating
            if len(group) < num_candidates:  # candidateList keeps at most num_candidates
                group.append(Candidate(name, found.victims, violations))
            if non_violating and len(non_violating) + len(violating) >= num_candidates:
                break
            continue
        if status.is_success:
            status = error(f'expected at least one victim pod on node "{name}"')
        if status.code == Code.ERROR:
            result.errors.append(status.message)
        result.node_to_status[name] = status
    result.candidates = non_violating + violating
    return result


def _earliest_start_of_highest(victims: Sequence[Pod], now: float) -> float:
    """util.GetEarliestPodStartTime: earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims)
    return min(p.start_time if p.start_time is not None else now for p in victims if p.priority == top)


def pick_one_node_for_preemption(candidates: Sequence[Candidate], now: float) -> Candidate:
    """pickOneNodeForPreemption: each criterion keeps the best-scoring candidates; the first
    criterion that leaves one decides, else the first remaining candidate wins."""
    criteria: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        # MaxInt32+1 per victim so that more victims with negative priorities never look cheaper.
        lambda c: -sum(p.priority + MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_highest(c.victims, now),
    ]
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            return remaining[0]
    return remaining[0]


def select_candidate(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """SelectCandidate."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    return pick_one_node_for_preemption(candidates, now)
