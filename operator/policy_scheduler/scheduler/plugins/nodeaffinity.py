"""NodeAffinity: pod nodeSelector and node affinity (required filter, preferred score), plus the
scheduler-enforced `addedAffinity` plugin argument."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.field_errors import Problem
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    unexpected_objects,
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
    default_normalize,
)
from policy_scheduler.scheduler.framework.plugin_args import PluginArgs
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, error, unresolvable
from policy_scheduler.scheduler.model import (
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Requirement,
)
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.selectors import (
    IN,
    OBJECT_NAME_FIELD,
    aggregate_message,
    match_node_selector_terms,
    match_required_node_affinity,
    node_matches_required_affinity,
    node_matches_terms,
    node_selector_problems,
    preferred_terms_errors,
    preferred_terms_problems,
    preferred_terms_score,
    required_terms,
)

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
PRE_SCORE_KEY = "PreScoreNodeAffinity"

_ADDED_REQUIRED_PATH = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_ADDED_PREFERRED_PATH = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"


# ---- args: k8s JSON-shaped NodeAffinity → model ----------------------------------------------


def _requirements(raw: Any) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(str(r["key"]), str(r["operator"]), tuple(str(v) for v in r.get("values") or ()))
        for r in raw or ()
    )


def parse_node_selector_term(raw: Mapping[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=_requirements(raw.get("matchExpressions")),
        match_fields=_requirements(raw.get("matchFields")),
    )


def parse_node_affinity(raw: Mapping[str, Any]) -> model.NodeAffinity:
    """A v1.NodeAffinity in its JSON form (camelCase keys)."""
    try:
        selector = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
        required = (
            None
            if selector is None
            else tuple(parse_node_selector_term(t or {}) for t in selector.get("nodeSelectorTerms") or ())
        )
        preferred = tuple(
            PreferredSchedulingTerm(
                int(p.get("weight", 0)), parse_node_selector_term(p.get("preference") or {})
            )
            for p in raw.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"invalid addedAffinity: {exc!r}") from exc
    return model.NodeAffinity(required=required, preferred=preferred)


def _term_json(term: NodeSelectorTerm) -> dict[str, Any]:
    def reqs(rs: Sequence[Requirement]) -> list[dict[str, Any]]:
        return [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in rs]

    out: dict[str, Any] = {}
    if term.match_expressions:
        out["matchExpressions"] = reqs(term.match_expressions)
    if term.match_fields:
        out["matchFields"] = reqs(term.match_fields)
    return out


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs(PluginArgs):
    added_affinity: model.NodeAffinity | None = None

    @classmethod
    def defaulted(cls, raw: Mapping[str, Any]) -> Self:
        """NodeAffinityArgs has no v1 defaults."""
        added = raw.get("addedAffinity")
        return cls(None if added is None else parse_node_affinity(added))

    def problems(self) -> list[Problem]:
        """ValidateNodeAffinityArgs: NewNodeSelector and NewPreferredSchedulingTerms."""
        added = self.added_affinity
        if added is None:
            return []
        found: list[Problem] = []
        if added.required is not None:
            found += node_selector_problems(added.required, _ADDED_REQUIRED_PATH)
        return found + preferred_terms_problems(added.preferred, _ADDED_PREFERRED_PATH)

    def to_json(self) -> dict[str, Any]:
        added = self.added_affinity
        if added is None:
            return {}
        out: dict[str, Any] = {}
        if added.required is not None:
            out["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [_term_json(t) for t in added.required]
            }
        if added.preferred:
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": p.weight, "preference": _term_json(p.preference)} for p in added.preferred
            ]
        return {"addedAffinity": out}


def _preferred_terms(pod: Pod) -> tuple[PreferredSchedulingTerm, ...]:
    node_affinity = pod.affinity.node_affinity if pod.affinity is not None else None
    return () if node_affinity is None else node_affinity.preferred


def _node_names_of_required(terms: Sequence[NodeSelectorTerm]) -> set[str] | None:
    """Nodes named by matchFields metadata.name In in every term; None when a term names none."""
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == IN:
                # ANDed requirements within a term: intersect.
                term_names = set(req.values) if term_names is None else term_names & set(req.values)
        if term_names is None:
            return None  # terms are ORed, and this one allows every node
        names |= term_names
    return names


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = "NodeAffinity"
    node_only = True  # reads the node object only
    signs_pods = True
    args_type = NodeAffinityArgs

    def __init__(self, handle: Handle, args: NodeAffinityArgs) -> None:
        super().__init__(handle, args)
        added = args.added_affinity
        self.added_required: tuple[NodeSelectorTerm, ...] | None = None if added is None else added.required
        self.added_preferred: tuple[PreferredSchedulingTerm, ...] | None = (
            None if added is None else added.preferred or None
        )

    # ---- filtering -----------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        node_affinity = pod.affinity.node_affinity if pod.affinity is not None else None
        return (("NodeAffinity", node_affinity), ("NodeSelector", pod.node_selector))

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        terms = required_terms(pod)
        if terms is None and self.added_required is None and not pod.node_selector:
            return None, SKIP
        if not terms:
            return None, SUCCESS
        names = _node_names_of_required(terms)
        if names is None:
            return None, SUCCESS
        if not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names)), SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        # Filter needs nothing from PreFilter: both selectors are matched straight from the pod.
        passed = match_required_node_affinity(self.table, rows, pod)
        if self.added_required is None:
            return FilterResult.reject_where(~passed, unresolvable(ERR_REASON_POD))
        enforced = match_node_selector_terms(self.table, rows, self.added_required)
        status_index = np.where(enforced, 1, 0).astype(np.int32)  # the enforced check comes first
        return FilterResult(
            passed & enforced, status_index, (unresolvable(ERR_REASON_ENFORCED), unresolvable(ERR_REASON_POD))
        )

    # ---- scoring -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        preferred = _preferred_terms(pod)
        errs = preferred_terms_errors(preferred)
        if errs:
            return error(aggregate_message(errs))
        if not preferred and self.added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_KEY, preferred)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        scores = np.zeros(len(rows), dtype=np.int64)
        if self.added_preferred is not None:
            scores += preferred_terms_score(self.table, rows, self.added_preferred)
        preferred = state.read(PRE_SCORE_KEY)
        if preferred is None:  # PreScore not run
            preferred = _preferred_terms(pod)
        return scores + preferred_terms_score(self.table, rows, preferred)

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize(scores)

    # ---- queueing hints ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # The queueing-hint variant (SchedulerQueueingHints is GA and locked on in v1.35).
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL), self._after_node_change
            )
        ]

    def _after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Node):
            return QueueingHint.QUEUE
        if self.added_required is not None and not node_matches_terms(new, self.added_required):
            return QueueingHint.SKIP
        if not node_matches_required_affinity(new, pod):
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        # An update only helps when it turns a non-matching node into a matching one.
        return QueueingHint.SKIP if node_matches_required_affinity(old, pod) else QueueingHint.QUEUE
