"""ProfileStore: the last accepted version stays in force; conflicts; references re-checked."""

from __future__ import annotations

from typing import Any

from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.stats import ProfileStats


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
    return ProfileStore(
        compile_profile_spec, published, eviction_policy_known=policies.__contains__
    ), published


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
    assert status["observedGeneration"] == 2 and status["acceptedGeneration"] == 1
    message = next(c["message"] for c in status["conditions"] if c["type"] == "Accepted")
    assert "spec.plugins.score.enabled[0]" in message and "NoSuchPlugin" in message


def test_duplicate_scheduler_name_is_served_by_the_oldest_profile() -> None:
    store, published = _store()
    store.apply("young", "u2", 1, "2026-02-01T00:00:00Z", {"schedulerName": "s"})
    store.apply("old", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    assert published.names == ["s"] and store.in_force == {"s": "old"}
    young = store.status("young", None, synced=True)
    assert young is not None and _conditions(young)["Accepted"] == ("False", "Conflict")
    store.delete("old")
    assert store.in_force == {"s": "young"}


def test_profile_waiting_for_its_eviction_policy_is_accepted_once_it_exists() -> None:
    known: set[str] = set()
    store, published = _store(known)
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "evictionPolicyName": "careful"})
    assert published.names == []
    known.add("careful")
    store.recheck()
    assert published.names == ["s"]
    status = store.status("p", None, synced=True)
    assert status is not None and _conditions(status)["Accepted"] == ("True", "Valid")


def test_not_ready_until_caches_synced_and_stats_reported() -> None:
    store, _ = _store()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    stats = ProfileStats()
    stats.record_scheduled("ns/a")
    stats.record_failure("ns/b", "0/3 nodes are available: 3 Insufficient cpu.")
    status = store.status("p", stats, synced=False)
    assert status is not None
    assert _conditions(status)["Ready"] == ("False", "CachesNotSynced")
    assert status["scheduled"] == 1 and status["pending"] == 1
    assert status["pendingReasons"] == [{"reason": "Insufficient cpu", "count": 1}]


def test_recheck_does_not_count_the_same_rejection_again() -> None:
    from policy_scheduler.metrics import policy_reloads

    store, _ = _store()
    rejected = policy_reloads.labels("SchedulingProfile", "rejected")
    before = rejected._value.get()
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s", "evictionPolicyName": "missing"})
    store.recheck()
    store.recheck()
    assert rejected._value.get() == before + 1
