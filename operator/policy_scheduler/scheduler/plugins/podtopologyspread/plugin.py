"""The PodTopologySpread plugin (upstream plugin.go): constraints, extension points, events.

Default constraints (args `defaultingType` System or List + `defaultConstraints`) apply to pods
without constraints of their own and take their selector from the `owner_selectors` handle
service: a callable (pod) -> model.LabelSelector | None returning the merged selector of the
Services, ReplicationController, ReplicaSet and StatefulSet selecting the pod (see
common.default_selector). Without the service, or when it returns None or an empty selector,
default constraints are skipped, as upstream does for an empty selector.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, error
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from policy_scheduler.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    Constraint,
    filter_constraints,
    owner_selector,
    pod_index,
)
from policy_scheduler.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    compute_pre_filter_state,
    filter_rows,
)
from policy_scheduler.scheduler.plugins.podtopologyspread.matching import is_empty
from policy_scheduler.scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    compute_pre_score_state,
    normalize,
    score_rows,
)
from policy_scheduler.scheduler.selectors import SelectorError

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    signs_pods = True
    has_extensions = True
    args_type = PodTopologySpreadArgs

    def __init__(self, handle: Handle, args: PodTopologySpreadArgs) -> None:
        super().__init__(handle, args)
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else args.default_constraints
        )
        self.index = pod_index(handle.table)

    # ---- constraints ---------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        if pod.topology_spread_constraints or self.default_constraints:
            return None  # "pods with (default) topology constraints are not signable"
        return ()

    def _build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """buildDefaultConstraints: the defaults with `action`, selecting the pod's owners' pods."""
        constraints = filter_constraints(self.default_constraints, pod.labels, action)
        if not constraints:
            return []
        selector = owner_selector(self.handle.services, pod)
        if is_empty(selector):
            return []
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in constraints
        ]

    def constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """getConstraints (and the soft half of initPreScoreState). Raises SelectorError."""
        if pod.topology_spread_constraints:
            return filter_constraints(pod.topology_spread_constraints, pod.labels, action)
        return self._build_default_constraints(pod, action)

    # ---- filtering -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as err:
            return None, error(
                f"get constraints from pod: obtaining pod's hard topology spread constraints: {err}"
            )
        if not constraints:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, compute_pre_filter_state(self.table, self.index, pod, constraints))
        return None, SUCCESS

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | None:
        value = state.read(PRE_FILTER_STATE_KEY)
        return value if isinstance(value, PreFilterState) else None

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        return self._update(state, pod, added, row, 1)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        return self._update(state, pod, removed, row, -1)

    def _update(self, state: CycleState, pod: Pod, other: Pod, row: int, delta: int) -> Status:
        s = self._pre_filter_state(state)
        if s is None:
            return error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        s.update(self.table, row, other, pod, delta)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        s = self._pre_filter_state(state)
        if s is None:
            return FilterResult.reject_all(
                len(rows), error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
            )
        if not s.constraints:
            return FilterResult.all_pass(len(rows))
        return filter_rows(self.table, s, pod, rows)

    # ---- scoring -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        if self.table.n == 0:
            return SKIP
        # Only non-system-default rules require every topology key: nodes without a zone
        # label still get hostname spreading under the system defaults.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            return error(
                f"calculating preScoreState: obtaining pod's soft topology spread constraints: {err}"
            )
        if not constraints:
            return SKIP
        rows = np.asarray(rows, dtype=np.intp)
        s = compute_pre_score_state(self.table, self.index, pod, constraints, rows, require_all)
        state.write(PRE_SCORE_STATE_KEY, s)
        return SUCCESS

    def _pre_score_state(self, state: CycleState) -> PreScoreState | None:
        value = state.read(PRE_SCORE_STATE_KEY)
        return value if isinstance(value, PreScoreState) else None

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        s = self._pre_score_state(state)
        if s is None:  # PreScore skipped: nothing to spread
            return np.zeros(len(rows), dtype=np.int64)
        return score_rows(self.table, self.index, s, pod, rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        s = self._pre_score_state(state)
        return scores if s is None else normalize(s, scores)

    # ---- queueing hints ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = Action.ADD | Action.UPDATE_POD_LABEL | Action.UPDATE_POD_TOLERATION | Action.DELETE
        node_actions = Action.ADD | Action.DELETE | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, node_actions), self.is_schedulable_after_node_change
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        original = old if isinstance(old, Pod) else None
        modified = new if isinstance(new, Pod) else None
        if (modified is not None and not _involved(modified, pod)) or (
            original is not None and not _involved(original, pod)
        ):
            return QueueingHint.SKIP
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        if modified is not None and original is not None:
            if (
                _same_pod(pod, modified)
                and modified.tolerations != original.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE  # a new toleration can widen the counted nodes
            if modified.labels == original.labels:
                return QueueingHint.SKIP
            changed = any(
                c.selector.matches(original.labels) != c.selector.matches(modified.labels)
                for c in constraints
            )
            return QueueingHint.QUEUE if changed else QueueingHint.SKIP
        changed_pod = modified if modified is not None else original
        if changed_pod is None:
            return QueueingHint.QUEUE
        matches = any(c.selector.matches(changed_pod.labels) for c in constraints)
        return QueueingHint.QUEUE if matches else QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        original = old if isinstance(old, Node) else None
        modified = new if isinstance(new, Node) else None
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        original_matching = original is not None and _has_keys(original, constraints)
        modified_matching = modified is not None and _has_keys(modified, constraints)
        if original is not None and modified is not None:
            if original_matching != modified_matching:
                return QueueingHint.QUEUE
            if modified_matching and (
                any(
                    original.labels.get(c.topology_key, "") != modified.labels.get(c.topology_key, "")
                    for c in constraints
                )
                or original.taints != modified.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if modified is not None:
            return QueueingHint.QUEUE if modified_matching else QueueingHint.SKIP
        return QueueingHint.QUEUE if original_matching else QueueingHint.SKIP


def _same_pod(a: Pod, b: Pod) -> bool:
    """UID equality; pods built without a UID (tests, simulate) compare by namespace/name."""
    return a.uid == b.uid if a.uid and b.uid else a.key == b.key


def _involved(incoming: Pod, pod_with_spreading: Pod) -> bool:
    """involvedInTopologySpreading."""
    return _same_pod(incoming, pod_with_spreading) or (
        incoming.node_name != "" and incoming.namespace == pod_with_spreading.namespace
    )


def _has_keys(node: Node, constraints: list[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints."""
    return all(c.topology_key in node.labels for c in constraints)
