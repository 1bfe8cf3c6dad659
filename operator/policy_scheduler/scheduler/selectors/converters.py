"""metav1.LabelSelector, in whatever shape it arrives, to the core's model type: the one converter.

It takes the JSON shape (camelCase keys: plugin args) or any object with metav1's fields in
snake_case (decoded API structs, policy CR models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from policy_scheduler.scheduler.model import LabelSelector, Requirement


class RequirementFields(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def values(self) -> Sequence[str] | None: ...


class LabelSelectorFields(Protocol):
    @property
    def match_labels(self) -> Mapping[str, str] | None: ...
    @property
    def match_expressions(self) -> Sequence[RequirementFields] | None: ...


def to_label_selector(selector: LabelSelectorFields | Mapping[str, Any] | None) -> LabelSelector | None:
    """None stays None (the nil selector, which matches nothing)."""
    if selector is None:
        return None
    if isinstance(selector, Mapping):
        return LabelSelector(
            match_labels=tuple(sorted((selector.get("matchLabels") or {}).items())),
            match_expressions=tuple(
                Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                for e in selector.get("matchExpressions") or ()
            ),
        )
    return LabelSelector(
        match_labels=tuple(sorted((selector.match_labels or {}).items())),
        match_expressions=tuple(
            Requirement(r.key, r.operator, tuple(r.values or ())) for r in selector.match_expressions or ()
        ),
    )
