"""The scheduling queue core (upstream PriorityQueue, v1.35 with QueueingHints and PopFromBackoffQ).

Pure and synchronous: time comes from the injected clock, and nothing here awaits. The asyncio
side (blocking pop, periodic flushes) lives in scheduling_queue.py.

Pods move between three places: activeQ (ready, ordered by the profile's QueueSort), backoffQ
(waiting out a backoff) and the unschedulable pool (waiting for a cluster event; also holds pods
gated by PreEnqueue). A pod popped for scheduling is "in flight" until done().
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, Resource
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.plugins.interpodaffinity.terms import parse_pod_terms
from policy_scheduler.scheduler.queue import changes
from policy_scheduler.scheduler.queue.active import ActiveQueue, InFlightEvent
from policy_scheduler.scheduler.queue.backoff import BackoffQueue, has_rejector_plugins
from policy_scheduler.scheduler.queue.changes import event_label
from policy_scheduler.scheduler.queue.hints import (
    HintEntry,
    Strategy,
    entries_for_event,
    gating_events,
    is_pod_worth_requeuing,
)
from policy_scheduler.scheduler.queue.nominator import PodNominator
from policy_scheduler.scheduler.queue.profile_hints import ProfileHints
from policy_scheduler.scheduler.queue.types import (
    ACTIVE_Q,
    BACKOFF_Q,
    DEFAULT_POD_INITIAL_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_BACKOFF_SECONDS,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS,
    UNSCHEDULABLE_Q,
    Clock,
    FrameworkSource,
    QueueFramework,
    pod_uid,
)
from policy_scheduler.scheduler.queue.unschedulable import UnschedulablePods

log = logging.getLogger(__name__)

# Frameworks were replaced: a wildcard event, so every unschedulable pod is retried.
PROFILE_UPDATE = ClusterEvent(Resource.WILDCARD, Action.ALL, "ProfileUpdate")

# PreEnqueueCheck: the caller's filter of which unschedulable pods an event may move.
PreCheck = Callable[[Pod], bool]


def le_priority_precheck(priority: int) -> PreCheck:
    """getLEPriorityPreCheck: only pods of lower or equal priority (a nominated pod went away)."""
    return lambda pod: pod.priority <= priority


class PriorityQueue:
    def __init__(
        self,
        frameworks: FrameworkSource,
        clock: Clock,
        *,
        pod_max_in_unschedulable_pods_seconds: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS,
        pop_from_backoff: bool = True,
        nominator: PodNominator | None = None,
    ) -> None:
        self._frameworks = frameworks
        self.clock = clock
        self.pod_max_in_unschedulable_pods_seconds = pod_max_in_unschedulable_pods_seconds
        self.pop_from_backoff = pop_from_backoff
        self.nominator = nominator if nominator is not None else PodNominator()
        self.active = ActiveQueue(self._sort_key)
        self.backoff = BackoffQueue(clock, self._backoff_for, self._sort_key, pop_from_backoff)
        self.unschedulable = UnschedulablePods()
        # (queue, event label) -> pods that entered that queue: upstream's queue_incoming_pods_total.
        self.incoming: Counter[tuple[str, str]] = Counter()
        self.hints = ProfileHints(self._framework_map)
        # namespace -> labels (the engine's snapshot): affinity terms with namespace selectors
        self.namespace_labels: Mapping[str, Mapping[str, str]] = {}
        self.closed = False

    # ---- frameworks ------------------------------------------------------------------------------

    def _framework_map(self) -> Mapping[str, QueueFramework]:
        source = self._frameworks
        return source if isinstance(source, Mapping) else source()

    def framework_for(self, pod: Pod) -> QueueFramework | None:
        return self._framework_map().get(pod.scheduler_name)

    def _sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        framework = self.framework_for(info.pod)
        if framework is None:
            return (-info.pod.priority, info.timestamp)  # PrioritySort's order for orphans
        return framework.queue_sort_key(info)

    def _backoff_for(self, info: QueuedPodInfo) -> tuple[float, float]:
        framework = self.framework_for(info.pod)
        if framework is None:
            return DEFAULT_POD_INITIAL_BACKOFF_SECONDS, DEFAULT_POD_MAX_BACKOFF_SECONDS
        return framework.profile.pod_initial_backoff_seconds, framework.profile.pod_max_backoff_seconds

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """isEventOfInterest: does any enabled plugin of any profile register this event?"""
        return self.hints.event_of_interest(event)

    def resort(self, requeue_unschedulable: bool = True) -> list[Pod]:
        """After frameworks were replaced (profile update): recompute every heap key and backoff.

        Pods whose scheduler name no longer has a framework are dropped and returned. With
        `requeue_unschedulable`, unschedulable pods are retried (after their backoff) and gated pods
        re-run PreEnqueue, as they would be when upstream restarts with a new configuration;
        otherwise a pod rejected or gated by a plugin that is gone could wait forever.
        """
        names = self._framework_map()
        dropped: list[Pod] = []
        for info in [*self.active, *self.backoff, *self.unschedulable]:
            if info.pod.scheduler_name not in names:
                self.delete(info.pod)
                dropped.append(info.pod)
        self.hints.clear()
        self.active.heap.rebuild()
        self.backoff.rebuild(reset_expirations=True)
        if requeue_unschedulable:
            gated = [info for info in self.unschedulable if info.gated]
            activated = any([self._move_to_active(info, PROFILE_UPDATE.label) for info in gated])
            if activated:
                self._broadcast()
            self._move_pods([i for i in self.unschedulable if not i.gated], PROFILE_UPDATE, None, None)
        return dropped

    # ---- hooks for the asyncio layer -------------------------------------------------------------

    def _broadcast(self) -> None:
        """Work may be available for pop(); the asyncio layer wakes its waiters."""

    # ---- moving pods between sub-queues ----------------------------------------------------------

    def _new_info(self, pod: Pod) -> QueuedPodInfo:
        return QueuedPodInfo(pod=pod, timestamp=self.clock())

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> None:
        """runPreEnqueuePlugins: a rejection gates the pod and counts as an unschedulable plugin."""
        framework = self.framework_for(info.pod)
        status = framework.run_pre_enqueue(info.pod) if framework is not None else None
        if status is None or status.is_success:
            info.gating_plugin = ""
            return
        plugin = status.plugin or "PreEnqueue"
        info.unschedulable_plugins.add(plugin)
        info.gating_plugin = plugin
        log.debug("pod %s gated by %s: %s", info.pod.key, plugin, status.message)

    def _has(self, pod_key: str) -> bool:
        return pod_key in self.active or pod_key in self.backoff or pod_key in self.unschedulable

    def _add_unschedulable(self, info: QueuedPodInfo, event: str) -> None:
        if self.unschedulable.add_or_update(info):
            self.incoming[(UNSCHEDULABLE_Q, event)] += 1

    def _move_to_active(self, info: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """moveToActiveQ: PreEnqueue runs (except straight from backoffQ, where it already ran)."""
        if not (self.pop_from_backoff and from_backoff):
            self._run_pre_enqueue(info)
        key = info.pod.key
        if info.gated:
            # A gated pod is never attempted, so a flush that woke it is over.
            info.was_flushed_from_unschedulable = False
            if not self._has(key):
                self._add_unschedulable(info, event)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self.clock()
        self.unschedulable.delete(key)
        self.backoff.delete(key)
        self.active.heap.add_or_update(info)
        self.incoming[(ACTIVE_Q, event)] += 1
        if event in (_UNSCHEDULED_POD_ADD, _UNSCHEDULED_POD_UPDATE):
            self.nominator.add_nominated_pod(info.pod)
        return True

    def _move_to_backoff(self, info: QueuedPodInfo, event: str) -> bool:
        """moveToBackoffQ: with pop-from-backoff, PreEnqueue runs on the way in."""
        if self.pop_from_backoff:
            self._run_pre_enqueue(info)
            if info.gated:
                info.was_flushed_from_unschedulable = False
                if info.pod.key not in self.unschedulable:
                    self._add_unschedulable(info, event)
                return False
        self.unschedulable.delete(info.pod.key)
        self.backoff.add(info)
        self.incoming[(BACKOFF_Q, event)] += 1
        return True

    def _requeue(self, info: QueuedPodInfo, strategy: Strategy, event: str) -> str:
        """requeuePodWithQueueingStrategy; returns the name of the sub-queue the pod went to."""
        if strategy == Strategy.SKIP:
            self._add_unschedulable(info, event)
            return UNSCHEDULABLE_Q
        if strategy == Strategy.AFTER_BACKOFF and self.backoff.is_backing_off(info):
            return BACKOFF_Q if self._move_to_backoff(info, event) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active(info, event) else UNSCHEDULABLE_Q

    def _wakes_pop(self, queue: str) -> bool:
        return queue == ACTIVE_Q or (self.pop_from_backoff and queue == BACKOFF_Q)

    # ---- pod lifecycle ---------------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod: to activeQ, or to the unschedulable pool if PreEnqueue gates it."""
        if self._move_to_active(self._new_info(pod), _UNSCHEDULED_POD_ADD):
            self._broadcast()

    def activate(self, pods: Iterable[Pod]) -> None:
        """Activate: force pods from the unschedulable pool or backoffQ into activeQ. A pod in flight
        gets a ForceActivate event so it is requeued when it comes back."""
        activated = False
        for pod in pods:
            key = pod.key
            info = self.unschedulable.get(key)
            from_backoff = False
            if info is None:
                info = self.backoff.delete(key)
                from_backoff = True
            if info is not None and self._move_to_active(info, changes.FORCE_ACTIVATE_LABEL, from_backoff):
                activated = True
                continue
            if info is None:
                self.active.add_events_if_pod_in_flight(None, pod, [changes.EVENT_FORCE_ACTIVATE])
        if activated:
            self._broadcast()

    def update(self, old: Pod | None, new: Pod) -> None:
        """Update: in-flight pods record the change; queued pods are refreshed; unschedulable pods are
        re-evaluated with the update's events; unknown pods are added."""
        events = changes.pod_scheduling_properties_change(new, old) if old is not None else []
        if self.active.add_events_if_pod_in_flight(old, new, events):
            return
        if old is not None:
            for sub in (self.active.heap, self.backoff):
                info = sub.get(old.key)
                if info is not None:
                    info.pod = new
                    if sub is self.active.heap:
                        self.active.heap.add_or_update(info)
                    else:
                        self.backoff.update(info)
                    self.nominator.update_nominated_pod(old, new)
                    return
        info = self.unschedulable.get(new.key)
        if info is not None:
            info.pod = new
            if old is not None:
                self.nominator.update_nominated_pod(old, new)
            hints = self.hints.for_profile(new.scheduler_name)
            for event in events:
                strategy = is_pod_worth_requeuing(info, event, old, new, hints, self.hints.observe)
                queue = self._requeue(info, strategy, event_label(event))
                if self._wakes_pop(queue):
                    self._broadcast()
                    break
            return
        if self._move_to_active(self._new_info(new), _UNSCHEDULED_POD_UPDATE):
            self._broadcast()

    def delete(self, pod: Pod) -> None:
        """Remove from every sub-queue and from the nominator (an in-flight pod stays tracked)."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod.key
        if self.active.heap.delete(key) is None and self.backoff.delete(key) is None:
            self.unschedulable.delete(key)

    def try_pop(self) -> QueuedPodInfo | None:
        """Pop without waiting: the activeQ head, else (pop-from-backoff) the backoffQ head."""
        while True:
            info = self.active.heap.pop()
            if info is None and self.pop_from_backoff:
                info = self.backoff.pop_rejected()
                if info is not None:
                    self.incoming[(ACTIVE_Q, changes.POP_FROM_BACKOFF_Q)] += 1
            if info is None:
                return None
            info.attempts += 1
            if not self.active.start_flight(info):
                log.error("pod %s is tracked in multiple places; discarding it", info.pod.key)
                continue
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = self.clock()
            info.unschedulable_plugins = set()
            info.pending_plugins = set()
            info.gating_plugin = ""
            return info

    def done(self, uid: str) -> None:
        """The scheduling cycle of a popped pod ended (success or not): stop tracking its events."""
        self.active.done(uid)

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, scheduling_cycle: int = 0) -> bool:
        """After a failed attempt: unschedulable pool, or backoffQ/activeQ when an event received
        during the attempt (or no rejecting plugin, i.e. an error) says to retry.

        Set info.unschedulable_plugins / pending_plugins from the diagnosis first. Ends in-flight
        tracking. False (logged) when the pod is already queued. `scheduling_cycle` is accepted
        for upstream parity; with queueing hints it does not affect the outcome.
        """
        try:
            if self._has(info.pod.key):
                log.error("pod %s is already present in the scheduling queue", info.pod.key)
                return False
            if has_rejector_plugins(info):
                info.unschedulable_count += 1
                info.consecutive_errors_count = 0
            else:
                info.consecutive_errors_count += 1
            info.timestamp = self.clock()
            info.backoff_expiration = 0.0
            info.was_flushed_from_unschedulable = False  # back after an attempt
            strategy = self.hints.for_in_flight_pod(info, self.active)
            queue = self._requeue(info, strategy, changes.SCHEDULE_ATTEMPT_FAILURE)
            log.debug("pod %s moved to %s after a failed attempt (%s)", info.pod.key, queue, strategy.name)
            if self._wakes_pop(queue):
                self._broadcast()
            return True
        finally:
            self.done(pod_uid(info.pod))

    # ---- cluster events --------------------------------------------------------------------------

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: Any = None, new: Any = None, precheck: PreCheck | None = None
    ) -> None:
        """MoveAllToActiveOrBackoffQueue: offer the event to every unschedulable pod's hints."""
        if not self.is_event_of_interest(event):
            return
        infos = [i for i in self.unschedulable if precheck is None or precheck(i.pod)]
        self._move_pods(infos, event, old, new)

    def move_to_active_or_backoff(
        self, pod_keys: Iterable[str], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        """As move_all_to_active_or_backoff, offered only to these pods: for an event the caller
        knows no other unschedulable pod can care about (one gang member's arrival)."""
        if not self.is_event_of_interest(event):
            return
        infos = [info for key in pod_keys if (info := self.unschedulable.get(key)) is not None]
        self._move_pods(infos, event, old, new)

    def _move_pods(self, infos: list[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any) -> None:
        activated = False
        # Per profile (and gating plugin): what does not depend on the pod, worked out once for
        # this event rather than once per waiting pod.
        matching: dict[str, list[HintEntry] | None] = {}
        ungates: dict[tuple[str, str], bool] = {}
        for info in infos:
            profile = info.pod.scheduler_name
            if profile not in matching:
                matching[profile] = entries_for_event(self.hints.for_profile(profile), event)
            hints = matching[profile]
            if info.gated:
                gate = (profile, info.gating_plugin)
                if gate not in ungates:
                    ungates[gate] = any(
                        changes.match_cluster_events(registered, event)
                        for registered in gating_events(self.hints.for_profile(profile), info.gating_plugin)
                    )
                if not ungates[gate]:
                    continue  # only events the gating plugin registered can ungate a pod
            strategy = is_pod_worth_requeuing(info, event, old, new, hints, self.hints.observe)
            if strategy == Strategy.SKIP:
                continue
            self.unschedulable.delete(info.pod.key)
            if self._wakes_pop(self._requeue(info, strategy, event_label(event))):
                activated = True
        self.active.add_event_if_any_in_flight(old, new, event)
        if activated:
            self._broadcast()

    def assigned_pod_added(self, pod: Pod) -> None:
        """AssignedPodAdded: a new pod elsewhere can only help pods with a cross-topology term."""
        event = changes.EVENT_ASSIGNED_POD_ADD
        if self.is_event_of_interest(event):
            self._move_pods(self._with_cross_topology_term(pod), event, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        """AssignedPodUpdated, per event: a scale-down may free room for any pod; other changes
        only help pods with a cross-topology term."""
        for event in changes.pod_scheduling_properties_change(new, old):
            if changes.match_cluster_events(_POD_SCALE_DOWN, event):
                self.move_all_to_active_or_backoff(event, old, new)
            elif self.is_event_of_interest(event):
                self._move_pods(self._with_cross_topology_term(new), event, old, new)

    def _with_cross_topology_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """getUnschedulablePodsWithCrossTopologyTerm: unschedulable pods that PodTopologySpread
        rejected in `pod`'s namespace, or with a required pod-affinity term `pod` matches."""
        ns_labels = self.namespace_labels.get(pod.namespace)
        found: list[QueuedPodInfo] = []
        for info in self.unschedulable:
            waiting = info.pod
            if _SPREAD in info.unschedulable_plugins and waiting.namespace == pod.namespace:
                found.append(info)
            elif waiting.affinity is not None and waiting.affinity.pod_affinity is not None:
                terms, _ = parse_pod_terms(waiting)
                if any(term.matches(pod, ns_labels) for term in terms.required_affinity):
                    found.append(info)
        return found

    def assigned_pod_deleted(self, pod: Pod) -> None:
        self.move_all_to_active_or_backoff(changes.EVENT_ASSIGNED_POD_DELETE, pod, None)

    def node_added(self, node: Node) -> None:
        self.move_all_to_active_or_backoff(changes.EVENT_NODE_ADD, None, node)

    def node_updated(self, old: Node, new: Node) -> None:
        for event in changes.node_scheduling_properties_change(new, old):
            self.move_all_to_active_or_backoff(event, old, new)

    def node_deleted(self, node: Node) -> None:
        self.move_all_to_active_or_backoff(changes.EVENT_NODE_DELETE, node, None)

    # ---- periodic flushes ------------------------------------------------------------------------

    def flush_backoff_completed(self) -> None:
        """flushBackoffQCompleted (every second): pods whose backoff is over go to activeQ."""
        activated = False
        for info in self.backoff.pop_all_completed():
            if self._move_to_active(info, changes.BACKOFF_COMPLETE, from_backoff=True):
                activated = True
        if activated:
            self._broadcast()

    def flush_unschedulable_leftover(self) -> None:
        """flushUnschedulablePodsLeftover (every 30 s): pods unschedulable for longer than
        podMaxInUnschedulablePodsDuration are moved with the UnschedulableTimeout event."""
        now = self.clock()
        stale = [
            info
            for info in self.unschedulable
            if now - info.timestamp > self.pod_max_in_unschedulable_pods_seconds
        ]
        for info in stale:
            info.was_flushed_from_unschedulable = True
        if stale:
            self._move_pods(stale, changes.EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    # ---- introspection ---------------------------------------------------------------------------

    @property
    def scheduling_cycle(self) -> int:
        return self.active.scheduling_cycle

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)

    def pending_counts(self) -> dict[str, int]:
        """Pods per sub-queue (upstream's pending_pods gauge; gated pods counted apart)."""
        unschedulable, gated = self.unschedulable.counts()
        return {
            "active": len(self.active),
            "backoff": len(self.backoff),
            "unschedulable": unschedulable,
            "gated": gated,
        }

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        key = pod.key
        return self.active.heap.get(key) or self.backoff.get(key) or self.unschedulable.get(key)

    def where(self, pod: Pod) -> str | None:
        """Which sub-queue holds the pod ("active", "backoff", "unschedulable", "gated") or None."""
        key = pod.key
        if key in self.active:
            return ACTIVE_Q
        if key in self.backoff:
            return BACKOFF_Q
        info = self.unschedulable.get(key)
        if info is None:
            return None
        return "gated" if info.gated else UNSCHEDULABLE_Q

    def pending_pods(self) -> list[Pod]:
        return [info.pod for info in (*self.active, *self.backoff, *self.unschedulable)]

    def in_flight_pods(self) -> list[Pod]:
        return self.active.in_flight_pods()

    def in_flight_log(self) -> list[Pod | InFlightEvent]:
        return self.active.in_flight_log()


_UNSCHEDULED_POD_ADD = event_label(changes.EVENT_UNSCHEDULED_POD_ADD)
_POD_SCALE_DOWN = ClusterEvent(Resource.POD, Action.UPDATE_POD_SCALE_DOWN)
_SPREAD = "PodTopologySpread"
_UNSCHEDULED_POD_UPDATE = event_label(changes.EVENT_UNSCHEDULED_POD_UPDATE)
