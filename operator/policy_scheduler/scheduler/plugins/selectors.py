"""Node-selector and label-selector matching, vectorized over NodeTable rows.

Semantics follow k8s.io/component-helpers nodeaffinity (v0.35.4) and apimachinery's labels /
metav1.LabelSelectorAsSelector: requirements are validated like labels.NewRequirement, and a
term that fails validation matches nothing (LazyErrorNodeSelector). Error texts follow
apimachinery's field.Error / aggregate formatting.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.model import (
    LabelSelector,
    Node,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Requirement,
)
from policy_scheduler.scheduler.nodetable import ABSENT, BoolArray, IntArray, NodeTable, Rows

OBJECT_NAME_FIELD = "metadata.name"
IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
NODE_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_SELECTOR_OPERATORS = (IN, NOT_IN)
LABEL_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
_EQUALS = "="  # internal: matchLabels entries and pod.spec.nodeSelector

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_GO_DECIMAL = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """A selector that labels.NewRequirement / LabelSelectorAsSelector would reject."""


# ---- validation (apimachinery api/validate/content) ---------------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)


def _regex_error(msg: str, regex: str, *examples: str) -> str:
    """content.RegexError, including its double space before 'or'."""
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{regex}')"


def label_key_errors(key: str) -> list[str]:
    """content.IsLabelKey."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append(
                    "prefix part "
                    + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """content.IsLabelValue."""
    errs: list[str] = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign and ASCII digits only, int64 range."""
    if not _GO_DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _go_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _invalid(path: str, value: object, detail: str) -> str:
    return f"{path}: Invalid value: {_go_value(value)}: {detail}"


def _not_supported(path: str, value: str, valid: Sequence[str]) -> str:
    return f"{path}: Unsupported value: {_go_value(value)}: supported values: " + ", ".join(
        json.dumps(v) for v in valid
    )


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def aggregate_message(errors: Iterable[str]) -> str:
    """utilerrors aggregate Error(): de-duplicated, bracketed when more than one."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def _new_requirement_errors(key: str, operator: str, values: Sequence[str], path: str) -> list[str]:
    """labels.NewRequirement's validation; `operator` is one of ours or _EQUALS."""
    errs: list[str] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(_invalid(_child(path, "key"), key, "; ".join(key_errs)))
    values_path = _child(path, "values")
    raw = list(values)
    if operator in (IN, NOT_IN):
        if not raw:
            errs.append(_invalid(values_path, raw, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator == _EQUALS:
        if len(raw) != 1:
            errs.append(_invalid(values_path, raw, "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if raw:
            errs.append(_invalid(values_path, raw, "values set must be empty for exists and does not exist"))
    elif operator in (GT, LT):
        if len(raw) != 1:
            errs.append(_invalid(values_path, raw, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, value in enumerate(raw):
            if parse_int64(value) is None:
                errs.append(
                    _invalid(
                        f"{values_path}[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
    for i, value in enumerate(raw):
        value_errs = label_value_errors(value)
        if value_errs:
            errs.append(_invalid(f"{values_path}[{i}][{key}]", value, "; ".join(value_errs)))
    return errs


def requirement_errors(req: Requirement, path: str = "") -> list[str]:
    """nodeSelectorRequirementsAsSelector for one matchExpressions entry."""
    if req.operator not in NODE_SELECTOR_OPERATORS:
        return [_not_supported(_child(path, "operator"), req.operator, NODE_SELECTOR_OPERATORS)]
    return _new_requirement_errors(req.key, req.operator, req.values, path)


def field_requirement_errors(req: Requirement, path: str = "") -> list[str]:
    """nodeSelectorRequirementsAsFieldSelector for one matchFields entry."""
    if req.operator not in FIELD_SELECTOR_OPERATORS:
        return [_not_supported(_child(path, "operator"), req.operator, FIELD_SELECTOR_OPERATORS)]
    if len(req.values) != 1:
        return [_invalid(_child(path, "values"), list(req.values), "must have one element")]
    return []


@lru_cache(maxsize=4096)
def term_errors(term: NodeSelectorTerm, path: str = "") -> tuple[str, ...]:
    """Parse errors of a non-empty node selector term (newNodeSelectorTerm)."""
    errs: list[str] = []
    for i, req in enumerate(term.match_expressions):
        errs.extend(requirement_errors(req, f"{_child(path, 'matchExpressions')}[{i}]"))
    for i, req in enumerate(term.match_fields):
        errs.extend(field_requirement_errors(req, f"{_child(path, 'matchFields')}[{i}]"))
    return tuple(errs)


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def node_selector_errors(terms: Sequence[NodeSelectorTerm], path: str = "") -> list[str]:
    """NewNodeSelector's eager validation (empty terms are skipped, as upstream)."""
    errs: list[str] = []
    for i, term in enumerate(terms):
        if not is_empty_term(term):
            errs.extend(term_errors(term, f"{_child(path, 'nodeSelectorTerms')}[{i}]"))
    return errs


def preferred_terms_errors(terms: Sequence[PreferredSchedulingTerm], path: str = "") -> list[str]:
    """NewPreferredSchedulingTerms: terms with weight 0 or an empty preference are not parsed."""
    errs: list[str] = []
    for i, term in enumerate(terms):
        if term.weight != 0 and not is_empty_term(term.preference):
            errs.extend(term_errors(term.preference, f"{path}[{i}]"))
    return errs


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
    if op in (IN, _EQUALS):
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
    if op in (IN, _EQUALS):
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


# ---- label selectors for pods (metav1.LabelSelectorAsSelector) -----------------------------------


@dataclass(frozen=True, slots=True)
class CompiledLabelSelector:
    """A parsed metav1.LabelSelector. `nothing` is the nil selector, `everything` the empty one."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()
    everything: bool = False
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, op, values in self.requirements:
            value = labels.get(key)
            if op == IN:
                if value is None or value not in values:
                    return False
            elif op == NOT_IN:
                if value is not None and value in values:
                    return False
            elif op == EXISTS:
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True


MATCH_NOTHING = CompiledLabelSelector(nothing=True)
MATCH_EVERYTHING = CompiledLabelSelector(everything=True)


@lru_cache(maxsize=4096)
def compile_label_selector(selector: LabelSelector | None) -> CompiledLabelSelector:
    """metav1.LabelSelectorAsSelector: None → matches nothing; empty → matches everything.
    Raises SelectorError with the first problem found, as upstream returns on the first error."""
    if selector is None:
        return MATCH_NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return MATCH_EVERYTHING
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for key, value in selector.match_labels:
        errs = _new_requirement_errors(key, _EQUALS, [value], "")
        if errs:
            raise SelectorError(aggregate_message(errs))
        reqs.append((key, IN, frozenset((value,))))
    for expr in selector.match_expressions:
        if expr.operator not in LABEL_SELECTOR_OPERATORS:
            raise SelectorError(f"{_go_value(expr.operator)} is not a valid label selector operator")
        errs = _new_requirement_errors(expr.key, expr.operator, expr.values, "")
        if errs:
            raise SelectorError(aggregate_message(errs))
        reqs.append((expr.key, expr.operator, frozenset(expr.values)))
    return CompiledLabelSelector(tuple(reqs))


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match; None matches nothing, an empty selector everything.
    Raises SelectorError for a selector LabelSelectorAsSelector would reject."""
    return compile_label_selector(selector).matches(labels)
