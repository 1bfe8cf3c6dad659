"""Turn a scenario's policy objects into what the engine needs: resolved profiles (the default
one if there are none) and the eviction policy governing each profile's preemption."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policy_scheduler.scheduler.config import ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.plugins.defaultpreemption import EvictionPolicyConfig
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.simulate.scenario import Scenario, ScenarioError

PolicyLookup = Callable[[str], EvictionPolicyConfig | None]


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def resolve_scenario_profiles(scenario: Scenario, features: Features | None = None) -> list[ResolvedProfile]:
    """The scenario's profiles (the default one if none) for `features`' release (None: the newest)."""
    implemented = implemented_plugin_names()
    if not scenario.profiles:
        return [resolve_profile(ProfileConfig(), implemented, features=features)]
    from policy_scheduler.policy.compile import compile_profile_objects

    known = {_name(p) for p in scenario.eviction_policies}
    configs = compile_profile_objects(scenario.profiles, eviction_policy_names=known, features=features)
    return [resolve_profile(config, implemented, features=features) for config in configs]


def eviction_policy_lookup(scenario: Scenario, profiles: list[ResolvedProfile]) -> PolicyLookup:
    """scheduler name -> the EvictionPolicy its profile names (None: the built-in default)."""
    from policy_scheduler.controllers.eviction_policy_store import to_settings
    from policy_scheduler.policy.errors import PolicyError, parse_model
    from policy_scheduler.policy.eviction import EvictionPolicySpec

    policies: dict[str, EvictionPolicyConfig] = {}
    for obj in scenario.eviction_policies:
        name = _name(obj)
        try:
            spec = parse_model(EvictionPolicySpec, obj.get("spec") or {}, "spec")
        except PolicyError as exc:
            raise ScenarioError(f"EvictionPolicy {name}: {exc}") from None
        policies[name] = to_settings(name, spec).config
    by_scheduler = {p.scheduler_name: p.eviction_policy_name for p in profiles}

    def lookup(scheduler_name: str) -> EvictionPolicyConfig | None:
        policy = by_scheduler.get(scheduler_name)
        return policies.get(policy) if policy else None

    return lookup
