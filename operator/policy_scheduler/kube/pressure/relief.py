"""Pressure relief under EvictionPolicies: evict, gracefully and before the kubelet does, the
pods the kubelet would evict first.

After each poll, for every EvictionPolicy with spec.pressureRelief (a node two policies select
is relieved under the first by name), each of its nodes with fresh usage is held to the
policy's thresholds (scheduler/pressure/relief.py). The node's mark in the scheduler's pressure
view follows (the NodePressure filter keeps the policy's profiles' pods off it while marked).
Where a threshold is met on a fresh sample, the node's pods are ranked as the kubelet ranks
them and evicted in that order through the Eviction API until what they free covers the
reclaim needed:

- a PodDisruptionBudget's refusal skips the pod (recorded BlockedByBudget), and the next one
  is tried: relief never deletes a pod;
- the policy's rate limits are the preemption evictor's own buckets (one budget per policy):
  a pod over a limit waits for a later pass (recorded RateLimited once in a while);
- dryRun asks the Eviction API with dryRun=All (it applies the budgets and evicts nothing):
  WouldEvict, or BlockedByBudget and on to the next pod, as a real run would;
- nothing is evicted from a node whose usage is missing or older than maxUsageAgeSeconds, and
  only while this replica may act as the leader (every eviction goes through the fence).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from policy_scheduler.kube.event_objects import NORMAL, WARNING, ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.api import DEFAULT_GRACE, EvictionApi, Outcome, grace_period
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.fence import Fence, NotLeading
from policy_scheduler.kube.pressure.samples import NodeRecord
from policy_scheduler.observability import metrics as prom
from policy_scheduler.policy.eviction_settings import (
    BLOCKED_BY_BUDGET,
    EVICTED,
    FAILED,
    RATE_LIMITED,
    REASON_NODE_PRESSURE,
    RESULT_METRIC_LABEL,
    WOULD_EVICT,
    EvictionRecord,
    EvictionSettings,
)
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import is_protected
from policy_scheduler.scheduler.pressure.assess import assess
from policy_scheduler.scheduler.pressure.manager import ManagerState
from policy_scheduler.scheduler.pressure.pods import PodFacts
from policy_scheduler.scheduler.pressure.relief import ReliefDecision, decide
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig
from policy_scheduler.scheduler.pressure.units import amount
from policy_scheduler.scheduler.pressure.view import NodePressureView, ReliefMark
from policy_scheduler.scheduler.selectors import SelectorError, label_selector_matches

if TYPE_CHECKING:
    from policy_scheduler.kube.pressure.monitor import PressureMonitor

log = logging.getLogger(__name__)

REASON_EVICTED = "NodePressureRelief"
REASON_DRY_RUN = "NodePressureReliefDryRun"
REASON_BLOCKED = "NodePressureReliefBlocked"
ACTION = "Evicting"
DAEMONSET = "DaemonSet"
NOTE_AGAIN_AFTER = 300.0  # a dry run's or a rate limit's record of a pod is repeated after this
PENDING_LIMIT = 600.0  # an evicted pod's frees stop counting after this, gone or not
SKIPPED_SHOWN = 5
NODES_SHOWN = 50
STALE_SHOWN = 20


class ReliefPolicies(Protocol):
    """The EvictionPolicies as the operator holds them."""

    def relieving(self) -> list[EvictionSettings]: ...

    def record(self, policy: str | None, entry: EvictionRecord) -> None: ...

    def relief_status(self, policy: str, status: dict[str, Any] | None) -> None: ...


@dataclass(slots=True)
class _Pending:
    """A pod relief evicted: its frees count as reclaimed while the sample may still show it."""

    frees: int
    evicted_at: float  # unix time
    gone_at: float | None = None  # unix time it was first seen gone


def _timestamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _selects(settings: EvictionSettings, node: Node) -> bool:
    relief = settings.relief
    if relief is None:
        return False
    if relief.node_selector is None:
        return True
    try:
        return label_selector_matches(relief.node_selector, node.labels)
    except SelectorError:
        return False


def relieving_policy(policies: Sequence[EvictionSettings], node: Node) -> EvictionSettings | None:
    """The policy whose pressureRelief selects the node: the first by name."""
    return next((s for s in sorted(policies, key=lambda s: s.policy_name or "") if _selects(s, node)), None)


class Reliever:
    def __init__(
        self,
        api: EvictionApi,
        limiters: Limiters,
        events: EventRecorder,
        policies: ReliefPolicies,
        view: NodePressureView,
        *,
        fence: Fence,
        namespace_labels: Callable[[], Mapping[str, Mapping[str, str]]],
        clock: Callable[[], float] = time.monotonic,
        in_flight_slack: float = 60.0,
    ) -> None:
        self.api = api
        self.limiters = limiters
        self.events = events
        self.policies = policies
        self.view = view
        self.fence = fence
        self.namespace_labels = namespace_labels
        self.clock = clock
        self.in_flight_slack = in_flight_slack
        self._states: dict[tuple[str, str], ManagerState] = {}  # (policy, node)
        self._pending: dict[str, dict[str, _Pending]] = {}  # node -> pod uid -> pending
        self._noted: dict[tuple[str, str, str], float] = {}  # (policy, uid, result) -> when (clock)
        self._published: set[str] = set()
        self._settings: list[EvictionSettings] = []

    # ---- which policy relieves which node -----------------------------------------------------------

    def policy_for(self, node: Node) -> EvictionSettings | None:
        return next((s for s in self._settings if _selects(s, node)), None)  # sorted by prepare()

    def kubelet_config(self, node: Node) -> EvictionConfig | None:
        """kubeletEvictionHard of the policy relieving the node (the monitor's thresholds for nodes
        without /configz)."""
        settings = self.policy_for(node)
        return settings.relief.kubelet if settings is not None and settings.relief is not None else None

    # ---- a pass ------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Take the policies in force for this pass (their kubeletEvictionHard and nodes)."""
        self._settings = sorted(self.policies.relieving(), key=lambda s: s.policy_name or "")

    async def relieve(self, monitor: PressureMonitor, now: float) -> None:
        names = [s.policy_name or "" for s in self._settings]
        self.view.set_policies(names)
        groups: dict[str, list[NodeRecord]] = {name: [] for name in names}
        for record in monitor.records.values():
            settings = self.policy_for(record.node)
            if settings is None:
                self.view.set(record.node.name, None)
            else:
                groups[settings.policy_name or ""].append(record)
        assigned = {(name, r.node.name) for name, records in groups.items() for r in records}
        self._states = {k: v for k, v in self._states.items() if k in assigned}
        for settings in self._settings:
            name = settings.policy_name or ""
            status = await self._relieve_policy(monitor, settings, groups[name], now)
            self.policies.relief_status(name, status)
        for gone in self._published - set(names):
            self.policies.relief_status(gone, None)
            for state in ("under_pressure", "no_usage"):
                with contextlib.suppress(KeyError):
                    prom.nodes_relieved.remove(gone, state)
        self._published = set(names)

    async def _relieve_policy(
        self, monitor: PressureMonitor, settings: EvictionSettings, records: Sequence[NodeRecord], now: float
    ) -> dict[str, Any]:
        assert settings.relief is not None
        relief, name = settings.relief.config, settings.policy_name or ""
        stale: list[str] = []
        marked: list[dict[str, Any]] = []
        acting: list[tuple[NodeRecord, EvictionConfig, ManagerState]] = []
        for record in records:
            node = record.node.name
            self._forget_reclaimed(record, monitor, now)
            if not record.fresh(now, relief.max_usage_age):
                stale.append(node)
                self.view.set(node, None)
                continue
            config = relief.config_for(record.config, record.node.pressure_conditions)
            before = self._states.get((name, node), ManagerState())
            result = assess([record.input(config=config, state=before)], [], [], [], now=now)[0]
            self._states[(name, node)] = result.state
            self.view.set(node, ReliefMark(result.conditions, name) if result.conditions else None)
            if result.conditions:
                marked.append(
                    {
                        "name": node,
                        "conditions": list(result.conditions),
                        "signals": list(result.under_pressure),
                    }
                )
            if result.eviction_signal is not None and result.eviction_starts_in == 0:
                acting.append((record, config, before))
        details = {entry["name"]: entry for entry in marked}
        for record, config, before in acting:
            inputs = await monitor.pods_of(record)
            n = len(inputs.facts)
            assessment = assess(
                [record.input(config=config, state=before)], inputs.facts, inputs.usage, [0] * n, now=now
            )[0]
            by_uid = {p.uid: p for p in inputs.pods}
            pending = self._pending.get(record.node.name, {})
            decision = decide(
                assessment,
                pending={uid: p.frees for uid, p in pending.items()},
                refuse=functools.partial(self._refusal_of, settings, by_uid),
            )
            entry = details.get(record.node.name)
            if entry is not None:
                entry["reclaimNeeded"] = decision.needed
                entry["skipped"] = [f"{s.pod.key}: {s.why}" for s in decision.skipped[:SKIPPED_SHOWN]]
            try:
                await self._evict(settings, decision, by_uid, now)
            except NotLeading:
                log.info("pressure relief stopped: not the leader now", extra={"policy": name})
                break
        prom.nodes_relieved.labels(name, "under_pressure").set(len(marked))
        prom.nodes_relieved.labels(name, "no_usage").set(len(stale))
        return {
            "nodesWatched": len(records),
            "nodes": marked[:NODES_SHOWN],
            "nodesWithoutUsage": sorted(stale)[:STALE_SHOWN],
            "lastPassTime": _timestamp(now),
        }

    def _refusal_of(self, settings: EvictionSettings, pods: Mapping[str, Pod], facts: PodFacts) -> str | None:
        return self._refusal(settings, pods.get(facts.uid))

    def _refusal(self, settings: EvictionSettings, pod: Pod | None) -> str | None:
        """Why relief may not evict the pod, besides what the kubelet never evicts."""
        if pod is None:
            return "not found"
        if pod.terminating:
            return "already terminating"
        if any(o.controller and o.kind == DAEMONSET for o in pod.owner_references):
            return "DaemonSet pod: its replacement would come back to this node"
        policy = settings.config
        if policy.min_protected_priority is not None and pod.priority >= policy.min_protected_priority:
            return f"priority {pod.priority} >= minProtectedPriority {policy.min_protected_priority}"
        if is_protected(policy, pod, self.namespace_labels()):
            return f"protected by EvictionPolicy {settings.policy_name}"
        return None

    def _forget_reclaimed(self, record: NodeRecord, monitor: PressureMonitor, now: float) -> None:
        """Pods relief evicted stop counting as reclaimed once they are gone and a sample taken
        after that shows the node without them."""
        pending = self._pending.get(record.node.name)
        if not pending:
            return
        present = {p.uid for p in monitor.cluster.running_pods(record.node.name)}
        for uid, entry in list(pending.items()):
            if uid not in present and entry.gone_at is None:
                entry.gone_at = now
            measured_after = (
                entry.gone_at is not None and record.time is not None and record.time > entry.gone_at
            )
            if measured_after or now - entry.evicted_at > PENDING_LIMIT:
                del pending[uid]

    # ---- evicting ----------------------------------------------------------------------------------

    async def _evict(
        self, settings: EvictionSettings, decision: ReliefDecision, pods: Mapping[str, Pod], now: float
    ) -> None:
        needed = decision.needed
        for ranked in decision.candidates:
            if needed <= 0:
                return
            pod = pods[ranked.pod.uid]
            frees = ranked.frees or 0
            if settings.config.dry_run:
                # The API server applies the PodDisruptionBudgets and evicts nothing.
                result = await self.api.evict(pod.namespace, pod.name, pod.uid, None, dry_run=True)
                if result.outcome is Outcome.EVICTED:
                    self._note_once(settings, decision, pod, WOULD_EVICT, self._why(decision, ranked.frees))
                    needed -= frees
                elif result.outcome in (Outcome.BUDGET, Outcome.MULTIPLE_BUDGETS):
                    self._note_once(settings, decision, pod, BLOCKED_BY_BUDGET, f"{result.message} (dryRun)")
                elif result.outcome is not Outcome.GONE:
                    self._note_once(settings, decision, pod, FAILED, result.message)
                    return
                continue
            self.fence.check()
            limiter = self.limiters.get(settings.policy_name, settings.limits)
            if limiter is not None and limiter.try_acquire(pod.namespace, decision.node, self.clock()) > 0:
                self._note_once(
                    settings, decision, pod, RATE_LIMITED, "over the policy's rate limits: a later pass"
                )
                return
            found = await self.api.read_victim(pod.namespace, pod.name, pod.uid)
            if found is None or found.metadata.deletion_timestamp is not None:
                if limiter is not None:
                    limiter.give_back(pod.namespace, decision.node)
                continue  # gone or going: nothing to evict
            pod_grace = found.spec.termination_grace_period_seconds
            grace = grace_period(pod_grace, settings.config.max_grace_period_seconds)
            if limiter is not None:
                seconds = (
                    grace if grace is not None else pod_grace if pod_grace is not None else DEFAULT_GRACE
                )
                limiter.evicted(pod.uid, self.clock() + seconds + self.in_flight_slack)
            try:
                result = await self.api.evict(pod.namespace, pod.name, pod.uid, grace)
            except NotLeading:
                if limiter is not None:
                    limiter.gone(pod.uid)
                raise
            if result.outcome is not Outcome.EVICTED and limiter is not None:
                # Nothing was evicted: the limits count evictions, not refusals.
                limiter.gone(pod.uid)
                limiter.give_back(pod.namespace, decision.node)
            if result.outcome is Outcome.EVICTED:
                self._pending.setdefault(decision.node, {})[pod.uid] = _Pending(frees, now)
                self._report(settings, decision, pod, EVICTED, self._why(decision, ranked.frees))
                needed -= frees
            elif result.outcome in (Outcome.BUDGET, Outcome.MULTIPLE_BUDGETS):
                self._report(settings, decision, pod, BLOCKED_BY_BUDGET, result.message)
            elif result.outcome is not Outcome.GONE:
                self._report(settings, decision, pod, FAILED, result.message)
                return

    def _why(self, decision: ReliefDecision, frees: int | None) -> str:
        signal = decision.signal or ""
        return (
            f"{signal} on node {decision.node}: {amount(decision.available, signal)} available, relief "
            f"frees up to {amount(decision.target, signal)}; the pod is next in the kubelet's eviction "
            f"order and frees {amount(frees, signal)}"
        )

    def _note_once(
        self, settings: EvictionSettings, decision: ReliefDecision, pod: Pod, result: str, message: str
    ) -> None:
        """Dry runs and rate limits repeat at every pass: each pod is reported once in a while."""
        key = (settings.policy_name or "", pod.uid, result)
        now = self.clock()
        self._noted = {k: at for k, at in self._noted.items() if now - at < NOTE_AGAIN_AFTER}
        if key in self._noted:
            return
        self._noted[key] = now
        self._report(settings, decision, pod, result, message)

    def _report(
        self, settings: EvictionSettings, decision: ReliefDecision, pod: Pod, result: str, message: str
    ) -> None:
        policy, signal = settings.policy_name or "", decision.signal or ""
        prom.relief_evictions.labels(policy, signal, RESULT_METRIC_LABEL[result]).inc()
        entry = EvictionRecord(
            time.time(),
            pod.namespace,
            pod.name,
            pod.uid,
            "",
            decision.node,
            result,
            message,
            REASON_NODE_PRESSURE,
            signal,
        )
        self.policies.record(policy, entry)
        ref = ObjectRef.for_pod(pod)
        if result == EVICTED:
            self.events.event(
                ref, NORMAL, REASON_EVICTED, ACTION, f"Evicted by EvictionPolicy {policy}: {message}"
            )
        elif result == WOULD_EVICT:
            note = f"Would be evicted by EvictionPolicy {policy} (dryRun): {message}"
            self.events.event(ref, NORMAL, REASON_DRY_RUN, ACTION, note)
        elif result in (BLOCKED_BY_BUDGET, FAILED):
            note = (
                f"Not evicted by EvictionPolicy {policy} (relieving {signal} on {decision.node}): {message}"
            )
            self.events.event(ref, WARNING, REASON_BLOCKED, ACTION, note)
        log.info(
            "pressure relief",
            extra={
                "policy": policy,
                "node": decision.node,
                "pod": pod.key,
                "result": result,
                "signal": signal,
            },
        )
