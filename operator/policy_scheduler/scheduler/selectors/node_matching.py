"""Node-selector matching (k8s.io/component-helpers nodeaffinity v0.35.4), vectorized over NodeTable
rows, plus a one-node form for queueing hints. A term that fails validation matches nothing
(LazyErrorNodeSelector).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.model import (
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Requirement,
)
from policy_scheduler.scheduler.nodetable import ABSENT, BoolArray, IntArray, NodeTable, Rows
from policy_scheduler.scheduler.selectors.validation import (
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    GT,
    IN,
    LT,
    NOT_IN,
    OBJECT_NAME_FIELD,
    is_empty_term,
    parse_int64,
    term_errors,
)

# ---- vectorized node matching ---------------------------------------------------------------

# Per table and label key: parsed integer of every label value code (append-only, like the codes).
_INT_VALUES: weakref.WeakKeyDictionary[NodeTable, dict[str, tuple[IntArray, BoolArray]]] = (
    weakref.WeakKeyDictionary()
)


def _int_values(table: NodeTable, key: str) -> tuple[IntArray, BoolArray]:
    """(value, parsed-ok) per label value code of `key`; cached, extended as new values appear."""
    per_key = _INT_VALUES.setdefault(table, {})
    values = table.label_values(key)
    cached = per_key.get(key)
    if cached is not None and len(cached[0]) == len(values):
        return cached
    start = 0 if cached is None else len(cached[0])
    parsed = [parse_int64(v) for v in values[start:]]
    ints = np.fromiter((0 if p is None else p for p in parsed), dtype=np.int64, count=len(parsed))
    ok = np.fromiter((p is not None for p in parsed), dtype=np.bool_, count=len(parsed))
    if cached is not None:
        ints = np.concatenate([cached[0], ints])
        ok = np.concatenate([cached[1], ok])
    per_key[key] = (ints, ok)
    return ints, ok


def _value_codes(table: NodeTable, key: str, values: Iterable[str]) -> list[int]:
    codes = (table.label_value_code(key, v) for v in set(values))
    return [c for c in codes if c is not None]


def _codes_in(codes: npt.NDArray[np.int32], wanted: list[int]) -> BoolArray:
    if not wanted:
        return np.zeros(len(codes), dtype=np.bool_)
    if len(wanted) == 1:
        equal: BoolArray = codes == wanted[0]
        return equal
    return np.isin(codes, wanted)


def match_requirement(table: NodeTable, rows: Rows, req: Requirement) -> BoolArray:
    """labels.Requirement.Matches on each row's labels (the requirement is assumed valid, except
    that Gt/Lt with an unparsable value or label match nothing, as upstream)."""
    codes = table.label_codes(req.key)[rows]
    op = req.operator
    if op in (IN, EQUALS):
        return _codes_in(codes, _value_codes(table, req.key, req.values))
    if op == NOT_IN:
        return ~_codes_in(codes, _value_codes(table, req.key, req.values))
    if op in (EXISTS, DOES_NOT_EXIST):
        present: BoolArray = codes != ABSENT
        return present if op == EXISTS else ~present
    if op in (GT, LT):
        bound = parse_int64(req.values[0]) if len(req.values) == 1 else None
        if bound is None:
            return np.zeros(len(rows), dtype=np.bool_)
        ints, ok = _int_values(table, req.key)
        hit = ok & (ints > bound if op == GT else ints < bound)
        lut = np.concatenate([np.zeros(1, dtype=np.bool_), hit])  # slot 0 is ABSENT (-1)
        return lut[codes + 1]
    return np.zeros(len(rows), dtype=np.bool_)


def match_field_requirement(table: NodeTable, rows: Rows, req: Requirement) -> BoolArray:
    """A matchFields entry (validated: In/NotIn with one value). Nodes only expose metadata.name;
    any other key reads as the empty string, as fields.Set does."""
    value = req.values[0]
    if req.key == OBJECT_NAME_FIELD:
        target = table.index.get(value)
        equal = rows == target if target is not None else np.zeros(len(rows), dtype=np.bool_)
    else:
        equal = np.full(len(rows), value == "", dtype=np.bool_)
    return equal if req.operator == IN else ~equal


def match_node_selector_term(table: NodeTable, rows: Rows, term: NodeSelectorTerm) -> BoolArray:
    """One term: expressions ANDed with fields. Empty or unparsable terms match nothing."""
    if is_empty_term(term) or term_errors(term):
        return np.zeros(len(rows), dtype=np.bool_)
    result = np.ones(len(rows), dtype=np.bool_)
    for req in term.match_expressions:
        result &= match_requirement(table, rows, req)
    if term.match_fields:
        fields = np.ones(len(rows), dtype=np.bool_)
        for req in term.match_fields:
            fields &= match_field_requirement(table, rows, req)
        unnamed = table.index.get("")
        if unnamed is not None:
            fields |= rows == unnamed  # a node without a name has no fields: they are not checked
        result &= fields
    return result


def match_node_selector_terms(table: NodeTable, rows: Rows, terms: Iterable[NodeSelectorTerm]) -> BoolArray:
    """Terms ORed (LazyErrorNodeSelector.Match); no terms match nothing."""
    result = np.zeros(len(rows), dtype=np.bool_)
    for term in terms:
        result |= match_node_selector_term(table, rows, term)
    return result


def match_node_labels(table: NodeTable, rows: Rows, selector: Mapping[str, str]) -> BoolArray:
    """labels.SelectorFromSet(pod.spec.nodeSelector).Matches: every pair present and equal."""
    result = np.ones(len(rows), dtype=np.bool_)
    for key, value in selector.items():
        code = table.label_value_code(key, value)
        if code is None:
            return np.zeros(len(rows), dtype=np.bool_)
        result &= table.label_codes(key)[rows] == code
    return result


def required_terms(pod: Pod) -> tuple[NodeSelectorTerm, ...] | None:
    """spec.affinity.nodeAffinity.requiredDuringScheduling...nodeSelectorTerms; None when unset."""
    node_affinity = pod.affinity.node_affinity if pod.affinity is not None else None
    return None if node_affinity is None else node_affinity.required


def match_required_node_affinity(table: NodeTable, rows: Rows, pod: Pod) -> BoolArray:
    """GetRequiredNodeAffinity(pod).Match on each row (parse errors ignored): nodeSelector AND
    the required terms."""
    result = np.ones(len(rows), dtype=np.bool_)
    if pod.node_selector:
        result &= match_node_labels(table, rows, pod.node_selector)
    terms = required_terms(pod)
    if terms is not None:
        result &= match_node_selector_terms(table, rows, terms)
    return result


def preferred_terms_score(table: NodeTable, rows: Rows, terms: Iterable[PreferredSchedulingTerm]) -> IntArray:
    """PreferredSchedulingTerms.Score: the sum of the weights of matching terms.
    Terms with weight 0 or an empty preference are ignored; callers validate beforehand."""
    score = np.zeros(len(rows), dtype=np.int64)
    for term in terms:
        if term.weight == 0 or is_empty_term(term.preference):
            continue
        score += term.weight * match_node_selector_term(table, rows, term.preference)
    return score


# ---- one node at a time (queueing hints) -----------------------------------------------------


def requirement_matches_labels(req: Requirement, labels: Mapping[str, str]) -> bool:
    """labels.Requirement.Matches."""
    op = req.operator
    value = labels.get(req.key)
    if op in (IN, EQUALS):
        return value is not None and value in req.values
    if op == NOT_IN:
        return value is None or value not in req.values
    if op == EXISTS:
        return value is not None
    if op == DOES_NOT_EXIST:
        return value is None
    if op in (GT, LT):
        if value is None or len(req.values) != 1:
            return False
        have, bound = parse_int64(value), parse_int64(req.values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == GT else have < bound
    return False


def node_matches_term(node: Node, term: NodeSelectorTerm) -> bool:
    if is_empty_term(term) or term_errors(term):
        return False
    if not all(requirement_matches_labels(r, node.labels) for r in term.match_expressions):
        return False
    if term.match_fields and node.name:
        for req in term.match_fields:
            have = node.name if req.key == OBJECT_NAME_FIELD else ""
            if (have == req.values[0]) != (req.operator == IN):
                return False
    return True


def node_matches_terms(node: Node, terms: Iterable[NodeSelectorTerm]) -> bool:
    return any(node_matches_term(node, term) for term in terms)


def node_matches_required_affinity(node: Node, pod: Pod) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node) for one node."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    terms = required_terms(pod)
    return terms is None or node_matches_terms(node, terms)
