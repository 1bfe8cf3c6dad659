"""Label selectors as apimachinery compiles them (metav1.LabelSelectorAsSelector), with its errors.

A compiled `Selector` is hashable so affinity terms can be grouped by identity in the index.
Validation follows labels.NewRequirement: key and value syntax, value counts per operator, and
the exact error text (field paths, `Invalid value: ...`, aggregate brackets).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from policy_scheduler.scheduler.model import LabelSelector
from policy_scheduler.scheduler.selectors import label_key_errors, label_value_errors

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "in", "notin", "exists", "!"
_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
_EQUALS = "="  # matchLabels entries: validated as exact-match, matched as In


class SelectorError(ValueError):
    """A label selector that apimachinery would refuse to compile."""


@dataclass(frozen=True, slots=True)
class Req:
    key: str
    op: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """labels.Requirement.Matches."""
        op = self.op
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class Selector:
    """labels.Selector: `nothing` is labels.Nothing(); no requirements is labels.Everything()."""

    requirements: tuple[Req, ...] = ()
    nothing: bool = False

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def compile_selector(selector: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil matches nothing, empty matches everything."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    reqs: list[Req] = []
    for key, value in selector.match_labels:
        _validate(key, _EQUALS, (value,))
        reqs.append(Req(key, IN, frozenset((value,))))
    for expr in selector.match_expressions:
        op = _OPERATORS.get(expr.operator)
        if op is None:
            raise SelectorError(f"{_go_quote(expr.operator)} is not a valid label selector operator")
        _validate(expr.key, op, expr.values)
        reqs.append(Req(expr.key, op, frozenset(expr.values)))
    # labels.NewSelector().Add sorts by key; a canonical order also makes equal selectors hash equal.
    reqs.sort(key=lambda r: (r.key, r.op, tuple(sorted(r.values))))
    return Selector(tuple(reqs))


# ---- validation, as labels.NewRequirement ------------------------------------------------------


def _validate(key: str, op: str, values: tuple[str, ...]) -> None:
    errs: list[str] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(_invalid("key", _go_quote(key), "; ".join(key_errs)))
    if op in (IN, NOT_IN) and not values:
        errs.append(
            _invalid("values", _go_json(values), "for 'in', 'notin' operators, values set can't be empty")
        )
    elif op == _EQUALS and len(values) != 1:
        errs.append(
            _invalid("values", _go_json(values), "exact-match compatibility requires one single value")
        )
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        errs.append(
            _invalid("values", _go_json(values), "values set must be empty for exists and does not exist")
        )
    for i, value in enumerate(values):
        value_errs = label_value_errors(value)
        if value_errs:
            errs.append(_invalid(f"values[{i}][{key}]", _go_quote(value), "; ".join(value_errs)))
    if errs:
        raise SelectorError(aggregate(errs))


def _invalid(path: str, rendered: str, detail: str) -> str:
    return f"{path}: Invalid value: {rendered}: {detail}"


def aggregate(messages: list[str]) -> str:
    """utilerrors aggregate formatting: one message alone, several deduplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v"}  # fmt: skip


def _go_quote(text: str) -> str:
    """Go's %q for strings (strconv.Quote)."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _go_json(values: tuple[str, ...]) -> str:
    """json.Marshal of a []string as field errors render it (nil slice is null)."""
    if not values:
        return "null"
    text = json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
