"""DynamicResources, held: until DRA is implemented, a pod with spec.resourceClaims is never
bound. PreFilter rejects it as UnschedulableAndUnresolvable with a message saying why.

For pods without claims it behaves as upstream's plugin does for them: PreFilter skips, Score
is 0 and PostFilter answers "no new claims to deallocate" (which shows in FailedScheduling
messages, as with a real kube-scheduler v1.35).
"""

from __future__ import annotations

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, unresolvable, unschedulable
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows

ERR_REASON_UNSUPPORTED = "resource claims (spec.resourceClaims) are not supported yet by this scheduler"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
):
    name = "DynamicResources"

    def pre_enqueue(self, pod: Pod) -> Status:
        return SUCCESS

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        if not pod.resource_claims:
            return None, SKIP
        return None, unresolvable(ERR_REASON_UNSUPPORTED)

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        return FilterResult.all_pass(len(rows))

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        return None, unschedulable(NO_CLAIMS_TO_DEALLOCATE)

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.zeros(len(rows), dtype=np.int64)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return SUCCESS
