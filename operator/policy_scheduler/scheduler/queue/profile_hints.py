"""Each profile's queueing hints as the queue asks them: the hint map per profile, whether any
plugin cares about an event, and the verdict for a pod that was in flight when events came."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from policy_scheduler.scheduler.framework.events import ClusterEvent
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.queue.active import ActiveQueue
from policy_scheduler.scheduler.queue.backoff import has_rejector_plugins
from policy_scheduler.scheduler.queue.hints import (
    HintEntry,
    HintObserver,
    Strategy,
    build_hint_map,
    is_event_of_interest,
    is_pod_worth_requeuing,
)
from policy_scheduler.scheduler.queue.types import QueueFramework

log = logging.getLogger(__name__)


class ProfileHints:
    """Hint maps and isEventOfInterest answers, rebuilt when a profile's framework is replaced."""

    def __init__(self, framework_map: Callable[[], Mapping[str, QueueFramework]]) -> None:
        self._framework_map = framework_map
        self.observe: HintObserver | None = None  # queueing hints' durations (the operator's metrics)
        self._cache: dict[str, tuple[QueueFramework, list[HintEntry]]] = {}
        # isEventOfInterest per event, for one framework mapping (the engine replaces the mapping
        # when profiles change; clear() empties it too): most pod events interest no plugin, and
        # scanning every registered event on each was a visible per-pod cost.
        self._interest: tuple[Mapping[str, QueueFramework] | None, dict[ClusterEvent, bool]] = (None, {})

    def clear(self) -> None:
        self._cache.clear()
        self._interest = (None, {})

    def for_profile(self, scheduler_name: str) -> list[HintEntry] | None:
        """The profile's hint map, rebuilt whenever its framework object was replaced."""
        framework = self._framework_map().get(scheduler_name)
        if framework is None:
            self._cache.pop(scheduler_name, None)
            return None
        cached = self._cache.get(scheduler_name)
        if cached is None or cached[0] is not framework:
            cached = (framework, build_hint_map(framework.events_to_register()))
            self._cache[scheduler_name] = cached
        return cached[1]

    def event_of_interest(self, event: ClusterEvent) -> bool:
        """isEventOfInterest, cached per event until the profiles change (asked on every pod event)."""
        frameworks = self._framework_map()
        known, cache = self._interest
        if known is not frameworks:
            cache = {}
            self._interest = (frameworks, cache)
        interested = cache.get(event)
        if interested is None:
            maps = [self.for_profile(name) for name in list(frameworks)]
            interested = cache[event] = is_event_of_interest(event, [m for m in maps if m is not None])
        return interested

    def for_in_flight_pod(self, info: QueuedPodInfo, active: ActiveQueue) -> Strategy:
        """determineSchedulingHintForInFlightPod: replay the events received since the pod's pop."""
        if not has_rejector_plugins(info):
            return Strategy.AFTER_BACKOFF
        events = active.events_for_pod(info.pod)
        if events is None:
            log.error("pod %s is not in flight; requeueing it after backoff", info.pod.key)
            return Strategy.AFTER_BACKOFF
        hints = self.for_profile(info.pod.scheduler_name)
        result = Strategy.SKIP
        for recorded in events:
            strategy = is_pod_worth_requeuing(
                info, recorded.event, recorded.old, recorded.new, hints, self.observe
            )
            if strategy == Strategy.IMMEDIATELY:
                return strategy
            if strategy == Strategy.AFTER_BACKOFF:
                result = strategy
                if not info.pending_plugins:
                    return result
        return result
