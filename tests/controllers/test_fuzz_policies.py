"""Issue 11, bad input: hostile SchedulingProfile and EvictionPolicy specs through the stores the
operator feeds (ProfileStore.apply, EvictionPolicyStore.on_event), not only the models.

Property: the store never raises; each spec is accepted, or rejected with Accepted=False and a
message naming a field that is in the spec; after a rejection the previously accepted version
is still what is published. 300 examples per property by default; `HYPOTHESIS_PROFILE=fuzz`
runs 5,000 (docs/reliability.md).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings

from policy_scheduler.controllers.eviction_policy_store import EvictionPolicyStore, compile_policy
from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.scheduler.config import ResolvedProfile
from tests.fuzz_specs import eviction_spec, profile_spec, resolves
from tests.no_api import NO_API

settings.register_profile(
    "fuzz-default", max_examples=300, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.register_profile("fuzz", max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ = settings.get_profile("fuzz" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "fuzz-default")

GOOD_PROFILE = {"schedulerName": "fuzz", "percentageOfNodesToScore": 40}
GOOD_POLICY = {"rateLimit": {"evictionsPerMinute": 7, "burst": 2}, "dryRun": True}


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def _named_fields(exc: PolicyError, spec: Any) -> None:
    assert exc.errors, "a rejection names at least one field"
    for error in exc.errors:
        assert resolves(spec, error.path), f"{error.path!r} is not in the spec {spec!r}"


def _verdict(compile_: Any, spec: Any) -> PolicyError | None:
    try:
        compile_(copy.deepcopy(spec))
    except PolicyError as exc:
        return exc
    return None


@FUZZ
@given(spec=profile_spec())
def test_hostile_profile_specs_are_accepted_or_rejected_naming_a_field(spec: Any) -> None:
    published: list[list[ResolvedProfile]] = []
    store = ProfileStore(compile_profile_spec, published.append)
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", GOOD_PROFILE)
    good = store.records["p"].accepted
    assert good is not None
    assert published[-1] == [good]

    record = store.apply("p", "u1", 2, "2026-01-01T00:00:00Z", copy.deepcopy(spec))
    status = store.status("p", None, synced=True)
    assert status is not None
    accepted = _condition(status, "Accepted")
    rejection = _verdict(compile_profile_spec, spec)
    if rejection is None:
        assert record.error is None
        assert accepted["status"] == "True"
        assert published[-1] == [record.accepted]
        assert status["lastAcceptedGeneration"] == 2
    else:
        _named_fields(rejection, spec)
        assert accepted["status"] == "False"
        assert accepted["message"] == str(rejection)
        # The last good version is still the one published and persisted.
        assert record.accepted is good
        assert published[-1] == [good]
        assert status["lastAcceptedGeneration"] == 1
        assert status["lastAcceptedSpec"] == GOOD_PROFILE


@FUZZ
@given(spec=eviction_spec())
def test_hostile_eviction_policy_specs_are_accepted_or_rejected_naming_a_field(spec: Any) -> None:
    writer = StatusWriter(NO_API)
    store = EvictionPolicyStore(status=writer)
    meta = {"name": "fuzz-policy", "uid": "u1", "generation": 1}
    store.on_event(None, {"metadata": meta, "spec": GOOD_POLICY})
    good = store.records["fuzz-policy"].settings
    assert good is not None

    store.on_event("MODIFIED", {"metadata": {**meta, "generation": 2}, "spec": copy.deepcopy(spec)})
    record = store.records["fuzz-policy"]
    status = store.status("fuzz-policy")
    assert status is not None
    accepted = _condition(status, "Accepted")
    rejection = _verdict(lambda s: compile_policy("fuzz-policy", s), spec)
    if rejection is None:
        assert record.error is None
        assert accepted["status"] == "True"
        assert status["lastAcceptedGeneration"] == 2
    else:
        _named_fields(rejection, spec)
        assert accepted["status"] == "False"
        assert accepted["message"] == str(rejection)
        assert record.settings is good
        assert store.problem("fuzz-policy") is None
        assert status["lastAcceptedGeneration"] == 1
        assert status["lastAcceptedSpec"] == GOOD_POLICY
