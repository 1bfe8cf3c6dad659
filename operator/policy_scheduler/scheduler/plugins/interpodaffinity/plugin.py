"""InterPodAffinity (kube-scheduler v1.35.4 plugins/interpodaffinity), batch form.

Complexity: see filtering.py and scoring.py; the index (index.py) is shared by all profiles
on one NodeTable and updated incrementally on every pod add/remove.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, error, unresolvable
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from policy_scheduler.scheduler.plugins.interpodaffinity.filtering import (
    PreFilterState,
    existing_anti_affinity_counts,
    filter_rows,
    incoming_counts,
)
from policy_scheduler.scheduler.plugins.interpodaffinity.index import AffinityIndex
from policy_scheduler.scheduler.plugins.interpodaffinity.scoring import (
    PreScoreState,
    build_topology_score,
    has_preferred_constraints,
    normalize,
    score_rows,
)
from policy_scheduler.scheduler.plugins.interpodaffinity.selectors import SelectorError
from policy_scheduler.scheduler.plugins.interpodaffinity.terms import (
    AffinityTerm,
    PodTerms,
    matches_all,
    new_term,
    parse_pod_terms,
    resolve_pod_terms,
)

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def _not_found(key: str) -> str:
    return f'error reading "{key}" from cycleState: not found'


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    signs_pods = True
    has_extensions = True
    args_type = InterPodAffinityArgs

    def __init__(self, handle: Handle, args: InterPodAffinityArgs) -> None:
        super().__init__(handle, args)
        self.hard_pod_affinity_weight = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self.index = AffinityIndex.of(handle.table)

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        affinity = pod.affinity
        if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
        ):
            return None  # "pods with InterPodAffinity are not signable"
        if self.ignore_preferred_terms_of_existing_pods:
            return ()
        return (("Labels", pod.labels),)

    def _ns_labels(self, namespace: str) -> Mapping[str, str] | None:
        """GetNamespaceLabelsSnapshot: unknown namespaces have no labels."""
        return self.handle.namespace_labels.get(namespace)

    # ---- PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        terms, err = parse_pod_terms(pod)
        if err is not None:
            return None, unresolvable(f"parsing pod: {err}")
        if (
            not terms.required_affinity
            and not terms.required_anti_affinity
            and not len(self.index.required_anti_affinity)
        ):
            return None, SKIP  # nothing to count: no pod-wide scan at all
        resolved = resolve_pod_terms(
            PodTerms(terms.required_affinity, terms.required_anti_affinity), self.handle.namespace_labels
        )
        ns_labels = self._ns_labels(pod.namespace)
        existing = existing_anti_affinity_counts(self.index, pod, ns_labels)
        affinity, anti = incoming_counts(self.index, resolved)
        if existing.empty() and not resolved.required_affinity and not resolved.required_anti_affinity:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(pod, resolved, ns_labels, existing, affinity, anti))
        return None, SUCCESS

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | None:
        value = state.read(PRE_FILTER_STATE_KEY)
        return value if isinstance(value, PreFilterState) else None

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        s = self._pre_filter_state(state)
        if s is None:
            return error(_not_found(PRE_FILTER_STATE_KEY))
        s.update_with_pod(self.table, added, row, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        s = self._pre_filter_state(state)
        if s is None:
            return error(_not_found(PRE_FILTER_STATE_KEY))
        s.update_with_pod(self.table, removed, row, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        s = self._pre_filter_state(state)
        if s is None:
            return FilterResult.reject_all(len(rows), error(_not_found(PRE_FILTER_STATE_KEY)))
        return filter_rows(self.table, s, rows)

    # ---- PreScore / Score --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        has_constraints = has_preferred_constraints(pod)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        terms, err = parse_pod_terms(pod)
        if err is not None:
            return error(f"failed to parse pod: {err}")
        resolved = resolve_pod_terms(
            PodTerms(
                preferred_affinity=terms.preferred_affinity,
                preferred_anti_affinity=terms.preferred_anti_affinity,
            ),
            self.handle.namespace_labels,
        )
        built = build_topology_score(
            self.index, pod, resolved, self._ns_labels(pod.namespace), self.hard_pod_affinity_weight
        )
        if not built.touched:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, built)
        return SUCCESS

    def _pre_score_state(self, state: CycleState) -> PreScoreState | None:
        value = state.read(PRE_SCORE_STATE_KEY)
        return value if isinstance(value, PreScoreState) else None

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        s = self._pre_score_state(state)
        if s is None:
            raise RuntimeError(_not_found(PRE_SCORE_STATE_KEY))
        return score_rows(self.table, s, rows)

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        s = self._pre_score_state(state)
        if s is None:
            raise RuntimeError(_not_found(PRE_SCORE_STATE_KEY))
        return normalize(s, scores)

    # ---- queueing hints ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Queueing hints are on, so Node/UpdateNodeTaint is not registered (as upstream then).
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if (new is not None and not new.node_name) or (old is not None and not old.node_name):
            return QueueingHint.SKIP  # an unscheduled pod changes nothing
        parsed = _required_terms(pod)
        if parsed is None:
            return QueueingHint.QUEUE
        terms, anti_terms = parsed
        if new is not None and old is not None:
            if not matches_all(terms, old) and matches_all(terms, new):
                return QueueingHint.QUEUE
            if matches_all(anti_terms, old) and not matches_all(anti_terms, new):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if matches_all(terms, new) else QueueingHint.SKIP
        return QueueingHint.QUEUE if matches_all(anti_terms, old) else QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        parsed = _required_terms(pod)
        if parsed is None:
            return QueueingHint.QUEUE
        terms, anti_terms = parsed
        old_labels = old.labels if isinstance(old, Node) else None
        new_labels = new.labels if isinstance(new, Node) else {}
        for t in terms:
            key = t.topology_key
            if old_labels is None:
                if key in new_labels:
                    return QueueingHint.QUEUE  # a new node with the affinity topology key
                continue
            if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.QUEUE  # the node gained the key or moved to another domain
        for t in anti_terms:
            key = t.topology_key
            if old_labels is None:
                return QueueingHint.QUEUE  # any new node may be outside the hated domains
            if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
                return QueueingHint.QUEUE  # the node left the domain or lost the key
        return QueueingHint.SKIP


def _required_terms(pod: Pod) -> tuple[tuple[AffinityTerm, ...], tuple[AffinityTerm, ...]] | None:
    """fwk.GetAffinityTerms for the required lists (namespace selectors not unrolled); None when
    a selector does not parse (the hints then queue, as upstream on error)."""
    a = pod.affinity
    try:
        terms = tuple(new_term(pod, t) for t in a.pod_affinity.required) if a and a.pod_affinity else ()
        anti = (
            tuple(new_term(pod, t) for t in a.pod_anti_affinity.required) if a and a.pod_anti_affinity else ()
        )
    except SelectorError:
        return None
    return terms, anti
