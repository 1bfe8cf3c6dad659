"""labels.NewRequirement / nodeSelectorRequirementsAsSelector validation (apimachinery v0.35.4).

Error texts follow apimachinery's field.Error and aggregate formatting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from policy_scheduler.scheduler.field_errors import (
    Problem,
    child_path,
)
from policy_scheduler.scheduler.model import (
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    Requirement,
)

OBJECT_NAME_FIELD = "metadata.name"
IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
NODE_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_SELECTOR_OPERATORS = (IN, NOT_IN)
LABEL_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)
EQUALS = "="  # internal: matchLabels entries and pod.spec.nodeSelector

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


def new_requirement_problems(key: str, operator: str, values: Sequence[str]) -> list[Problem]:
    """labels.NewRequirement's validation; `operator` is one of ours or EQUALS."""
    problems: list[Problem] = []
    key_errs = label_key_errors(key)
    if key_errs:
        problems.append(Problem("key", key, "; ".join(key_errs)))
    raw = list(values)
    if operator in (IN, NOT_IN):
        if not raw:
            problems.append(Problem("values", raw, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator == EQUALS:
        if len(raw) != 1:
            problems.append(Problem("values", raw, "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if raw:
            problems.append(Problem("values", raw, "values set must be empty for exists and does not exist"))
    elif operator in (GT, LT):
        if len(raw) != 1:
            problems.append(Problem("values", raw, "for 'Gt', 'Lt' operators, exactly one value is required"))
        # strconv.ParseInt(v, 10, 64): an int64, not just digits.
        problems.extend(
            Problem(f"values[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer")
            for i, value in enumerate(raw)
            if parse_int64(value) is None
        )
    for i, value in enumerate(raw):
        value_errs = label_value_errors(value)
        if value_errs:
            problems.append(Problem(f"values[{i}][{key}]", value, "; ".join(value_errs)))
    return problems


def new_requirement_errors(key: str, operator: str, values: Sequence[str], path: str) -> list[str]:
    return [p.error(path) for p in new_requirement_problems(key, operator, values)]


def node_requirement_problems(key: str, operator: str, values: Sequence[str]) -> list[Problem]:
    """nodeSelectorRequirementsAsSelector for one matchExpressions entry."""
    if operator not in NODE_SELECTOR_OPERATORS:
        return [Problem("operator", operator, "", NODE_SELECTOR_OPERATORS)]
    return new_requirement_problems(key, operator, values)


def field_requirement_problems(operator: str, values: Sequence[str]) -> list[Problem]:
    """nodeSelectorRequirementsAsFieldSelector for one matchFields entry."""
    if operator not in FIELD_SELECTOR_OPERATORS:
        return [Problem("operator", operator, "", FIELD_SELECTOR_OPERATORS)]
    if len(values) != 1:
        return [Problem("values", list(values), "must have one element")]
    return []


def requirement_errors(req: Requirement, path: str = "") -> list[str]:
    return [p.error(path) for p in node_requirement_problems(req.key, req.operator, req.values)]


def field_requirement_errors(req: Requirement, path: str = "") -> list[str]:
    return [p.error(path) for p in field_requirement_problems(req.operator, req.values)]


@lru_cache(maxsize=4096)
def term_problems(term: NodeSelectorTerm) -> tuple[Problem, ...]:
    """Parse problems of a non-empty node selector term (newNodeSelectorTerm), paths relative to it."""
    found: list[Problem] = []
    for i, req in enumerate(term.match_expressions):
        base = f"matchExpressions[{i}]"
        found.extend(p.under(base) for p in node_requirement_problems(req.key, req.operator, req.values))
    for i, req in enumerate(term.match_fields):
        found.extend(
            p.under(f"matchFields[{i}]") for p in field_requirement_problems(req.operator, req.values)
        )
    return tuple(found)


@lru_cache(maxsize=4096)
def term_errors(term: NodeSelectorTerm, path: str = "") -> tuple[str, ...]:
    return tuple(p.error(path) for p in term_problems(term))


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def node_selector_problems(terms: Sequence[NodeSelectorTerm], path: str = "") -> list[Problem]:
    """NewNodeSelector's eager validation (empty terms are skipped, as upstream)."""
    base = child_path(path, "nodeSelectorTerms")
    return [
        p.under(f"{base}[{i}]")
        for i, term in enumerate(terms)
        if not is_empty_term(term)
        for p in term_problems(term)
    ]


def node_selector_errors(terms: Sequence[NodeSelectorTerm], path: str = "") -> list[str]:
    return [p.error("") for p in node_selector_problems(terms, path)]


def preferred_terms_problems(terms: Sequence[PreferredSchedulingTerm], path: str = "") -> list[Problem]:
    """NewPreferredSchedulingTerms: terms with weight 0 or an empty preference are not parsed."""
    return [
        p.under(f"{path}[{i}]")
        for i, term in enumerate(terms)
        if term.weight != 0 and not is_empty_term(term.preference)
        for p in term_problems(term.preference)
    ]


def preferred_terms_errors(terms: Sequence[PreferredSchedulingTerm], path: str = "") -> list[str]:
    return [p.error("") for p in preferred_terms_problems(terms, path)]
