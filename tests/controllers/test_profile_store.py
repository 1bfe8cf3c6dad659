"""ProfileStore: the last accepted version stays in force (and survives restarts through the
status); conflicts; an unusable EvictionPolicy turns preemption off, never the profile."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.observability.profile_stats import ProfileStats
from policy_scheduler.policy.scheduling_profile import SchedulingProfileStatus
from policy_scheduler.scheduler.config import ResolvedProfile


class _Published:
    def __init__(self) -> None:
        self.profiles: list[ResolvedProfile] = []

    def __call__(self, profiles: list[ResolvedProfile]) -> None:
        self.profiles = profiles

    @property
    def names(self) -> list[str]:
        return [p.scheduler_name for p in self.profiles]


def _store(known: set[str] | None = None) -> tuple[ProfileStore, _Published]:
    published = _Published()
    policies = known if known is not None else set()

    def problem(name: str) -> tuple[str, str] | None:
        return None if name in policies else ("EvictionPolicyNotFound", f"no EvictionPolicy named {name!r}")

    return ProfileStore(compile_profile_spec, published, eviction_policy_problem=problem), published


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_invalid_update_keeps_the_last_accepted_version_in_force() -> None:
    store, published = _store()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "percentageOfNodesToScore": 50})
    store.apply(
        "p",
        "u1",
        2,
        "2026-01-01T00:00:00Z",
        {"schedulerName": "s", "plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}},
    )
    assert published.names == ["s"]
    assert published.profiles[0].percentage_of_nodes_to_score == 50  # generation 1 still in force
    status = store.status("p", ProfileStats(), synced=True)
    assert status is not None
    conditions = _conditions(status)
    assert conditions["Accepted"] == ("False", "InvalidSpec")
    assert conditions["Ready"] == ("True", "Scheduling")
    assert conditions["Degraded"] == ("True", "LastAcceptedInForce")
    assert conditions["Stalled"] == ("True", "InvalidSpec")  # kstatus: Failed, not Current
    assert status["observedGeneration"] == 2
    assert status["lastAcceptedGeneration"] == 1
    assert status["lastAcceptedSpec"] == {"schedulerName": "s", "percentageOfNodesToScore": 50}
    message = next(c["message"] for c in status["conditions"] if c["type"] == "Accepted")
    assert "spec.plugins.score.enabled[0]" in message
    assert "NoSuchPlugin" in message
    stalled = next(c["message"] for c in status["conditions"] if c["type"] == "Stalled")
    assert stalled == "generation 2 was rejected; generation 1 stays in force"
    SchedulingProfileStatus.model_validate(status)  # the shape the CRD expects


def test_each_accepted_generation_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    # The start-up timeline reads when the profile arrived from this line (docs/benchmarks.md).
    store, _ = _store()
    with caplog.at_level(logging.INFO, logger="policy_scheduler.controllers.profile_store"):
        store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
        store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})  # kopf's redelivery
        store.apply(
            "p", "u1", 2, "2026-01-01T00:00:00Z", {"schedulerName": "s", "percentageOfNodesToScore": 5}
        )
    accepted = [r for r in caplog.records if r.getMessage() == "profile accepted"]
    assert [(r.__dict__["profile"], r.__dict__["generation"]) for r in accepted] == [("p", 1), ("p", 2)]


INVALID = {"schedulerName": "s", "plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}


def test_a_restarted_operator_serves_the_persisted_last_accepted_spec() -> None:
    before, _ = _store()
    before.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "percentageOfNodesToScore": 50})
    before.apply("p", "u1", 2, "2026-01-01T00:00:00Z", INVALID)
    persisted = before.status("p", None, synced=True)

    after, published = _store()  # a new process: it only has the object, status included
    after.apply("p", "u1", 2, "2026-01-01T00:00:00Z", INVALID, persisted)
    assert published.names == ["s"]
    assert published.profiles[0].percentage_of_nodes_to_score == 50
    status = after.status("p", None, synced=True)
    assert status is not None
    assert status["lastAcceptedGeneration"] == 1
    stalled = next(c["message"] for c in status["conditions"] if c["type"] == "Stalled")
    assert "generation 1 stays in force (restored from status.lastAcceptedSpec)" in stalled
    # A valid update replaces the restored version.
    after.apply("p", "u1", 3, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert published.profiles[0].percentage_of_nodes_to_score != 50
    assert after.status("p", None, synced=True)["lastAcceptedGeneration"] == 3  # type: ignore[index]


def test_without_a_persisted_spec_an_invalid_profile_is_not_served() -> None:
    store, published = _store()
    garbage = {"lastAcceptedGeneration": 1, "lastAcceptedSpec": {"schedulerName": 7}}
    store.apply("p", "u1", 2, "2026-01-01T00:00:00Z", INVALID, garbage)
    assert published.names == []
    status = store.status("p", None, synced=True)
    assert status is not None
    assert "lastAcceptedGeneration" not in status
    assert _conditions(status)["Ready"] == ("False", "NotServing")


def test_duplicate_scheduler_name_is_served_by_the_oldest_profile() -> None:
    store, published = _store()
    store.apply("young", "u2", 1, "2026-02-01T00:00:00Z", {"schedulerName": "s"})
    store.apply("old", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert published.names == ["s"]
    assert store.in_force == {"s": "old"}
    young = store.status("young", None, synced=True)
    assert young is not None
    assert _conditions(young)["Accepted"] == ("False", "Conflict")
    store.delete("old")
    assert store.in_force == {"s": "young"}


def test_missing_eviction_policy_turns_preemption_off_until_it_exists() -> None:
    known: set[str] = set()
    notes: list[tuple[str, str, str]] = []
    store, published = _store(known)
    store.notify = lambda record, type_, reason, note: notes.append((record.name, type_, reason))
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "evictionPolicyName": "careful"})
    assert published.names == ["s"]  # it schedules; it only preempts nothing
    status = store.status("p", None, synced=True)
    assert status is not None
    conditions = _conditions(status)
    assert conditions["Accepted"] == ("True", "Valid")
    assert conditions["EvictionPolicyResolved"] == ("False", "EvictionPolicyNotFound")
    assert conditions["Degraded"] == ("True", "EvictionPolicyUnavailable")
    message = next(c["message"] for c in status["conditions"] if c["type"] == "EvictionPolicyResolved")
    assert message == "preemption is off: no EvictionPolicy named 'careful'"
    assert notes == [("p", "Warning", "EvictionPolicyNotFound")]
    store.recheck()
    assert len(notes) == 1  # said once, not on every re-check
    known.add("careful")
    store.recheck()
    status = store.status("p", None, synced=True)
    assert status is not None
    assert _conditions(status)["EvictionPolicyResolved"] == ("True", "Resolved")
    assert _conditions(status)["Degraded"] == ("False", "AsExpected")
    assert notes[-1] == ("p", "Normal", "EvictionPolicyResolved")


def test_preemption_restored_retries_the_profiles_pods_once() -> None:
    known: set[str] = set()
    restored: list[str] = []
    store, _ = _store(known)
    store.on_preemption_restored = restored.append
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "evictionPolicyName": "careful"})
    store.apply("q", "u2", 1, "2026-01-01T00:00:00Z", {"schedulerName": "t"})
    assert restored == []  # a profile that never lost its policy is not retried
    known.add("careful")
    store.recheck()
    store.recheck()
    assert restored == ["s"]


def test_not_ready_until_caches_synced_and_stats_reported() -> None:
    store, _ = _store()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    stats = ProfileStats()
    stats.record_scheduled("ns/a")
    stats.record_failure("ns/b", "0/3 nodes are available: 3 Insufficient cpu.")
    status = store.status("p", stats, synced=False)
    assert status is not None
    assert _conditions(status)["Ready"] == ("False", "CachesNotSynced")
    assert status["scheduled"] == 1
    assert status["pending"] == 1
    assert status["pendingReasons"] == [{"reason": "Insufficient cpu", "count": 1}]


def test_recheck_does_not_count_the_same_rejection_again() -> None:
    from policy_scheduler.observability.metrics import REGISTRY

    def rejected() -> float:
        labels = {"kind": "SchedulingProfile", "result": "rejected"}
        return REGISTRY.get_sample_value("policy_scheduler_policy_reloads_total", labels) or 0.0

    store, _ = _store()
    before = rejected()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", INVALID)
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", INVALID)  # a resync of the same object
    store.recheck()
    assert rejected() == before + 1


def kstatus(generation: int, status: dict[str, Any]) -> str:
    """sigs.k8s.io/cli-utils kstatus, generic rules for a custom resource (checkGenericProperties)."""
    if status.get("observedGeneration", generation) != generation:
        return "InProgress"
    for cond in status.get("conditions", []):
        if cond["type"] == "Reconciling" and cond["status"] == "True":
            return "InProgress"
        if cond["type"] == "Stalled" and cond["status"] == "True":
            return "Failed"
    return "Current"


def test_kstatus_reads_a_rejected_generation_as_failed_not_current() -> None:
    store, _ = _store()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert kstatus(1, store.status("p", None, synced=True) or {}) == "Current"
    store.apply("p", "u1", 2, "2026-01-01T00:00:00Z", INVALID)
    assert kstatus(2, store.status("p", None, synced=True) or {}) == "Failed"
    store.apply("p", "u1", 3, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert kstatus(3, store.status("p", None, synced=True) or {}) == "Current"
