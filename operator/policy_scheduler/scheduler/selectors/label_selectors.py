"""metav1.LabelSelectorAsSelector for pod label selectors, compiled once and cached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from policy_scheduler.scheduler.field_errors import aggregate_message, go_value
from policy_scheduler.scheduler.model import (
    LabelSelector,
)
from policy_scheduler.scheduler.selectors.validation import (
    EQUALS,
    EXISTS,
    IN,
    LABEL_SELECTOR_OPERATORS,
    NOT_IN,
    SelectorError,
    new_requirement_errors,
)

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
        errs = new_requirement_errors(key, EQUALS, [value], "")
        if errs:
            raise SelectorError(aggregate_message(errs))
        reqs.append((key, IN, frozenset((value,))))
    for expr in selector.match_expressions:
        if expr.operator not in LABEL_SELECTOR_OPERATORS:
            raise SelectorError(f"{go_value(expr.operator)} is not a valid label selector operator")
        errs = new_requirement_errors(expr.key, expr.operator, expr.values, "")
        if errs:
            raise SelectorError(aggregate_message(errs))
        reqs.append((expr.key, expr.operator, frozenset(expr.values)))
    return CompiledLabelSelector(tuple(reqs))


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match; None matches nothing, an empty selector everything.
    Raises SelectorError for a selector LabelSelectorAsSelector would reject."""
    return compile_label_selector(selector).matches(labels)
