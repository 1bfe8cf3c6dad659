"""NodeResourcesBalancedAllocation (noderesources/balanced_allocation.go), in batch form.

Favors nodes whose resource usage fractions are close to each other, balance = int64((1 - std)
* 100). v1.35 scores the balance with the pod placed; from v1.36 it scores the improvement the
pod brings, 50 + (50 + balance with the pod - balance without it) / 2: about 75 when the pod
changes nothing, towards 100 when it evens the node out, towards 50 when it skews it. It uses
the pods' actual requests (useRequested), not the 100m/200Mi non-zero defaults, and skips
best-effort pods in PreScore.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.batch import RESOURCES_SIGNER
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    PreScorePlugin,
    ScorePlugin,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from policy_scheduler.scheduler.plugins.noderesources.dra_scoring import DraDeviceCounts
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import (
    FloatArray,
    dra_served_requests,
    pod_resource_requests,
    requested_and_allocatable,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    dra: DraDeviceCounts | None = None  # DRA-backed extended resources among those scored

    def clone(self) -> _PreScoreState:
        return self


def balanced_resource_scorer(requested: IntArray, allocatable: IntArray) -> IntArray:
    """balancedResourceScorer over rows. Float operations run in the same order as the Go loop
    (sums accumulate resource by resource), so results match bit for bit."""
    present = allocatable != 0
    if len(requested) == 2 and present.all():
        # Two resources on every row (cpu and memory, the default): upstream's own shortcut,
        # std = |f0 - f1| / 2, without the general loop's per-resource bookkeeping.
        fractions: FloatArray = np.minimum(requested.astype(np.float64) / allocatable.astype(np.float64), 1.0)
        std = np.abs((fractions[0] - fractions[1]) / 2)
        two: IntArray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        return two
    return balanced_general(requested, allocatable, present)


def balanced_general(requested: IntArray, allocatable: IntArray, present: npt.NDArray[np.bool_]) -> IntArray:
    """balancedResourceScorer for rows that may leave resources out (allocatable 0)."""
    fractions: FloatArray = np.minimum(
        requested.astype(np.float64) / np.where(present, allocatable, 1).astype(np.float64), 1.0
    )
    count = np.zeros(requested.shape[1], dtype=np.int64)
    total = np.zeros(requested.shape[1], dtype=np.float64)
    first = np.zeros(requested.shape[1], dtype=np.float64)
    second = np.zeros(requested.shape[1], dtype=np.float64)
    for i in range(len(requested)):
        fraction = np.where(present[i], fractions[i], 0.0)
        first = np.where(present[i] & (count == 0), fraction, first)
        second = np.where(present[i] & (count == 1), fraction, second)
        total = total + fraction
        count = count + present[i]
    length = np.maximum(count, 1).astype(np.float64)
    mean = total / length
    squares = np.zeros(requested.shape[1], dtype=np.float64)
    for i in range(len(requested)):
        deviation = fractions[i] - mean
        squares = squares + np.where(present[i], deviation * deviation, 0.0)
    std = np.where(
        count == 2,
        np.abs((first - second) / 2),
        np.where(count > 2, np.sqrt(squares / length), 0.0),
    )
    scores: IntArray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return scores


def improvement_score(with_pod: IntArray, without_pod: IntArray) -> IntArray:
    """v1.36's balancedResourceScorer from the balances with and without the pod: both lie in
    [50, 100], so the numerator is never negative and // is Go's division."""
    half = MAX_NODE_SCORE // 2
    score: IntArray = half + (half + with_pod - without_pod) // 2
    return score


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    name = NAME
    signs_pods = True
    args_type = NodeResourcesBalancedAllocationArgs

    def __init__(self, handle: Handle, args: NodeResourcesBalancedAllocationArgs) -> None:
        super().__init__(handle, args)
        self.resources = args.resources
        self.scores_improvement = handle.features.behaviour.balanced_allocation_scores_improvement

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        if dra_served_requests(self.handle, pod):
            return None  # "signature disabled when dra extended resources are used in the cluster"
        return ((RESOURCES_SIGNER, pod.requests),)

    def _pod_requests(self, pod: Pod) -> tuple[int, ...]:
        return tuple(pod_resource_requests(pod, self.resources, True))

    def _dra_counts(self) -> DraDeviceCounts | None:
        return DraDeviceCounts.for_resources(self.handle, self.resources)

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        requests = self._pod_requests(pod)
        if not any(requests):
            # Best-effort pods would otherwise pile onto the same nodes (kubernetes#129138).
            return SKIP
        state.write(
            PRE_SCORE_KEY,
            _PreScoreState(requests, self._dra_counts()),
        )
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        pre = state.read(PRE_SCORE_KEY)
        if not isinstance(pre, _PreScoreState):
            pre = _PreScoreState(self._pod_requests(pod), self._dra_counts())
        requests = pre.pod_requests
        if not any(requests):
            return np.zeros(len(rows), dtype=np.int64)
        dra = pre.dra.capacity_and_allocated if pre.dra is not None else None
        requested, allocatable = requested_and_allocatable(
            self.table, rows, self.resources, requests, True, dra
        )
        with_pod = balanced_resource_scorer(requested, allocatable)
        if not self.scores_improvement:
            return with_pod
        allocated = np.where(allocatable != 0, requested - np.asarray(requests, dtype=np.int64)[:, None], 0)
        return improvement_score(with_pod, balanced_resource_scorer(allocated, allocatable))
