"""What the API converters share: quantities, timestamps, labels, selector requirements, and
decoding a plain dict (YAML) into a struct with errors that name the object and field."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypeVar

import msgspec

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.resources import QuantityError, canonical

S = TypeVar("S")

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
Errors = list[ConversionError]


@lru_cache(maxsize=16384)
def canonical_quantity(resource: str, value: str | int | float) -> int:
    # Clusters repeat a handful of quantity strings ("100m", "128Mi") across thousands of pods;
    # parsing them through Decimal once each keeps large LISTs fast.
    return canonical(resource, value)


def quantities(values: Mapping[str, structs.Quantity] | None, path: str, errs: Errors) -> dict[str, int]:
    out: dict[str, int] = {}
    if not values:
        return out
    for name, quantity in values.items():
        try:
            value = canonical_quantity(name, quantity)
        except (QuantityError, TypeError):
            errs.append(ConversionError(f"{path}.{name}", f'invalid quantity "{quantity}"'))
            continue
        if value < 0:
            # The API server refuses these (ValidateResourceQuantityValue); one that got through
            # would free capacity on its node.
            message = f'invalid quantity "{quantity}": must be greater than or equal to 0'
            errs.append(ConversionError(f"{path}.{name}", message))
            continue
        out[name] = value
    return out


def epoch(ts: datetime | None) -> float | None:
    if ts is None:
        return None
    if ts.tzinfo is None:  # YAML timestamps without an offset are UTC in Kubernetes
        ts = ts.replace(tzinfo=UTC)
    return ts.timestamp()


def labels(values: dict[str, str] | None) -> dict[str, str]:
    return values if values is not None else {}


def requirements(reqs: list[structs.Requirement] | None) -> tuple[model.Requirement, ...]:
    if not reqs:
        return ()
    return tuple(model.Requirement(r.key, r.operator, tuple(r.values or ())) for r in reqs)


def node_term(term: structs.NodeSelectorTerm) -> model.NodeSelectorTerm:
    return model.NodeSelectorTerm(requirements(term.match_expressions), requirements(term.match_fields))


def _describe(kind: str, d: Mapping[str, Any]) -> str:
    meta = d.get("metadata")
    name = ns = ""
    if isinstance(meta, Mapping):
        name = str(meta.get("name") or "")
        ns = str(meta.get("namespace") or "")
    if kind in ("Pod", "PodDisruptionBudget"):
        return f"{kind} {ns or 'default'}/{name}"
    return f"{kind} {name}"


def struct_from_dict(d: Mapping[str, Any], struct_type: type[S], kind: str) -> S:
    """msgspec.convert with errors turned into ConversionError naming the object and field."""
    if not isinstance(d, Mapping):
        raise ConversionError("", f"expected a mapping, got {type(d).__name__}", kind)
    try:
        return msgspec.convert(d, struct_type)
    except msgspec.ValidationError as exc:
        raise ConversionError.from_msgspec(exc, _describe(kind, d)) from None
