"""Turn the SchedulingProfile objects of a scenario into resolved profiles (default if none)."""

from __future__ import annotations

from policy_scheduler.scheduler.config import ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profiles import resolve_profile
from policy_scheduler.simulate.scenario import Scenario


def resolve_scenario_profiles(scenario: Scenario) -> list[ResolvedProfile]:
    implemented = implemented_plugin_names()
    if not scenario.profiles:
        return [resolve_profile(ProfileConfig(), implemented)]
    from policy_scheduler.policy.compile import compile_profile_objects

    return [resolve_profile(config, implemented) for config in compile_profile_objects(scenario.profiles)]
