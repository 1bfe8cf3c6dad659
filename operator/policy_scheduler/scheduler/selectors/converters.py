"""JSON-shaped (camelCase) API selectors to the core's model types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy_scheduler.scheduler.model import LabelSelector, Requirement


def label_selector_from_json(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    """A metav1.LabelSelector as JSON; None stays None (the nil selector)."""
    if raw is None:
        return None
    return LabelSelector(
        match_labels=tuple(sorted((raw.get("matchLabels") or {}).items())),
        match_expressions=tuple(
            Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
            for e in raw.get("matchExpressions") or ()
        ),
    )
