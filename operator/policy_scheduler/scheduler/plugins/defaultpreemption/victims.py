"""SelectVictimsOnNode and its PDB helpers (defaultpreemption v1.35.4).

The dry run works on the live NodeTable: victims are removed from the row and added back in
place, and the row is restored exactly (pods, their order, every column) before returning.
The scheduling cycle is synchronous, so nobody else sees the intermediate states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import FilterPlugin, FrameworkHandle
from policy_scheduler.scheduler.framework.services import PDB
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status, unresolvable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.selectors import SelectorError, label_selector_matches

NO_VICTIMS = "No preemption victims found for incoming pod"


def pdb_selects(pdb: PDB, pod: Pod) -> bool:
    """Same namespace and the selector matches. None selects nothing; an empty selector selects
    every pod of the namespace (policy/v1, as the Eviction API counts it); invalid: nothing."""
    if pdb.namespace != pod.namespace:
        return False
    try:
        return label_selector_matches(pdb.selector, pod.labels)
    except SelectorError:
        return False


def more_important_key(now: float) -> Callable[[Pod], tuple[int, float]]:
    """util.MoreImportantPod as a sort key: higher priority first, then the earlier start
    (a pod without a start time counts as starting now, as GetPodStartTime does)."""

    def key(pod: Pod) -> tuple[int, float]:
        return (-pod.priority, pod.start_time if pod.start_time is not None else now)

    return key


def _budget_verdicts(
    pods: Iterable[Pod], pdbs: Sequence[PDB], *, skip_terminating: bool = False
) -> Iterator[tuple[Pod, bool]]:
    """Each pod with whether evicting it (after the ones before it) exceeds a matching PDB's
    allowance. Pods a PDB already lists as disrupted do not count against that PDB."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    for pod in pods:
        if skip_terminating and pod.terminating:
            continue
        violated = False
        for i, pdb in enumerate(pdbs):
            if not pdb_selects(pdb, pod) or pod.name in pdb.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        yield pod, violated


def filter_pods_with_pdb_violation(pods: Sequence[Pod], pdbs: Sequence[PDB]) -> tuple[list[Pod], list[Pod]]:
    """filterPodsWithPDBViolation: stable split into (violating, non-violating)."""
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod, violated in _budget_verdicts(pods, pdbs):
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def budget_verdicts(victims: Iterable[Pod], pdbs: Sequence[PDB]) -> Iterator[tuple[Pod, bool]]:
    """Each victim with whether the Eviction API would refuse it (429) if evicted in this
    order; terminating victims need no new eviction and are left out."""
    return _budget_verdicts(victims, pdbs, skip_terminating=True)


def budget_overruns(victims: Iterable[Pod], pdbs: Sequence[PDB]) -> int:
    """Victims whose eviction the Eviction API would refuse (429) if evicted in this order;
    terminating victims need no new eviction."""
    return sum(violated for _, violated in budget_verdicts(victims, pdbs))


@dataclass(slots=True)
class NodeVictims:
    victims: list[Pod]
    num_pdb_violations: int
    status: Status


def _extension_error(point: str, status: Status) -> Status:
    """RunPreFilterExtension{Add,Remove}Pod's wrapping of a plugin failure."""
    return Status(Code.ERROR, (f'running {point} on PreFilter plugin "{status.plugin}": {status.message}',))


class _DryRunRow:
    """Removes and re-adds pods on one row and restores it exactly on close() (or leaving the block)."""

    def __init__(self, table: NodeTable, row: int) -> None:
        self.table = table
        self.row = row
        self.original = list(table.pods[row].items())
        self.removed: dict[str, Pod] = {}

    def remove(self, pod: Pod) -> None:
        self.table.remove_pod(pod, self.row)
        self.removed[pod.key] = pod

    def add(self, pod: Pod) -> None:
        self.table.add_pod(pod, self.row)
        self.removed.pop(pod.key, None)

    def __enter__(self) -> _DryRunRow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for pod in list(self.removed.values()):
            self.add(pod)
        pods = self.table.pods[self.row]
        if list(pods) != [key for key, _ in self.original]:
            pods.clear()  # same pods, original order (dict identity kept for other holders)
            pods.update(self.original)


def _filter(framework: FrameworkHandle, state: CycleState, pod: Pod, row: int) -> Status:
    """RunFilterPluginsWithNominatedPods on one node."""
    return _as_filter_error(framework.filter_row_with_nominated_pods(state, pod, row))


def _as_filter_error(status: Status) -> Status:
    if status.code == Code.ERROR and status.plugin:
        return Status(Code.ERROR, (f'running "{status.plugin}" filter plugin: {status.message}',))
    return status


def _in_reprieve_order(potential: list[Pod], pdbs: Sequence[PDB], now: float) -> tuple[list[Pod], int]:
    """The potential victims in the order the reprieve tries them (PDB-violating first, each
    group most important first), and how many lead that order as PDB-violating."""
    potential = sorted(potential, key=more_important_key(now))
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    return violating + non_violating, len(violating)


def _left_out(ordered: list[Pod], kept: list[bool], num_violating: int, now: float) -> NodeVictims:
    """The victims: the candidates not put back, in order of importance."""
    victims = [victim for victim, back in zip(ordered, kept, strict=True) if not back]
    if 0 < num_violating < len(ordered):
        victims.sort(key=more_important_key(now))
    return NodeVictims(victims, kept[:num_violating].count(False), SUCCESS)


def _select_by_integers(
    framework: FrameworkHandle,
    state: CycleState,
    pod: Pod,
    row: int,
    potential: list[Pod],
    pdbs: Sequence[PDB],
    now: float,
    adjusted: FilterPlugin | None,
) -> NodeVictims | None:
    """SelectVictimsOnNode without touching the table, when the filters can answer for pods
    taken off and put back (`adjusted`, the state's Framework.adjusting_filter): the same
    verdicts, statuses and evaluation counts as removing the victims and re-filtering. None:
    they cannot. `state` is only read (the node-only filters, which passed, are not asked again
    while victims go back)."""
    if adjusted is None:
        return None
    status = framework.filter_row_with_nominated_pods(state, pod, row, adjusted, potential)
    if not status.is_success:
        return NodeVictims([], 0, _as_filter_error(status))
    ordered, num_violating = _in_reprieve_order(potential, pdbs, now)
    kept = framework.fits_adding_in_turn(state, pod, row, adjusted, potential, ordered)
    return _left_out(ordered, kept, num_violating, now)


def select_victims_on_node(
    framework: FrameworkHandle,
    state: CycleState,
    pod: Pod,
    row: int,
    pdbs: Sequence[PDB],
    eligible: Callable[[Pod], bool],
    now: float,
    adjusted: FilterPlugin | None,
) -> NodeVictims:
    """SelectVictimsOnNode: remove every eligible lower-priority pod; if the pod then fits, add
    them back (PDB-violating first, each group most important first) while it still fits.
    `state` is left as it is: the path that places pods works on a clone (the PreFilter
    extensions update it), the integer path needs none. `adjusted` is the state's
    Framework.adjusting_filter, asked once by the caller for all the nodes it tries."""
    potential = [p for p in framework.table.pods[row].values() if eligible(p)]
    if not potential:
        return NodeVictims([], 0, unresolvable(NO_VICTIMS))
    by_integers = _select_by_integers(framework, state, pod, row, potential, pdbs, now, adjusted)
    if by_integers is not None:
        return by_integers
    state = state.clone()
    with framework.trial_placements(state), _DryRunRow(framework.table, row) as dry:

        def remove(victim: Pod) -> Status:
            dry.remove(victim)
            status = framework.run_pre_filter_remove_pod(state, pod, victim, row)
            return SUCCESS if status.is_success else _extension_error("RemovePod", status)

        def add(victim: Pod) -> Status:
            dry.add(victim)
            status = framework.run_pre_filter_add_pod(state, pod, victim, row)
            return SUCCESS if status.is_success else _extension_error("AddPod", status)

        for victim in potential:
            status = remove(victim)
            if not status.is_success:
                return NodeVictims([], 0, status)
        status = _filter(framework, state, pod, row)
        if not status.is_success:
            return NodeVictims([], 0, status)
        # Adding victims back cannot change what filters reading only the node decided: they passed.
        state.skip_filter |= framework.node_only_filters
        ordered, num_violating = _in_reprieve_order(potential, pdbs, now)
        kept: list[bool] = []
        for victim in ordered:  # put back while the pod still fits
            status = add(victim)
            if not status.is_success:
                return NodeVictims([], 0, status)
            fits = _filter(framework, state, pod, row).is_success
            if not fits:
                status = remove(victim)
                if not status.is_success:
                    return NodeVictims([], 0, status)
            kept.append(fits)
        return _left_out(ordered, kept, num_violating, now)
