"""EvictionPolicyStore: validation, last-accepted semantics, lookups by profile, status."""

from __future__ import annotations

from typing import Any

from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore, to_settings
from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.policy.eviction import EvictionPolicySpec, EvictionPolicyStatus
from policy_scheduler.policy.eviction_settings import DEFAULT_SETTINGS, EvictionRecord, RateLimits
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import ProtectedTerm
from tests.no_api import NO_API

SPEC: dict[str, Any] = {
    "protected": [
        {"namespaceSelector": {"matchLabels": {"tier": "prod"}}},
        {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "cache"]}]}},
    ],
    "minProtectedPriority": 5000,
    "budgetMode": "BestEffort",
    "rateLimit": {"evictionsPerMinute": 30, "burst": 3, "maxInFlight": 4, "perNodePerMinute": 2},
    "maxGracePeriodSeconds": 10,
    "dryRun": True,
}


def body(
    name: str, spec: dict[str, Any], generation: int = 1, uid: str = "u1", status: Any = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {"name": name, "uid": uid, "generation": generation}, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def stores() -> tuple[EvictionPolicyStore, ProfileStore, StatusWriter]:
    writer = StatusWriter(NO_API)
    policies = EvictionPolicyStore(status=writer)
    profiles = ProfileStore(compile_profile_spec, lambda _: None, eviction_policy_problem=policies.problem)
    policies.profiles = profiles
    return policies, profiles, writer


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def test_to_settings_converts_selectors_and_limits() -> None:
    settings = to_settings("p", EvictionPolicySpec.model_validate(SPEC))
    config = settings.config
    assert config.protected == (
        ProtectedTerm(namespace_selector=model.LabelSelector(match_labels=(("tier", "prod"),))),
        ProtectedTerm(
            pod_selector=model.LabelSelector(
                match_expressions=(model.Requirement("app", "In", ("db", "cache")),)
            )
        ),
    )
    assert (config.min_protected_priority, config.budget_mode, config.dry_run) == (5000, "BestEffort", True)
    assert config.max_grace_period_seconds == 10
    assert settings.limits == RateLimits(30, 3, 4, None, 2)


def test_invalid_update_keeps_the_last_accepted_version() -> None:
    policies, _, writer = stores()
    policies.on_event("ADDED", body("p", SPEC))
    policies.on_event("MODIFIED", body("p", {**SPEC, "rateLimit": {"burst": 0}}, generation=2))
    record = policies.records["p"]
    assert record.settings is not None
    assert record.settings.limits is not None
    assert record.settings.limits.burst == 3
    status = writer.desired("evictionpolicies", "p")
    accepted = condition(status, "Accepted")
    assert accepted["status"] == "False"
    assert "spec.rateLimit.burst" in accepted["message"]
    assert condition(status, "Ready")["status"] == "True"
    assert "generation 2 was rejected; generation 1 stays in force" in condition(status, "Ready")["message"]
    assert condition(status, "Stalled")["status"] == "True"  # kstatus: Failed, not Current
    assert status["observedGeneration"] == 2
    assert status["lastAcceptedGeneration"] == 1
    assert status["lastAcceptedSpec"] == SPEC
    EvictionPolicyStatus.model_validate(status)  # the shape the CRD expects


def test_a_restarted_operator_serves_the_persisted_policy() -> None:
    policies, _, writer = stores()
    policies.on_event("ADDED", body("p", SPEC))
    policies.on_event("MODIFIED", body("p", {**SPEC, "rateLimit": {"burst": 0}}, generation=2))
    persisted = writer.desired("evictionpolicies", "p")

    restarted, _, writer = stores()
    restarted.on_event(None, body("p", {**SPEC, "rateLimit": {"burst": 0}}, generation=2, status=persisted))
    assert restarted.problem("p") is None
    settings = restarted.records["p"].settings
    assert settings is not None
    assert settings.limits is not None
    assert settings.limits.burst == 3
    status = writer.desired("evictionpolicies", "p")
    assert status["lastAcceptedGeneration"] == 1
    assert condition(status, "Ready")["status"] == "True"


def test_policy_for_scheduler_follows_the_profile() -> None:
    policies, profiles, _ = stores()
    assert policies.settings_for_scheduler("s1") is DEFAULT_SETTINGS
    policies.on_event(None, body("p", SPEC))
    profiles.apply(
        "prof", "pu", 1, "2025-01-01T00:00:00Z", {"schedulerName": "s1", "evictionPolicyName": "p"}
    )
    profiles.apply("other", "ou", 1, "2025-01-01T00:00:00Z", {"schedulerName": "s2"})
    config = policies.policy_for_scheduler("s1")
    assert config is not None
    assert config.dry_run
    assert policies.policy_for_scheduler("s2") is None  # no policy: the plugin's default
    assert policies.policy_for_scheduler("nobody") is None


def test_a_deleted_policy_means_no_preemption_until_it_is_back() -> None:
    policies, profiles, _ = stores()
    policies.on_event(None, body("p", SPEC))
    profiles.apply(
        "prof", "pu", 1, "2025-01-01T00:00:00Z", {"schedulerName": "s1", "evictionPolicyName": "p"}
    )
    assert profiles.records["prof"].policy_problem is None
    policies.on_event("DELETED", body("p", SPEC))
    settings = policies.settings_for_scheduler("s1")
    assert settings is not DEFAULT_SETTINGS  # never the permissive default
    assert settings.unavailable_reason == "preemption is off: no EvictionPolicy named 'p'"
    config = policies.policy_for_scheduler("s1")
    assert config is not None
    assert config.unavailable_reason == settings.unavailable_reason
    assert profiles.records["prof"].policy_problem == (
        "EvictionPolicyNotFound",
        "no EvictionPolicy named 'p'",
    )
    policies.on_event("ADDED", body("p", SPEC, uid="u2"))
    assert policies.settings_for_scheduler("s1").unavailable_reason is None
    assert profiles.records["prof"].policy_problem is None


def test_a_policy_that_was_never_valid_means_no_preemption() -> None:
    policies, profiles, _ = stores()
    profiles.apply(
        "prof", "pu", 1, "2025-01-01T00:00:00Z", {"schedulerName": "s1", "evictionPolicyName": "p"}
    )
    assert profiles.records["prof"].accepted is not None  # the profile itself is accepted
    policies.on_event("ADDED", body("p", {"budgetMode": "Sometimes"}))
    reason = policies.settings_for_scheduler("s1").unavailable_reason
    assert reason is not None
    assert "EvictionPolicy 'p' has no valid generation" in reason
    problem = profiles.records["prof"].policy_problem
    assert problem is not None
    assert problem[0] == "EvictionPolicyInvalid"
    policies.on_event("MODIFIED", body("p", SPEC, generation=2))  # fixed: preemption resumes
    assert policies.settings_for_scheduler("s1").unavailable_reason is None
    assert profiles.records["prof"].policy_problem is None


def test_records_feed_counters_and_bounded_recent_evictions() -> None:
    policies, _, writer = stores()
    policies.on_event(None, body("p", SPEC))
    for i in range(25):
        result = "Evicted" if i % 2 else "RateLimited"
        policies.record("p", EvictionRecord(1_700_000_000.0 + i, "ns", f"v{i}", f"u{i}", "pre", "n1", result))
    policies.record(None, EvictionRecord(0.0, "ns", "x", "", "", "", "Evicted"))  # default policy: dropped
    status = writer.desired("evictionpolicies", "p")
    assert status["counters"] == {"evicted": 12, "blockedByBudget": 0, "rateLimited": 13, "wouldEvict": 0}
    assert len(status["recentEvictions"]) == 20
    newest = status["recentEvictions"][0]
    assert newest["name"] == "v24"
    assert newest["preemptorUid"] == "pre"
    assert newest["node"] == "n1"
    EvictionPolicyStatus.model_validate(status)


def test_counters_survive_a_restart_and_status_echoes_are_ignored() -> None:
    previous = {"counters": {"evicted": 7, "wouldEvict": 2}, "recentEvictions": [{"name": "old"}]}
    policies, _, _ = stores()
    policies.on_event(None, body("p", SPEC, status=previous))
    policies.on_event("MODIFIED", body("p", SPEC, status={"counters": {"evicted": 0}}))  # same generation
    record = policies.records["p"]
    assert record.counters["evicted"] == 7
    assert record.counters["wouldEvict"] == 2
    assert list(record.recent) == [{"name": "old"}]
