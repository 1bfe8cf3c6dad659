"""The policy the operator has in force for a set of CR objects (as read from a cluster).

The operator's own stores decide it, so the rules are the same by construction: a profile
whose latest generation is invalid serves its status.lastAcceptedSpec, two profiles claiming one
schedulerName leave the older one in force, and a profile whose EvictionPolicy is missing or was
never valid preempts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore
from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.plugins.defaultpreemption import EvictionPolicyConfig
from policy_scheduler.scheduler.versioning.semantics import Semantics


@dataclass(slots=True)
class PolicyInForce:
    profiles: list[ResolvedProfile]
    stores: tuple[ProfileStore, EvictionPolicyStore]
    notes: list[str] = field(default_factory=list)  # what differs from the objects' latest specs

    @property
    def scheduler_names(self) -> set[str]:
        return {p.scheduler_name for p in self.profiles}

    def policy_for(self, scheduler_name: str) -> EvictionPolicyConfig | None:
        return self.stores[1].policy_for_scheduler(scheduler_name)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


@contextmanager
def _quiet_stores() -> Iterator[None]:
    """The stores log what they decide; here `notes` says it once, without timestamps."""
    logger = logging.getLogger("policy_scheduler.controllers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def policy_in_force(
    profiles: Sequence[Mapping[str, Any]],
    eviction_policies: Sequence[Mapping[str, Any]],
    profile_selector: str = "",
    semantics: Semantics | None = None,
) -> PolicyInForce:
    """`semantics`: the release the operator would follow (None: the newest supported)."""
    with _quiet_stores():
        return _policy_in_force(profiles, eviction_policies, profile_selector, semantics)


def _policy_in_force(
    profiles: Sequence[Mapping[str, Any]],
    eviction_policies: Sequence[Mapping[str, Any]],
    profile_selector: str,
    semantics: Semantics | None,
) -> PolicyInForce:
    served: list[ResolvedProfile] = []

    def publish(resolved: list[ResolvedProfile]) -> None:
        served[:] = resolved

    store = ProfileStore(compile_profile_spec, publish, semantics=semantics)
    policies = EvictionPolicyStore(profiles=store)
    store.eviction_policy_problem = policies.problem
    for obj in eviction_policies:
        policies.on_event(None, dict(obj))
    selected = parse_selector(profile_selector)
    for obj in profiles:
        meta = _meta(obj)
        if not selected(meta.get("labels") or {}):
            continue  # the operator (run with this --profile-selector) ignores it
        store.apply(
            str(meta.get("name", "")),
            str(meta.get("uid", "")),
            int(meta.get("generation") or 0),
            str(meta.get("creationTimestamp", "")),
            dict(obj.get("spec") or {}),
            obj.get("status"),
        )
    result = PolicyInForce(list(served), (store, policies))
    for record in sorted(store.records.values(), key=lambda r: r.name):
        if record.error is not None:
            result.notes.append(f"SchedulingProfile {record.name}: {record.last.describe(record.generation)}")
        if record.conflict is not None:
            result.notes.append(f"SchedulingProfile {record.name}: not in force: {record.conflict}")
        if record.policy_problem is not None:
            result.notes.append(
                f"SchedulingProfile {record.name}: preempts nothing: {record.policy_problem[1]}"
            )
    for policy in sorted(policies.records.values(), key=lambda r: r.name):
        if policy.error is not None:
            result.notes.append(f"EvictionPolicy {policy.name}: {policy.last.describe(policy.generation)}")
    return result
