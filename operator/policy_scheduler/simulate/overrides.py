"""`simulate --from-cluster --apply FILE...`: policy objects applied to a snapshot in memory.

The files go through `policy-scheduler validate` (the API server's and the operator's checks);
an object replaces the snapshot's object of the same kind and name as `kubectl apply` would:
same uid and creation time (so it keeps its place among profiles sharing a schedulerName), the
next generation, its status (lastAcceptedSpec) kept.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy_scheduler.policy import constants as c
from policy_scheduler.simulate.scenario import Scenario, read_documents
from policy_scheduler.validate.command import expand, validate_paths
from policy_scheduler.validate.report import REFERENCE, Problem

# Created after everything in the cluster: an older profile keeps a contested schedulerName.
NEW_OBJECT_CREATED = "9999-12-31T23:59:59Z"


class OverrideError(Exception):
    """Invalid --apply input; `lines` are `file:Kind/name:field: message`, as validate prints."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(slots=True)
class Overrides:
    objects: list[dict[str, Any]] = field(default_factory=list)  # policy objects, input order
    notes: list[str] = field(default_factory=list)

    def names(self, kind: str) -> set[str]:
        return {_name(o) for o in self.objects if o.get("kind") == kind}


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _resolved_elsewhere(problem: Problem, known_policies: set[str]) -> bool:
    """validate checks references among its files only; the snapshot may hold the target."""
    if problem.stage != REFERENCE or problem.field != "spec.evictionPolicyName":
        return False
    return any(f"{name!r}" in problem.message for name in known_policies) and "invalid" not in problem.message


def load_overrides(paths: Sequence[str], known_policies: Iterable[str] = ()) -> Overrides:
    """Validated policy objects of `paths`; OverrideError if any is invalid or a file unreadable.
    `known_policies`: EvictionPolicies the snapshot has, which a profile may name."""
    if not paths:
        return Overrides()
    known = set(known_policies)
    report = validate_paths(paths)
    errors = [p for p in report.errors if not _resolved_elsewhere(p, known)]
    if errors:
        raise OverrideError([p.line() for p in errors])
    result = Overrides(notes=list(report.notes))
    for name in expand(paths):
        for doc in read_documents(Path(name), lenient=True):
            if doc.body.get("kind") in _LISTS and str(doc.body.get("apiVersion", "")) == c.API_VERSION:
                result.objects.append(copy.deepcopy(dict(doc.body)))
    return result


_LISTS = {
    c.SCHEDULING_PROFILE_KIND: "profiles",
    c.EVICTION_POLICY_KIND: "eviction_policies",
    c.PRIORITY_CLASS_MIRROR_KIND: "priority_class_mirrors",
}


def _replacing(new: dict[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = dict(new.get("metadata") or {})
    if old is None:
        meta.update(uid=f"what-if/{_name(new)}", creationTimestamp=NEW_OBJECT_CREATED, generation=1)
        return {**new, "metadata": meta}
    old_meta = old.get("metadata") or {}
    generation = int(old_meta.get("generation") or 0)
    if new.get("spec") != old.get("spec"):
        generation += 1  # as the API server counts spec changes
    meta.update(
        uid=old_meta.get("uid", ""),
        creationTimestamp=old_meta.get("creationTimestamp", ""),
        generation=generation,
    )
    merged = {**new, "metadata": meta}
    if "status" in old:
        merged["status"] = copy.deepcopy(old["status"])
    return merged


def with_overrides(scenario: Scenario, overrides: Overrides) -> Scenario:
    """A copy of `scenario` whose policy objects are replaced or added by `overrides`."""
    result = dataclasses.replace(scenario)
    for attr in _LISTS.values():
        setattr(result, attr, list(getattr(scenario, attr)))
    for obj in overrides.objects:
        objects: list[dict[str, Any]] = getattr(result, _LISTS[str(obj["kind"])])
        index = next((i for i, o in enumerate(objects) if _name(o) == _name(obj)), None)
        if index is None:
            objects.append(_replacing(obj, None))
        else:
            objects[index] = _replacing(obj, objects[index])
    return result
