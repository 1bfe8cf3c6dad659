"""SchedulingProfiles as the operator knows them: the last accepted version of each, and the
set in force. An invalid update never replaces a good version; it only sets Accepted=False.
No kopf and no API here: handlers feed it, the status writer reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from policy_scheduler import metrics
from policy_scheduler.policy.conditions import Transitions, condition_dict
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.profile_resolution import effective_plugins
from policy_scheduler.stats import ProfileStats

log = logging.getLogger(__name__)

KIND = "SchedulingProfile"


@dataclass(slots=True)
class ProfileRecord:
    name: str
    uid: str
    generation: int
    created: str
    accepted: ResolvedProfile | None = None
    accepted_generation: int | None = None
    error: str | None = None  # why the latest generation was rejected
    conflict: str | None = None  # why the accepted version is not in force
    transitions: Transitions = field(default_factory=dict)
    spec: dict[str, Any] | None = None  # the latest spec, re-validated when references change


Compiler = Callable[[dict[str, Any]], ResolvedProfile]


class ProfileStore:
    def __init__(
        self,
        compile_spec: Compiler,
        on_change: Callable[[list[ResolvedProfile]], None],
        *,
        eviction_policy_known: Callable[[str], bool] = lambda _: True,
    ) -> None:
        self.compile_spec = compile_spec
        self.on_change = on_change
        self.eviction_policy_known = eviction_policy_known
        self.records: dict[str, ProfileRecord] = {}
        self.in_force: dict[str, str] = {}  # schedulerName -> profile object name

    def apply(
        self, name: str, uid: str, generation: int, created: str, spec: dict[str, Any]
    ) -> ProfileRecord:
        record = self.records.get(name)
        if record is None or record.uid != uid:
            record = self.records[name] = ProfileRecord(name, uid, generation, created)
        record.generation = generation
        record.spec = spec
        self._validate(record)
        self._publish()
        return record

    def _validate(self, record: ProfileRecord) -> None:
        name, generation, spec = record.name, record.generation, record.spec or {}
        try:
            resolved = self.compile_spec(spec)
            policy = resolved.eviction_policy_name
            if policy and not self.eviction_policy_known(policy):
                raise ValueError(f"spec.evictionPolicyName: no EvictionPolicy named {policy!r}")
        except ValueError as exc:
            if record.error == str(exc):
                return  # re-checked, same verdict: not a new rejection
            record.error = str(exc)
            metrics.policy_reloads.labels(KIND, "rejected").inc()
            log.warning(
                "profile rejected; last accepted version stays in force",
                extra={"profile": name, "generation": generation, "error": record.error},
            )
        else:
            record.error = None
            if record.accepted != resolved:
                record.accepted = resolved
                metrics.policy_reloads.labels(KIND, "accepted").inc()
            record.accepted_generation = generation

    def delete(self, name: str) -> None:
        if self.records.pop(name, None) is not None:
            metrics.policy_reloads.labels(KIND, "deleted").inc()
            self._publish()

    def recheck(self) -> None:
        """Re-validate every profile's latest spec (an EvictionPolicy appeared or went away):
        a profile rejected for a missing policy is accepted once the policy exists."""
        for record in list(self.records.values()):
            self._validate(record)
        self._publish()

    def _publish(self) -> None:
        in_force: dict[str, str] = {}
        profiles: list[ResolvedProfile] = []
        for record in sorted(self.records.values(), key=lambda r: (r.created, r.name)):
            record.conflict = None
            if record.accepted is None:
                continue
            scheduler = record.accepted.scheduler_name
            owner = in_force.get(scheduler)
            if owner is not None:
                record.conflict = (
                    f"spec.schedulerName: {scheduler!r} is already served by SchedulingProfile {owner!r}"
                )
                continue
            in_force[scheduler] = record.name
            profiles.append(record.accepted)
        self.in_force = in_force
        self.on_change(profiles)

    # ---- status --------------------------------------------------------------------------------

    def status(self, name: str, stats: ProfileStats | None, synced: bool) -> dict[str, Any] | None:
        record = self.records.get(name)
        if record is None:
            return None
        serving = record.accepted is not None and record.conflict is None
        accepted_ok = record.error is None and record.conflict is None
        conditions = [
            self._condition(
                record,
                "Accepted",
                accepted_ok,
                "Valid" if accepted_ok else ("Conflict" if record.conflict else "InvalidSpec"),
                record.conflict or record.error or "the profile is valid and in force",
            ),
            self._condition(
                record,
                "Ready",
                serving and synced,
                "Scheduling" if serving and synced else ("CachesNotSynced" if serving else "NotServing"),
                self._ready_message(record, serving, synced),
            ),
            self._condition(
                record,
                "Degraded",
                not accepted_ok,
                "LastAcceptedInForce"
                if (serving and not accepted_ok)
                else ("NotServing" if not accepted_ok else "AsExpected"),
                self._degraded_message(record, serving, accepted_ok),
            ),
        ]
        status: dict[str, Any] = {"observedGeneration": record.generation, "conditions": conditions}
        if record.accepted is not None:
            status["effectivePlugins"] = effective_plugins(record.accepted)
            status["acceptedGeneration"] = record.accepted_generation
        if stats is not None:
            status.update(
                scheduled=stats.scheduled,
                pending=len(stats.pending),
                pendingReasons=[{"reason": r, "count": c} for r, c in stats.top_reasons()],
                preemptions=stats.preemptions,
                latencyP50Seconds=round(stats.latency(0.5), 6),
                latencyP99Seconds=round(stats.latency(0.99), 6),
            )
            if stats.last_scheduled is not None:
                status["lastScheduledTime"] = _rfc3339(stats.last_scheduled)
        return status

    @staticmethod
    def _ready_message(record: ProfileRecord, serving: bool, synced: bool) -> str:
        if not serving:
            return record.conflict or record.error or "no accepted version"
        if not synced:
            return "waiting for the pod and node caches to sync"
        assert record.accepted is not None
        return f"scheduling pods with schedulerName {record.accepted.scheduler_name!r}"

    @staticmethod
    def _degraded_message(record: ProfileRecord, serving: bool, accepted_ok: bool) -> str:
        if accepted_ok:
            return "the latest generation is in force"
        if serving:
            return (
                f"generation {record.generation} was rejected; "
                f"generation {record.accepted_generation} stays in force"
            )
        return record.conflict or record.error or "not serving"

    @staticmethod
    def _condition(record: ProfileRecord, type_: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
        now = _rfc3339(datetime.now(UTC).timestamp())
        status = "True" if ok else "False"
        return condition_dict(record.transitions, type_, status, reason, message, record.generation, now)


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compile_profile_spec(raw: dict[str, Any]) -> ResolvedProfile:
    """Validate a SchedulingProfile spec (schema, semantics, plugin args) and resolve it."""
    from policy_scheduler.policy.compile import resolve_spec
    from policy_scheduler.policy.errors import parse_model
    from policy_scheduler.policy.scheduling_profile import SchedulingProfileSpec
    from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names

    spec = parse_model(SchedulingProfileSpec, raw, "spec")
    return resolve_spec(spec, implemented_plugin_names())
