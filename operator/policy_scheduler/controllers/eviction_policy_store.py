"""EvictionPolicies as the operator knows them: the last accepted version of each, what the
evictor did under it, and the status that reports both.

kopf's on.event handler feeds `on_event`; an invalid update keeps the last accepted version in
force (persisted in status.lastAcceptedSpec) and only sets Accepted=False and Stalled=True.
Profiles find their policy through `policy_for_scheduler` (the preemption plugin's
`eviction_policy` service) and `settings_for_scheduler` (the evictor); a profile whose policy is
missing or was never valid gets settings that evict nothing (fail safe).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.controllers.last_accepted import LastAccepted
from policy_scheduler.controllers.profile_store import PolicyProblem, ProfileStore
from policy_scheduler.kube.crstatus import StatusWriter
from policy_scheduler.observability import metrics
from policy_scheduler.policy.conditions import condition_dict
from policy_scheduler.policy.constants import (
    CONDITION_ACCEPTED,
    CONDITION_READY,
    CONDITION_STALLED,
    EVICTION_POLICY_KIND,
    EVICTION_POLICY_PLURAL,
    MAX_RECENT_EVICTIONS,
)
from policy_scheduler.policy.errors import parse_model
from policy_scheduler.policy.eviction import EvictionPolicySpec, PressureRelief
from policy_scheduler.policy.eviction_settings import (
    BLOCKED_BY_BUDGET,
    DEFAULT_SETTINGS,
    EVICTED,
    RATE_LIMITED,
    REASON_PREEMPTION,
    WOULD_EVICT,
    EvictionRecord,
    EvictionSettings,
    RateLimits,
    ReliefSettings,
)
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import EvictionPolicyConfig, ProtectedTerm
from policy_scheduler.scheduler.pressure.relief import ReliefConfig
from policy_scheduler.scheduler.pressure.thresholds import (
    SOURCE_POLICY,
    KubeletEvictionSettings,
    eviction_config,
    parse_threshold_config,
)
from policy_scheduler.scheduler.selectors import to_label_selector as label_selector

log = logging.getLogger(__name__)

COUNTERS = {
    EVICTED: "evicted",
    BLOCKED_BY_BUDGET: "blockedByBudget",
    RATE_LIMITED: "rateLimited",
    WOULD_EVICT: "wouldEvict",
}


# ---- conversion --------------------------------------------------------------------------------------


def to_relief(spec: PressureRelief | None) -> ReliefSettings | None:
    """spec.pressureRelief as the reliever uses it (the model has validated every value)."""
    if spec is None:
        return None
    thresholds = parse_threshold_config((), spec.thresholds, eviction_minimum_reclaim=spec.minimum_reclaim)
    config = ReliefConfig(
        tuple(thresholds),
        spec.on_node_condition,
        float(spec.max_usage_age_seconds),
        float(spec.pressure_transition_period_seconds),
    )
    kubelet = None
    if spec.kubelet_eviction_hard is not None:
        kubelet = eviction_config(
            KubeletEvictionSettings(eviction_hard=spec.kubelet_eviction_hard), SOURCE_POLICY
        )
    return ReliefSettings(config, label_selector(spec.node_selector), kubelet)


def to_settings(name: str, spec: EvictionPolicySpec) -> EvictionSettings:
    """The core's view (victim selection) and the evictor's (rate limits) of one policy."""
    config = EvictionPolicyConfig(
        protected=tuple(
            ProtectedTerm(label_selector(t.namespace_selector), label_selector(t.pod_selector))
            for t in spec.protected
        ),
        min_protected_priority=spec.min_protected_priority,
        budget_mode=spec.budget_mode,
        dry_run=spec.dry_run,
        max_grace_period_seconds=spec.max_grace_period_seconds,
        gang_disruption=spec.gang_disruption,
    )
    rate = spec.rate_limit
    limits = RateLimits(
        evictions_per_minute=rate.evictions_per_minute,
        burst=rate.burst,
        max_in_flight=rate.max_in_flight,
        per_namespace_per_minute=rate.per_namespace_per_minute,
        per_node_per_minute=rate.per_node_per_minute,
    )
    return EvictionSettings(name, config, limits, relief=to_relief(spec.pressure_relief))


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---- records -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class PolicyRecord:
    name: str
    uid: str
    generation: int = -1  # the last generation looked at (-1: none yet)
    last: LastAccepted[EvictionSettings] = field(default_factory=LastAccepted)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS.values(), 0))
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_RECENT_EVICTIONS))
    relief: dict[str, Any] | None = None  # status.pressureRelief, as the reliever last reported it
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, time)

    @property
    def settings(self) -> EvictionSettings | None:
        """The last accepted version (None: never accepted)."""
        return self.last.value

    @property
    def error(self) -> str | None:
        return self.last.error

    def restore(self, status: Any) -> None:
        """Counters and recent evictions survive restarts: they live in the status we wrote."""
        if not isinstance(status, dict):
            return
        counters = status.get("counters")
        if isinstance(counters, dict):
            for key in self.counters:
                value = counters.get(key)
                if isinstance(value, int) and value >= 0:
                    self.counters[key] = value
        recent = status.get("recentEvictions")
        if isinstance(recent, list):
            self.recent.extend(e for e in recent[:MAX_RECENT_EVICTIONS] if isinstance(e, dict))
        for cond in status.get("conditions") or []:
            if isinstance(cond, dict) and cond.get("type") and cond.get("lastTransitionTime"):
                self.transitions[cond["type"]] = (str(cond.get("status")), str(cond["lastTransitionTime"]))
        self.last.restore(status, lambda spec: compile_policy(self.name, spec))


def compile_policy(name: str, spec: Any) -> EvictionSettings:
    """Validate an EvictionPolicy spec (PolicyError with field paths) and convert it."""
    return to_settings(name, parse_model(EvictionPolicySpec, spec, "spec"))


class EvictionPolicyStore:
    def __init__(self, profiles: ProfileStore | None = None, status: StatusWriter | None = None) -> None:
        self.profiles = profiles
        self.status_writer = status
        self.records: dict[str, PolicyRecord] = {}
        self.clock: Callable[[], float] = lambda: datetime.now(UTC).timestamp()

    # ---- kopf ------------------------------------------------------------------------------------

    def on_event(self, event_type: str | None, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        name = str(meta.get("name", ""))
        if event_type == "DELETED":
            self.delete(name)
            return
        if self.status_writer is not None:
            self.status_writer.observe(EVICTION_POLICY_PLURAL, name, body.get("status"))
        self.apply(
            name,
            str(meta.get("uid", "")),
            int(meta.get("generation") or 0),
            body.get("spec"),
            body.get("status"),
        )

    def apply(self, name: str, uid: str, generation: int, spec: Any, status: Any = None) -> PolicyRecord:
        problem_before = self.problem(name)
        record = self.records.get(name)
        if record is None or record.uid != uid:
            record = self.records[name] = PolicyRecord(name, uid)
            record.restore(status)
        if generation == record.generation:
            return record  # e.g. our own status write came back: nothing new in the spec
        record.generation = generation
        try:
            settings = compile_policy(name, spec)
        except ValueError as exc:
            if record.last.reject(str(exc)):
                metrics.policy_reloads.labels(EVICTION_POLICY_KIND, "rejected").inc()
                log.warning(
                    "eviction policy rejected",
                    extra={"policy": name, "error": str(exc), "in_force": record.last.describe(generation)},
                )
        else:
            if record.last.accept(generation, spec, settings):
                metrics.policy_reloads.labels(EVICTION_POLICY_KIND, "accepted").inc()
        self._publish(record)
        if self.problem(name) != problem_before:
            self._recheck_profiles()
        return record

    def delete(self, name: str) -> None:
        if self.records.pop(name, None) is None:
            return
        metrics.policy_reloads.labels(EVICTION_POLICY_KIND, "deleted").inc()
        if self.status_writer is not None:
            self.status_writer.forget(EVICTION_POLICY_PLURAL, name)
        self._recheck_profiles()

    def _recheck_profiles(self) -> None:
        if self.profiles is not None:
            self.profiles.recheck()

    # ---- lookups ---------------------------------------------------------------------------------

    def problem(self, name: str) -> PolicyProblem:
        """Why the policy `name` cannot be used (ProfileStore's eviction_policy_problem)."""
        record = self.records.get(name)
        if record is None:
            return "EvictionPolicyNotFound", f"no EvictionPolicy named {name!r}"
        if record.settings is None:
            return "EvictionPolicyInvalid", f"EvictionPolicy {name!r} has no valid generation: {record.error}"
        return None

    def settings_for_scheduler(self, scheduler_name: str) -> EvictionSettings:
        """The policy of the profile serving `scheduler_name`; the built-in default when the
        profile names none. Fail safe: when the named policy is missing or has never been valid,
        settings that evict nothing (unavailable_reason set), never the permissive default."""
        if self.profiles is None:
            return DEFAULT_SETTINGS
        profile = self.profiles.records.get(self.profiles.in_force.get(scheduler_name, ""))
        policy = profile.accepted.eviction_policy_name if profile and profile.accepted else None
        if not policy:
            return DEFAULT_SETTINGS
        problem = self.problem(policy)
        if problem is not None:
            reason = f"preemption is off: {problem[1]}"
            return EvictionSettings(
                policy, EvictionPolicyConfig(unavailable_reason=reason), unavailable_reason=reason
            )
        settings = self.records[policy].settings
        assert settings is not None
        return settings

    def policy_for_scheduler(self, scheduler_name: str) -> EvictionPolicyConfig | None:
        """The `eviction_policy` service of the preemption plugin."""
        settings = self.settings_for_scheduler(scheduler_name)
        return None if settings.policy_name is None else settings.config

    # ---- what the evictor did --------------------------------------------------------------------

    def record(self, policy: str | None, entry: EvictionRecord) -> None:
        record = self.records.get(policy) if policy else None
        if record is None:
            return  # the built-in default has no object to report on
        counter = COUNTERS.get(entry.result)
        if counter is not None:
            record.counters[counter] += 1
        item: dict[str, Any] = {
            "time": _time(entry.time),
            "namespace": entry.namespace,
            "name": entry.name,
            "result": entry.result,
        }
        fields = (
            ("uid", entry.uid),
            ("preemptorUid", entry.preemptor_uid),
            ("node", entry.node),
            ("reason", entry.reason if entry.reason != REASON_PREEMPTION else ""),
            ("signal", entry.signal),
            ("message", entry.message),
        )
        for key, value in fields:
            if value:
                item[key] = value
        record.recent.appendleft(item)
        self._publish(record)

    def relief_status(self, policy: str, status: dict[str, Any] | None) -> None:
        """What pressure relief sees under `policy` (status.pressureRelief; None drops it)."""
        record = self.records.get(policy)
        if record is None or record.relief == status:
            return
        record.relief = status
        self._publish(record)

    def relieving(self) -> list[EvictionSettings]:
        """The policies in force with pressureRelief, by name."""
        return [
            r.settings
            for _, r in sorted(self.records.items())
            if r.settings is not None and r.settings.relief is not None
        ]

    # ---- status ----------------------------------------------------------------------------------

    def status(self, name: str) -> dict[str, Any] | None:
        record = self.records.get(name)
        if record is None:
            return None
        accepted = record.error is None
        in_force = record.last.describe(record.generation)
        conditions = [
            self._condition(
                record,
                CONDITION_ACCEPTED,
                accepted,
                "Valid" if accepted else "InvalidSpec",
                record.error or "the policy is valid and in force",
            ),
            self._condition(
                record,
                CONDITION_READY,
                record.settings is not None,
                self._ready_reason(record),
                self._ready_message(record, in_force),
            ),
            self._condition(
                record, CONDITION_STALLED, not accepted, "AsExpected" if accepted else "InvalidSpec", in_force
            ),
        ]
        return {
            "observedGeneration": record.generation,
            "conditions": conditions,
            **record.last.status_fields(),
            "counters": dict(record.counters),
            "recentEvictions": list(record.recent),
            **({"pressureRelief": record.relief} if record.relief is not None else {}),
        }

    @staticmethod
    def _ready_reason(record: PolicyRecord) -> str:
        if record.settings is None:
            return "NoAcceptedVersion"
        return "DryRun" if record.settings.config.dry_run else "InForce"

    @staticmethod
    def _ready_message(record: PolicyRecord, in_force: str) -> str:
        if record.settings is None:
            return f"{in_force}: profiles naming it preempt nothing; {record.error or 'invalid spec'}"
        if record.settings.config.dry_run:
            return in_force + "; dryRun: victims are only reported, never evicted"
        return in_force

    def _condition(
        self, record: PolicyRecord, type_: str, ok: bool, reason: str, message: str
    ) -> dict[str, Any]:
        now = _time(self.clock()).split(".")[0] + "Z"
        status = "True" if ok else "False"
        return condition_dict(record.transitions, type_, status, reason, message, record.generation, now)

    def _publish(self, record: PolicyRecord) -> None:
        if self.status_writer is None:
            return
        status = self.status(record.name)
        if status is not None:
            self.status_writer.set(EVICTION_POLICY_PLURAL, record.name, status)
