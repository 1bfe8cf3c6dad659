"""Profiles follow a release: default plugins per release, spec.featureGates, the store's
semantics and its KubernetesVersion condition, plugins reading Features through the Handle."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.observability.profile_stats import ProfileStats
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.policy.scheduling_profile import SchedulingProfileStatus
from policy_scheduler.scheduler.config import ProfileConfig, ResolvedProfile
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.registry import in_tree_registry
from policy_scheduler.scheduler.profile_resolution import ProfileError, default_plugins, resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.semantics import choose_semantics
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37


def names(features: Features) -> list[str]:
    return [ref.name for ref in default_plugins(features)]


def test_default_plugins_follow_the_release() -> None:
    """getDefaultPlugins + applyFeatureGates of each release (default_plugins.go)."""
    v135, v136, v137 = names(Features(V1_35)), names(Features(V1_36)), names(Features(V1_37))
    assert v135[2:4] == ["NodeUnschedulable", "NodeName"]
    assert v137[2:4] == ["NodeName", "NodeUnschedulable"]  # v1.37 swapped them
    assert "NodeDeclaredFeatures" not in v135  # alpha, off
    assert v136[-1] == v137[-1] == "NodeDeclaredFeatures"  # appended by its gate
    for listed in (v135, v136, v137):
        assert listed.index("DynamicResources") == listed.index("DefaultPreemption") - 1
    assert [n for n in v136 if n != "NodeDeclaredFeatures"] == v135
    # A gate turned on adds its plugin.
    assert names(Features(V1_35, (("NodeDeclaredFeatures", True),)))[-1] == "NodeDeclaredFeatures"


def test_profile_feature_gates_change_the_profile_only() -> None:
    on = resolve_profile(
        ProfileConfig(feature_gates=(("NodeDeclaredFeatures", True),)), features=Features(V1_35)
    )
    off = resolve_profile(ProfileConfig(), features=Features(V1_35))
    assert on.features == Features(V1_35, (("NodeDeclaredFeatures", True),))
    assert off.features == Features(V1_35)


def test_profile_feature_gate_errors_name_the_field() -> None:
    config = ProfileConfig(feature_gates=(("NodeDeclaredFeatures", False),))
    with pytest.raises(ProfileError) as info:
        resolve_profile(config, features=Features(V1_37))
    assert info.value.errors == (
        (
            "spec.featureGates.NodeDeclaredFeatures",
            "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true (Kubernetes v1.37)",
        ),
    )
    with pytest.raises(PolicyError) as policy:
        compile_profile_spec({"featureGates": {"NoSuchGate": True}}, Features(V1_36))
    assert policy.value.pairs == [
        (
            "spec.featureGates.NoSuchGate",
            "unrecognized feature gate: NoSuchGate (not a feature gate of Kubernetes v1.36)",
        )
    ]


def test_feature_gates_field_is_strict() -> None:
    with pytest.raises(PolicyError) as info:
        compile_profile_spec({"featureGates": {"NodeDeclaredFeatures": "yes"}})
    assert info.value.pairs[0][0] == "spec.featureGates.NodeDeclaredFeatures"


def test_plugins_get_the_profiles_features_through_the_handle() -> None:
    profile = resolve_profile(ProfileConfig(), features=Features(V1_36))
    framework = Framework(profile, in_tree_registry(), Handle(NodeTable()))
    assert framework.handle.features == Features(V1_36)
    assert all(plugin.handle.features == Features(V1_36) for plugin in framework.plugins.values())


def test_opportunistic_batching_gate_turns_signatures_off() -> None:
    on = Framework(
        resolve_profile(ProfileConfig(), features=Features(V1_37)), in_tree_registry(), Handle(NodeTable())
    )
    off_features = Features(V1_37, (("OpportunisticBatching", False),))
    off = Framework(
        resolve_profile(ProfileConfig(), features=off_features), in_tree_registry(), Handle(NodeTable())
    )
    assert on.signatures_enabled
    assert not off.signatures_enabled


class _Published:
    def __init__(self) -> None:
        self.profiles: list[ResolvedProfile] = []

    def __call__(self, profiles: list[ResolvedProfile]) -> None:
        self.profiles = profiles


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_store_resolves_every_profile_again_for_a_new_release() -> None:
    published = _Published()
    store = ProfileStore(compile_profile_spec, published, semantics=choose_semantics("v1.35.4"))
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert published.profiles[0].features == Features(V1_35)
    status = store.status("p", ProfileStats(), synced=True)
    assert status is not None
    version = _condition(status, "KubernetesVersion")
    assert (version["status"], version["reason"]) == ("True", "Supported")
    assert version["message"] == "deciding as kube-scheduler v1.35 does (API server v1.35.4)"
    assert status["kubernetesVersion"] == "v1.35"
    SchedulingProfileStatus.model_validate(status)

    store.set_semantics(choose_semantics("v1.38.1"))
    assert published.profiles[0].features == Features(V1_37)
    status = store.status("p", ProfileStats(), synced=True)
    assert status is not None
    version = _condition(status, "KubernetesVersion")
    assert (version["status"], version["reason"]) == ("False", "NewerThanSupported")
    assert "API server v1.38.1 is newer than the newest supported release v1.37" in version["message"]
    assert status["kubernetesVersion"] == "v1.37"
    assert status["effectivePlugins"]["filter"][:2] == ["NodeName", "NodeUnschedulable"]


def test_a_profile_the_new_release_refuses_keeps_its_resolution() -> None:
    published = _Published()
    store = ProfileStore(compile_profile_spec, published, semantics=choose_semantics("v1.36.3"))
    spec = {"schedulerName": "s", "featureGates": {"InterPodAffinityHostnameFastPath": True}}
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", spec)
    assert published.profiles == []  # v1.36 has no such gate: rejected
    store.set_semantics(choose_semantics("v1.37.2"))
    assert published.profiles[0].features.enabled("InterPodAffinityHostnameFastPath")
    store.set_semantics(choose_semantics("v1.36.3"))
    # Accepted at v1.37; v1.36 refuses it: the v1.37 resolution stays in force, reported.
    assert published.profiles[0].features.version == V1_37
    status = store.status("p", ProfileStats(), synced=True)
    assert status is not None
    accepted = _condition(status, "Accepted")
    assert accepted["status"] == "False"
    assert "unrecognized feature gate: InterPodAffinityHostnameFastPath" in accepted["message"]
