"""SchedulingProfiles as the operator knows them: the last accepted version of each, and the
set in force. An invalid update never replaces a good version; it only sets Accepted=False and
Stalled=True. A missing or unusable EvictionPolicy does not reject the profile: the profile keeps
scheduling but preempts nothing (EvictionPolicyResolved=False) until the policy is usable.
No kopf and no API here: handlers feed it, the status writer reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.controllers.last_accepted import LastAccepted
from policy_scheduler.observability import metrics
from policy_scheduler.observability.profile_stats import ProfileStats
from policy_scheduler.policy.conditions import Transitions, condition_dict
from policy_scheduler.policy.constants import (
    CONDITION_ACCEPTED,
    CONDITION_DEGRADED,
    CONDITION_EVICTION_POLICY,
    CONDITION_KUBERNETES_VERSION,
    CONDITION_READY,
    CONDITION_STALLED,
)
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.profile_resolution import effective_plugins
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.semantics import Semantics, choose_semantics

log = logging.getLogger(__name__)

KIND = "SchedulingProfile"


# (reason, message) when a profile's EvictionPolicy cannot be used; None when it can.
PolicyProblem = tuple[str, str] | None
# (record, event type, reason, note): the profile's EvictionPolicy became unusable or usable.
Notify = Callable[["ProfileRecord", str, str, str], None]


@dataclass(slots=True)
class ProfileRecord:
    name: str
    uid: str
    generation: int
    created: str
    last: LastAccepted[ResolvedProfile] = field(default_factory=LastAccepted)
    conflict: str | None = None  # why the accepted version is not in force
    policy_problem: PolicyProblem = None  # why its EvictionPolicy is unusable (it preempts nothing)
    transitions: Transitions = field(default_factory=dict)
    spec: Any = None  # the latest spec, as the API gave it (not necessarily an object)

    @property
    def accepted(self) -> ResolvedProfile | None:
        return self.last.value

    @property
    def error(self) -> str | None:
        """Why the latest generation was rejected."""
        return self.last.error


# A spec and the release semantics (with the operator's gates) -> the resolved profile.
Compiler = Callable[[dict[str, Any], Features], ResolvedProfile]


class ProfileStore:
    def __init__(
        self,
        compile_spec: Compiler,
        on_change: Callable[[list[ResolvedProfile]], None],
        *,
        eviction_policy_problem: Callable[[str], PolicyProblem] = lambda _: None,
        notify: Notify | None = None,
        on_preemption_restored: Callable[[str], None] = lambda _: None,
        semantics: Semantics | None = None,
    ) -> None:
        self.compile_spec = compile_spec
        # Which release profiles decide like; the operator sets it from the API server's version.
        self.semantics = semantics if semantics is not None else choose_semantics(None)
        self.on_change = on_change
        self.eviction_policy_problem = eviction_policy_problem
        self.notify = notify
        # Called with the schedulerName when its EvictionPolicy resolves again, so pods that
        # waited while preemption was off are retried now rather than at the next flush.
        self.on_preemption_restored = on_preemption_restored
        self.records: dict[str, ProfileRecord] = {}
        self.in_force: dict[str, str] = {}  # schedulerName -> profile object name

    def apply(
        self,
        name: str,
        uid: str,
        generation: int,
        created: str,
        spec: Any,
        status: Any = None,
    ) -> ProfileRecord:
        """`status`: the object's status as read, to restore the persisted last accepted spec."""
        record = self.records.get(name)
        if record is None or record.uid != uid:
            record = self.records[name] = ProfileRecord(name, uid, generation, created)
            if record.last.restore(status, self._compile):
                log.info(
                    "profile restored from its status",
                    extra={"profile": name, "generation": record.last.generation},
                )
        record.generation = generation
        record.spec = spec
        self._validate(record)
        self._check_policy(record)
        self._publish()
        return record

    def _compile(self, raw: dict[str, Any]) -> ResolvedProfile:
        return self.compile_spec(raw, self.semantics.features)

    def set_semantics(self, semantics: Semantics) -> None:
        """Follow another release (or other operator-wide gates): every profile is resolved again,
        its accepted spec first (a spec the new release refuses keeps its old resolution in force
        and is reported, as any rejected update)."""
        if semantics == self.semantics:
            return
        self.semantics = semantics
        for record in self.records.values():
            if record.last.spec is not None and record.last.value is not None:
                try:
                    record.last.value = self._compile(record.last.spec)
                except ValueError as exc:
                    log.warning(
                        "accepted profile does not resolve for the new release; it stays as it was",
                        extra={"profile": record.name, "error": str(exc)},
                    )
            self._validate(record)
            self._check_policy(record)
        self._publish()

    def _validate(self, record: ProfileRecord) -> None:
        try:
            # Only a missing spec means {}: an empty list or string is not an object.
            resolved = self._compile({} if record.spec is None else record.spec)
        except ValueError as exc:
            if record.last.reject(str(exc)):
                metrics.policy_reloads.labels(KIND, "rejected").inc()
                log.warning(
                    "profile rejected",
                    extra={
                        "profile": record.name,
                        "error": str(exc),
                        "in_force": record.last.describe(record.generation),
                    },
                )
        else:
            if record.last.accept(record.generation, record.spec, resolved):
                metrics.policy_reloads.labels(KIND, "accepted").inc()
                log.info("profile accepted", extra={"profile": record.name, "generation": record.generation})

    def _check_policy(self, record: ProfileRecord) -> None:
        """Fail safe: a profile whose EvictionPolicy is unusable preempts nothing; say so once."""
        policy = record.accepted.eviction_policy_name if record.accepted else None
        problem = self.eviction_policy_problem(policy) if policy else None
        if problem == record.policy_problem:
            return
        was_off = record.policy_problem is not None
        record.policy_problem = problem
        if problem is not None:
            log.warning("profile preempts nothing", extra={"profile": record.name, "why": problem[1]})
            if self.notify is not None:
                self.notify(record, "Warning", problem[0], f"preemption is off: {problem[1]}")
        else:
            log.info("profile eviction policy resolved", extra={"profile": record.name, "policy": policy})
            if was_off and record.accepted is not None:
                self.on_preemption_restored(record.accepted.scheduler_name)
            if self.notify is not None:
                self.notify(
                    record, "Normal", "EvictionPolicyResolved", f"EvictionPolicy {policy!r} is in force"
                )

    def delete(self, name: str) -> None:
        if self.records.pop(name, None) is not None:
            metrics.policy_reloads.labels(KIND, "deleted").inc()
            self._publish()

    def recheck(self) -> None:
        """An EvictionPolicy appeared, went away or changed validity: re-resolve every profile's."""
        for record in list(self.records.values()):
            self._check_policy(record)

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
        in_force = record.last.describe(record.generation)
        problem = record.policy_problem
        conditions = [
            self._condition(
                record,
                CONDITION_ACCEPTED,
                accepted_ok,
                "Valid" if accepted_ok else ("Conflict" if record.conflict else "InvalidSpec"),
                record.conflict or record.error or "the profile is valid and in force",
            ),
            self._condition(
                record,
                CONDITION_READY,
                serving and synced,
                "Scheduling" if serving and synced else ("CachesNotSynced" if serving else "NotServing"),
                self._ready_message(record, serving, synced, in_force),
            ),
            self._condition(
                record,
                CONDITION_STALLED,
                not accepted_ok,
                "AsExpected" if accepted_ok else ("Conflict" if record.conflict else "InvalidSpec"),
                in_force if record.conflict is None else f"{record.conflict}; not in force",
            ),
            self._condition(
                record,
                CONDITION_EVICTION_POLICY,
                problem is None,
                problem[0] if problem else ("Resolved" if self._policy_name(record) else "NoEvictionPolicy"),
                f"preemption is off: {problem[1]}" if problem else self._policy_message(record),
            ),
            self._condition(
                record,
                CONDITION_DEGRADED,
                not accepted_ok or problem is not None,
                self._degraded_reason(serving, accepted_ok, problem),
                self._degraded_message(record, serving, accepted_ok, in_force),
            ),
        ]
        conditions.append(self._version_condition(record))
        status: dict[str, Any] = {"observedGeneration": record.generation, "conditions": conditions}
        status.update(record.last.status_fields())
        if record.accepted is not None:
            status["effectivePlugins"] = effective_plugins(record.accepted)
            status["kubernetesVersion"] = record.accepted.features.describe()
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

    def _version_condition(self, record: ProfileRecord) -> dict[str, Any]:
        """Whether the profile decides like the cluster's own kube-scheduler, and which release."""
        semantics = self.semantics
        features = record.accepted.features if record.accepted is not None else None
        return self._condition(
            record,
            CONDITION_KUBERNETES_VERSION,
            semantics.matches_cluster,
            semantics.reason,
            semantics.describe(features),
        )

    @staticmethod
    def _policy_name(record: ProfileRecord) -> str | None:
        return record.accepted.eviction_policy_name if record.accepted else None

    @classmethod
    def _policy_message(cls, record: ProfileRecord) -> str:
        policy = cls._policy_name(record)
        if policy:
            return f"EvictionPolicy {policy!r} is in force"
        return "no spec.evictionPolicyName: the built-in default policy applies"

    @staticmethod
    def _ready_message(record: ProfileRecord, serving: bool, synced: bool, in_force: str) -> str:
        if not serving:
            return record.conflict or record.error or "no accepted version"
        if not synced:
            return "waiting for the pod and node caches to sync"
        assert record.accepted is not None
        return f"scheduling pods with schedulerName {record.accepted.scheduler_name!r}; {in_force}"

    @staticmethod
    def _degraded_reason(serving: bool, accepted_ok: bool, problem: PolicyProblem) -> str:
        if not accepted_ok:
            return "LastAcceptedInForce" if serving else "NotServing"
        return "EvictionPolicyUnavailable" if problem is not None else "AsExpected"

    @staticmethod
    def _degraded_message(record: ProfileRecord, serving: bool, accepted_ok: bool, in_force: str) -> str:
        if accepted_ok:
            if record.policy_problem is not None:
                return f"preemption is off: {record.policy_problem[1]}"
            return "the latest generation is in force"
        if serving:
            return in_force
        return record.conflict or record.error or "not serving"

    @staticmethod
    def _condition(record: ProfileRecord, type_: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
        now = _rfc3339(datetime.now(UTC).timestamp())
        status = "True" if ok else "False"
        return condition_dict(record.transitions, type_, status, reason, message, record.generation, now)


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compile_profile_spec(raw: dict[str, Any], features: Features | None = None) -> ResolvedProfile:
    """Validate a SchedulingProfile spec (schema, semantics, plugin args) and resolve it for
    `features`' release and gates (None: the newest release's defaults)."""
    from policy_scheduler.policy.compile import resolve_spec
    from policy_scheduler.policy.errors import parse_model
    from policy_scheduler.policy.scheduling_profile import SchedulingProfileSpec
    from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names

    spec = parse_model(SchedulingProfileSpec, raw, "spec")
    return resolve_spec(spec, implemented_plugin_names(), features=features)
