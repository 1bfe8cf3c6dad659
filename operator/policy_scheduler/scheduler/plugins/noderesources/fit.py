"""NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go), in batch form.

Filter rejects nodes without room for the pod's requests; every insufficient resource is a
reason, in fitsRequest's order. Score applies the configured scoring strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.dra.extended import DEVICE_CLASS_PREFIX
from policy_scheduler.scheduler.dra.model import DeviceClass
from policy_scheduler.scheduler.framework.batch import RESOURCES_SIGNER
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status, error
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import BoolArray, IntArray, Rows
from policy_scheduler.scheduler.plugins.noderesources.args import NodeResourcesFitArgs, ScoringStrategy
from policy_scheduler.scheduler.plugins.noderesources.dra_scoring import DraDeviceCounts
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    Scorer,
    dra_served_requests,
    least_allocated_scorer,
    most_allocated_scorer,
    pod_resource_requests,
    requested_and_allocatable,
    requested_to_capacity_ratio_scorer,
    resource_column,
    scale_shape,
)
from policy_scheduler.scheduler.resource_names import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_extended_resource_name,
    is_scalar_resource_name,
)
from policy_scheduler.scheduler.versioning.gates import DRA_EXTENDED_RESOURCE

NAME = "NodeResourcesFit"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME
TOO_MANY_PODS = "Too many pods"


@dataclass(frozen=True, slots=True)
class PodRequest:
    """framework.Resource of the pod's requests (preFilterState); immutable, so clone is identity."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    scalars: tuple[tuple[str, int], ...] = ()  # sorted by name
    # DRAExtendedResource: requested resources a DeviceClass serves; a node that does not list
    # one in allocatable leaves it to DynamicResources.
    dra_served: frozenset[str] = frozenset()

    @staticmethod
    def of(pod: Pod) -> PodRequest:
        reqs = pod.requests
        scalars = sorted((n, q) for n, q in reqs.items() if is_scalar_resource_name(n))
        return PodRequest(
            reqs.get(CPU, 0), reqs.get(MEMORY, 0), reqs.get(EPHEMERAL_STORAGE, 0), tuple(scalars)
        )

    @property
    def empty(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalars)

    def checked(self, ignored: frozenset[str], ignored_groups: frozenset[str]) -> list[tuple[str, int]]:
        """(resource, request) pairs fitsRequest compares, in its order; zero requests and ignored
        extended resources are dropped. Upstream ranges over a Go map for scalar resources, so
        their order is random there; sorting by name makes it deterministic here."""
        out = [(n, q) for n, q in ((CPU, self.milli_cpu), (MEMORY, self.memory)) if q > 0]
        if self.ephemeral_storage > 0:
            out.append((EPHEMERAL_STORAGE, self.ephemeral_storage))
        for name, quantity in self.scalars:
            if quantity == 0:
                continue
            if is_extended_resource_name(name) and (name in ignored or name.split("/")[0] in ignored_groups):
                continue
            out.append((name, quantity))
        return out

    def clone(self) -> PodRequest:
        return self


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    dra: DraDeviceCounts | None = None  # DRA-backed extended resources among those scored

    def clone(self) -> _PreScoreState:
        return self


def _no_request() -> Status:
    return error(f'error reading "{PRE_FILTER_KEY}" from cycleState: not found')


def _reason(resource: str) -> str:
    return f"Insufficient {resource}"


def _scorer(strategy: ScoringStrategy) -> Scorer:
    resources = strategy.resources
    if strategy.type == MOST_ALLOCATED:
        return most_allocated_scorer(resources)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        return requested_to_capacity_ratio_scorer(resources, scale_shape(strategy.shape or ()))
    return least_allocated_scorer(resources)


@dataclass(frozen=True, slots=True)
class _Room:
    slots: int
    checked: Sequence[tuple[str, int]]
    allocatable: list[int]
    free: list[int]


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    signs_pods = True
    answers_adjusted = True
    args_type = NodeResourcesFitArgs

    def __init__(self, handle: Handle, args: NodeResourcesFitArgs) -> None:
        super().__init__(handle, args)
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        self.resources = args.scoring_strategy.resources
        self._scorer = _scorer(args.scoring_strategy)
        self.dra_extended_resources = handle.features.enabled(DRA_EXTENDED_RESOURCE)
        self._last_compared: tuple[PodRequest, list[tuple[str, int]]] | None = None
        self._last_room: tuple[Sequence[Pod], int, PodRequest, int, _Room] | None = None

    # ---- filter ----------------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        if self._dra_served(pod):
            return None  # "signature disabled when dra extended resources are used in the cluster"
        return ((RESOURCES_SIGNER, pod.requests),)

    def _dra_served(self, pod: Pod) -> frozenset[str]:
        return dra_served_requests(self.handle, pod)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        request = PodRequest.of(pod)
        dra_served = self._dra_served(pod)
        # dataclasses.replace costs a few µs: a cycle pays it only for a pod DRA serves.
        state.write(PRE_FILTER_KEY, replace(request, dra_served=dra_served) if dra_served else request)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        request = state.read(PRE_FILTER_KEY)
        if not isinstance(request, PodRequest):
            return FilterResult.reject_all(len(rows), _no_request())
        if len(rows) == 1:
            status = self.filter_row(state, pod, int(rows[0]))
            if status.is_success:
                return FilterResult.all_pass(1)
            return FilterResult(np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.int32), (status,))
        return self._filter_rows(request, rows, None)

    def filter_adjusted(
        self, state: CycleState, pod: Pod, rows: Rows, added: Sequence[Sequence[Pod]]
    ) -> FilterResult:
        request = state.read(PRE_FILTER_KEY)
        if not isinstance(request, PodRequest):
            return FilterResult.reject_all(len(rows), _no_request())
        return self._filter_rows(request, rows, added)

    def _filter_rows(
        self, request: PodRequest, rows: Rows, added: Sequence[Sequence[Pod]] | None
    ) -> FilterResult:
        """The checks on many rows at once; with `added`, as if added[i] were placed on rows[i]
        (the pass with nominated pods), summed per row instead of placed on the table."""
        table = self.table
        reasons = [TOO_MANY_PODS]
        count = table.pod_count[rows]
        if added is not None:
            count = count + np.fromiter((len(pods) for pods in added), dtype=count.dtype, count=len(rows))
        too_many = count + 1 > resource_column(table, table.allocatable, PODS, rows)
        insufficient = [too_many]
        unresolvable = np.zeros(len(rows), dtype=np.bool_)
        checked = self._compared(request)
        added_sums = None if added is None else _summed_requests(added, [r for r, _ in checked])
        for k, (resource, quantity) in enumerate(checked):
            allocatable = resource_column(table, table.allocatable, resource, rows)
            free = allocatable - resource_column(table, table.requested, resource, rows)
            if added_sums is not None:
                free = free - np.asarray(added_sums[k], dtype=free.dtype)
            short = quantity > free
            if resource in request.dra_served:
                short &= allocatable > 0
            reasons.append(_reason(resource))
            insufficient.append(short)
            # Even an empty node is too small: preemption cannot help.
            unresolvable |= short & (quantity > allocatable)
        return _result(reasons, insufficient, unresolvable)

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        return self.filter_row_adjusted(state, pod, row, (), ())

    def filter_row_adjusted(
        self, state: CycleState, pod: Pod, row: int, added: Sequence[Pod], removed: Sequence[Pod]
    ) -> Status:
        """The checks of `filter` on one row with plain ints, as if `added` were placed on it and
        `removed` taken off: preemption's dry runs and the pass with nominated pods ask about
        one node at a time, where numpy's per-call cost (and placing pods) would dominate."""
        request = state.read(PRE_FILTER_KEY)
        if not isinstance(request, PodRequest):
            return _no_request()
        room = self._room(request, row, added, removed)
        reasons = [TOO_MANY_PODS] if room.slots < 1 else []
        unresolvable = False
        for (resource, quantity), allocatable, free in zip(
            room.checked, room.allocatable, room.free, strict=True
        ):
            if quantity > free:
                reasons.append(_reason(resource))
                unresolvable |= quantity > allocatable
        if not reasons:
            return SUCCESS
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return Status(code, tuple(reasons))

    def fits_adding_in_turn(
        self,
        state: CycleState,
        row: int,
        added: Sequence[Pod],
        removed: Sequence[Pod],
        candidates: Sequence[Pod],
    ) -> list[bool] | None:
        """Preemption's reprieve: with `added` (nominated pods) placed on the row and `removed`
        (the potential victims) taken off, each candidate in turn is put back if the pod still
        fits, else left out; whether each was put back. The same verdicts as filtering the row
        after each step. None: no PreFilter state."""
        request = state.read(PRE_FILTER_KEY)
        if not isinstance(request, PodRequest):
            return None
        room = self._room(request, row, added, removed)
        slots, free, checked = room.slots - 1, room.free, room.checked  # the pod's own slot taken
        wanted = [quantity for _, quantity in checked]
        kept: list[bool] = []
        for candidate in candidates:
            requests = candidate.requests
            trial = [f - requests.get(r, 0) for f, (r, _) in zip(free, checked, strict=True)]
            fits = slots >= 1
            if fits:
                for quantity, left in zip(wanted, trial, strict=True):
                    if quantity > left:
                        fits = False
                        break
            if fits:
                slots, free = slots - 1, trial
            kept.append(fits)
        return kept

    def _room(self, request: PodRequest, row: int, added: Sequence[Pod], removed: Sequence[Pod]) -> _Room:
        """Free pod slots and free quantity of each compared resource on the row, with `added`
        placed and `removed` taken off (the pods' requests as NodeTable accounts them)."""
        base = self._room_without(request, row, removed)
        if not added:
            return base
        free = list(base.free)
        for other in added:
            requests = other.requests
            for k, (resource, _) in enumerate(base.checked):
                free[k] -= requests.get(resource, 0)
        return _Room(base.slots - len(added), base.checked, base.allocatable, free)

    def _room_without(self, request: PodRequest, row: int, removed: Sequence[Pod]) -> _Room:
        """`_room` with nothing added. A dry run asks about one node with the same `removed`
        list up to three times (with and without the nominated pods, then the reprieve): the
        last answer is kept for that list object, row, request and table generation. An empty
        `removed` may be a shared constant, so it is never remembered."""
        table = self.table
        last = self._last_room
        if (
            removed
            and last is not None
            and last[0] is removed
            and last[1] == row
            and last[2] is request
            and last[3] == table.generation
        ):
            return last[4]
        index_of = table.resource_index
        # One row of each matrix as ints: cheaper than a numpy scalar per resource.
        allocatable_row = table.allocatable[:, row].tolist()
        requested_row = table.requested[:, row].tolist()
        pods_index = index_of.get(PODS)
        slots = (0 if pods_index is None else allocatable_row[pods_index]) - int(table.pod_count[row])
        slots += len(removed)
        checked = self._compared(request)
        allocatable: list[int] = []
        free: list[int] = []
        if request.dra_served:
            checked = [
                (r, q)
                for r, q in checked
                if r not in request.dra_served or (r in index_of and allocatable_row[index_of[r]] > 0)
            ]
        for resource, _ in checked:
            index = index_of.get(resource)
            quantity = 0 if index is None else allocatable_row[index]
            room = quantity - (0 if index is None else requested_row[index])
            for other in removed:
                room += other.requests.get(resource, 0)
            allocatable.append(quantity)
            free.append(room)
        found = _Room(slots, checked, allocatable, free)
        if removed:
            self._last_room = (removed, row, request, table.generation, found)
        return found

    def _compared(self, request: PodRequest) -> list[tuple[str, int]]:
        """`request.checked` for this plugin's ignored resources, remembered for the last request
        asked about (a dry run asks for the same pod's request on every candidate node)."""
        last = self._last_compared
        if last is not None and last[0] is request:
            return last[1]
        checked = request.checked(self.ignored_resources, self.ignored_resource_groups)
        if request.empty:
            checked = []
        self._last_compared = (request, checked)
        return checked

    # ---- score -----------------------------------------------------------------------------------

    def _dra_counts(self) -> DraDeviceCounts | None:
        return DraDeviceCounts.for_resources(self.handle, self.resources)

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        requests = tuple(pod_resource_requests(pod, self.resources, False, pod_level=False))
        state.write(
            PRE_SCORE_KEY,
            _PreScoreState(requests, self._dra_counts()),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        pre = state.read(PRE_SCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            requests = tuple(pod_resource_requests(pod, self.resources, False, pod_level=False))
            pre = _PreScoreState(requests, self._dra_counts())
        dra = pre.dra.capacity_and_allocated if pre.dra is not None else None
        requested, allocatable = requested_and_allocatable(
            self.table, rows, self.resources, pre.pod_requests, False, dra
        )
        return self._scorer(requested, allocatable)

    # ---- queueing hints --------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Queueing hints and in-place pod resize are on in every release we follow.
        events = [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.DELETE | Action.UPDATE_POD_SCALE_DOWN), after_pod_event
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_ALLOCATABLE),
                self._after_node_change,
            ),
        ]
        if self.dra_extended_resources:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE), after_device_class_event
                )
            )
        return events

    def _after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        return after_node_change(pod, old, new, self._dra_served(pod))


_COUNTED_CHECKS = 12  # up to 4096 combinations of failed checks are counted, not sorted


def _summed_requests(added: Sequence[Sequence[Pod]], resources: Sequence[str]) -> list[list[int]]:
    """For each resource, each row's sum of the `added` pods' requests (one pass over the pods)."""
    sums = [[0] * len(added) for _ in resources]
    for j, pods in enumerate(added):
        for other in pods:
            requests = other.requests
            for k, resource in enumerate(resources):
                amount = requests.get(resource)
                if amount:
                    sums[k][j] += amount
    return sums


def _result(reasons: list[str], insufficient: list[BoolArray], unresolvable: BoolArray) -> FilterResult:
    """One Status per distinct combination of failed checks present among the rows."""
    failed: BoolArray = np.logical_or.reduce(insufficient)
    if not failed.any():
        return FilterResult.all_pass(len(unresolvable))
    matrix = np.stack([unresolvable, *insufficient])
    status_index = np.zeros(len(failed), dtype=np.int32)
    combos: npt.NDArray[np.bool_]
    if len(matrix) <= 62:
        bits = np.left_shift(np.int64(1), np.arange(len(matrix), dtype=np.int64))
        codes = bits @ matrix[:, failed]
        if len(matrix) <= _COUNTED_CHECKS:  # few combinations: count them instead of sorting
            present = np.bincount(codes, minlength=1 << len(matrix))
            unique_codes = np.flatnonzero(present)
            lookup = np.zeros(len(present), dtype=np.intp)
            lookup[unique_codes] = np.arange(len(unique_codes))
            inverse = lookup[codes]
        else:
            unique_codes, inverse = np.unique(codes, return_inverse=True)
        combos = (unique_codes[None, :] & bits[:, None]) != 0
    else:  # more checks than bits in an int64: group the boolean columns directly
        unique_cols, inverse = np.unique(matrix[:, failed].T, axis=0, return_inverse=True)
        combos = unique_cols.T
    status_index[failed] = inverse.reshape(-1)
    statuses = tuple(
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE if combo[0] else Code.UNSCHEDULABLE,
            tuple(reason for reason, hit in zip(reasons, combo[1:], strict=True) if hit),
        )
        for combo in combos.T
    )
    return FilterResult(~failed, status_index, statuses)


# ---- queueing hints (isSchedulableAfterPodEvent / isSchedulableAfterNodeChange) -----------------


def _max_request(pod: Pod) -> dict[str, int]:
    request = PodRequest.of(pod)
    out = {CPU: request.milli_cpu, MEMORY: request.memory, EPHEMERAL_STORAGE: request.ephemeral_storage}
    out.update(request.scalars)
    return out


def after_pod_event(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A deleted scheduled pod frees room; a scaled-down one only if it shrank what `pod` requests."""
    if not isinstance(old, Pod) or (new is not None and not isinstance(new, Pod)):
        return QueueingHint.QUEUE
    if new is None:
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
    if new.uid == pod.uid:
        return QueueingHint.QUEUE
    if not new.node_name:
        return QueueingHint.SKIP
    before, after = _max_request(old), _max_request(new)
    for resource, quantity in pod.requests.items():
        if quantity == 0 or (
            resource not in (CPU, MEMORY, EPHEMERAL_STORAGE) and not is_scalar_resource_name(resource)
        ):
            continue
        if before.get(resource, 0) > after.get(resource, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _node_allocatable(node: Node) -> dict[str, int]:
    """framework.NewResource(allocatable): only the resources NodeInfo keeps."""
    return {
        name: value
        for name, value in node.allocatable.items()
        if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) or is_scalar_resource_name(name)
    }


def _left_to_dra(name: str, allocatable: dict[str, int], dra_served: frozenset[str]) -> bool:
    """shouldDelegateResourceToDRA on a node: served by a class and not listed by the node."""
    return name in dra_served and allocatable.get(name, 0) <= 0


def fits_empty_node(pod: Pod, node: Node, dra_served: frozenset[str] = frozenset()) -> bool:
    """isFit: would the pod pass Filter on this node with no pods on it (no ignored resources)."""
    allocatable = _node_allocatable(node)
    if allocatable.get(PODS, 0) < 1:
        return False
    request = PodRequest.of(pod)
    return all(
        q <= allocatable.get(n, 0) or _left_to_dra(n, allocatable, dra_served)
        for n, q in request.checked(frozenset(), frozenset())
    )


def _requested_resources_increased(pod: Pod, old: Node, new: Node, dra_served: frozenset[str]) -> bool:
    before, after = _node_allocatable(old), _node_allocatable(new)
    if after.get(PODS, 0) > before.get(PODS, 0):
        return True
    request = PodRequest.of(pod)
    if request.empty:
        return False
    checked = request.checked(frozenset(), frozenset())
    return any(after.get(n, 0) > before.get(n, 0) or _left_to_dra(n, after, dra_served) for n, _ in checked)


def after_node_change(pod: Pod, old: Any, new: Any, dra_served: frozenset[str] = frozenset()) -> QueueingHint:
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return QueueingHint.QUEUE
    if not fits_empty_node(pod, new, dra_served):
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    if not _requested_resources_increased(pod, old, new, dra_served):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def after_device_class_event(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """isSchedulableAfterDeviceClassEvent: a class now serving a resource the pod asks for."""
    if not isinstance(new, DeviceClass) or (old is not None and not isinstance(old, DeviceClass)):
        return QueueingHint.QUEUE
    requests = pod.requests
    if old is not None:
        if (old.extended_resource_name or "") == (new.extended_resource_name or ""):
            return QueueingHint.SKIP
    elif DEVICE_CLASS_PREFIX + new.name in requests:
        return QueueingHint.QUEUE
    if new.extended_resource_name is not None and new.extended_resource_name in requests:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
