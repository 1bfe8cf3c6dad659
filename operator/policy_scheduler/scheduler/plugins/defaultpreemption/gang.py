"""Workload-aware preemption: a PodGroup preempts as one, and its members fall as one.

A gang member that fits nowhere preempts for the members its group still lacks (minMember minus
those holding a node), one after another on a scratch placement in the node table: victims for
all of them, or for none. A victim in a group that falls as one (a scheduler-plugins PodGroup under
gangDisruption Whole; a Workload API PodGroup with disruptionMode All) may be chosen only if every
member of its group holding a node may be, and then they all go.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FrameworkHandle
from policy_scheduler.scheduler.framework.services import PDB
from policy_scheduler.scheduler.gang import PodGroup, PodGroupStore
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import (
    dry_run_preemption,
    select_candidate,
)

COSCHEDULING = "Coscheduling"


def _every_group(group: PodGroup) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class FallTogether:
    """The groups of `store` whose members are disrupted together (`applies` says which)."""

    store: PodGroupStore
    applies: Callable[[PodGroup], bool] = _every_group


def group_siblings(units: Sequence[FallTogether], table: NodeTable, pod: Pod) -> list[Pod]:
    """The members of `pod`'s group holding a node (bound or assumed), `pod` included, when its
    group falls as one; else `pod` alone."""
    for unit in units:
        key = unit.store.key_of(pod)
        group = unit.store.group_of(pod) if key else None
        if group is None or not unit.applies(group):
            continue
        found = [table.pods[row].get(k) for k, row in unit.store.assigned(key).items()]
        return [p for p in found if p is not None] or [pod]
    return [pod]


def whole_group_eligible(
    units: Sequence[FallTogether], table: NodeTable, eligible: Callable[[Pod], bool]
) -> Callable[[Pod], bool]:
    """A member of a group that falls as one is a victim only if its whole group may be."""

    def check(victim: Pod) -> bool:
        return all(eligible(p) for p in group_siblings(units, table, victim))

    return check


def with_whole_groups(
    units: Sequence[FallTogether], table: NodeTable, victims: Sequence[Pod]
) -> tuple[Pod, ...]:
    """The victims plus every assigned member of their groups that fall as one."""
    out: dict[str, Pod] = {}
    for victim in victims:
        for p in group_siblings(units, table, victim):
            out.setdefault(p.key, p)
    return tuple(out.values())


@dataclass(slots=True)
class _Scratch:
    """Placements and removals made on the live table for one dry run, undone in reverse."""

    table: NodeTable
    undo: list[Callable[[], None]] = field(default_factory=list)

    def remove(self, pod: Pod, row: int) -> None:
        self.table.remove_pod(pod, row)
        self.undo.append(lambda: self.table.add_pod(pod, row))

    def place(self, pod: Pod, row: int) -> None:
        placed = replace(pod, node_name=self.table.nodes[row].name)
        self.table.add_pod(placed, row)
        self.undo.append(lambda: self.table.remove_pod(placed, row))

    def close(self) -> None:
        while self.undo:
            self.undo.pop()()


@dataclass(frozen=True, slots=True)
class GangPlan:
    node_name: str  # where the preemptor goes
    victims: tuple[Pod, ...]
    # The other members placed where victims free room, each with its node: to nominate.
    nominations: tuple[tuple[Pod, str], ...] = ()


def plan_group_preemption(
    framework: FrameworkHandle,
    store: PodGroupStore,
    group: PodGroup,
    preemptor: Pod,
    pdbs: Sequence[PDB],
    eligible: Callable[[Pod], bool],
    num_candidates: Callable[[int], int],
    now: float,
    enforce_budgets: bool,
) -> GangPlan | str:
    """Room for every member the group still lacks, or the reason there is none."""
    table = framework.table
    key = store.key_of(preemptor) or group.key  # the gang instance (v1.35: a template's replica)
    assigned = store.assigned(key)
    pending = [p for k, p in store.state(key).members.items() if k not in assigned and k != preemptor.key]
    pending.sort(key=lambda p: p.key)
    needed = max(group.min_member - len(assigned), 1)
    members = [preemptor, *pending][:needed]
    if len(members) < needed:
        present = len(members) + len(assigned)
        return f"PodGroup {key} has {present} members, fewer than minMember {group.min_member}"
    scratch = _Scratch(table)
    victims: dict[str, Pod] = {}
    freed: set[int] = set()  # rows where the plan evicts
    nominations: list[tuple[Pod, str]] = []
    preemptor_node = ""
    try:
        for member in members:
            state = CycleState()
            _, status, _ = framework.run_pre_filter(state, member)
            if not status.is_success and status.plugin != COSCHEDULING:
                return f"PodGroup {key}: member {member.name}: {status.message}"
            rows = table.order()
            outcome = framework.run_filters_with_nominated_pods(state, member, rows)
            fits = np.flatnonzero(outcome.passed)
            if len(fits):
                row = int(outcome.rows[int(fits[0])])
            else:
                found = dry_run_preemption(
                    framework,
                    state,
                    member,
                    rows,
                    pdbs,
                    0,
                    num_candidates(len(rows)),
                    eligible,
                    now,
                    enforce_budgets,
                )
                best = select_candidate(found.candidates, now)
                if best is None:
                    return f"PodGroup {key}: no room for member {member.name} even with preemption"
                row = table.index[best.name]
                freed.add(row)
                for victim in best.victims:
                    victims.setdefault(victim.key, victim)
                    scratch.remove(victim, row)
            scratch.place(member, row)
            if member is preemptor:
                preemptor_node = table.nodes[row].name
            elif row in freed:
                nominations.append((member, table.nodes[row].name))
    finally:
        scratch.close()
    return GangPlan(preemptor_node, tuple(victims.values()), tuple(nominations))
