"""Queueing hints: which cluster events may make a rejected pod schedulable (per profile)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    HintFn,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.queue.changes import event_label, is_wildcard, match_cluster_events
from policy_scheduler.scheduler.queue.types import pod_uid

log = logging.getLogger(__name__)

_NODE_TAINT = ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT)


class Strategy(IntEnum):
    """queueingStrategy, ordered by strength."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass(frozen=True, slots=True)
class HintEntry:
    event: ClusterEvent
    plugin: str
    fn: HintFn | None  # None: always Queue (defaultQueueingHintFn)


def build_hint_map(events: Mapping[str, Sequence[ClusterEventWithHint]]) -> list[HintEntry]:
    """scheduler.buildQueueingHintMap for one profile.

    Plugins that register Node/Add but not Node/UpdateNodeTaint also get UpdateNodeTaint with an
    always-Queue hint (upstream's workaround for kubernetes#109437).
    """
    entries: list[HintEntry] = []
    for plugin, registered in events.items():
        node_added = node_taint = False
        for item in registered:
            if item.event.resource == Resource.NODE:
                node_added = node_added or bool(item.event.action & Action.ADD)
                node_taint = node_taint or bool(item.event.action & Action.UPDATE_NODE_TAINT)
            entries.append(HintEntry(item.event, plugin, item.hint))
        if node_added and not node_taint:
            entries.append(HintEntry(_NODE_TAINT, plugin, None))
    return entries


def is_event_of_interest(event: ClusterEvent, hint_maps: Iterable[list[HintEntry]]) -> bool:
    if is_wildcard(event):
        return True
    return any(match_cluster_events(e.event, event) for entries in hint_maps for e in entries)


# observe(plugin, event label, hint or "Error", seconds): queueing_hint_execution_duration_seconds
HintObserver = Callable[[str, str, str, float], None]


def _call_hint(
    entry: HintEntry, pod: Pod, old: Any, new: Any, event: ClusterEvent, observe: HintObserver | None
) -> QueueingHint:
    if entry.fn is None:
        return QueueingHint.QUEUE
    started = time.perf_counter()
    try:
        hint = entry.fn(pod, old, new)
        label = hint.value
    except Exception:
        # As upstream on a hint error: Queue, so the pod cannot get stuck.
        log.exception("queueing hint of %s failed for pod %s", entry.plugin, pod.key)
        hint, label = QueueingHint.QUEUE, "Error"
    if observe is not None:
        observe(entry.plugin, event_label(event), label, time.perf_counter() - started)
    return hint


def is_pod_worth_requeuing(
    info: QueuedPodInfo,
    event: ClusterEvent,
    old: Any,
    new: Any,
    entries: list[HintEntry] | None,
    observe: HintObserver | None = None,
) -> Strategy:
    """isPodWorthRequeuing: Queue from a pending plugin means immediately, from an unschedulable
    plugin after backoff; all Skip (or no matching hint) means stay unschedulable."""
    rejectors = info.unschedulable_plugins | info.pending_plugins
    if not rejectors:
        return Strategy.AFTER_BACKOFF
    if is_wildcard(event):
        # A wildcard event carrying a pod (ForceActivate) targets only that pod.
        if new is not None and (not isinstance(new, Pod) or pod_uid(new) != pod_uid(info.pod)):
            return Strategy.SKIP
        return Strategy.AFTER_BACKOFF
    if entries is None:
        return Strategy.AFTER_BACKOFF  # no hint map for the profile: upstream treats as a bug, queues
    strategy = Strategy.SKIP
    for entry in entries:
        if entry.plugin not in rejectors or not match_cluster_events(entry.event, event):
            continue
        if _call_hint(entry, info.pod, old, new, event, observe) == QueueingHint.SKIP:
            continue
        if entry.plugin in info.pending_plugins:
            return Strategy.IMMEDIATELY
        if not info.pending_plugins:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.AFTER_BACKOFF
    return strategy


def entries_for_event(entries: list[HintEntry] | None, event: ClusterEvent) -> list[HintEntry] | None:
    """The entries whose registered event matches `event`, in order: is_pod_worth_requeuing
    asks only those, so one event offered to many pods filters the profile's map once."""
    if entries is None:
        return None
    return [entry for entry in entries if match_cluster_events(entry.event, event)]


def gating_events(entries: list[HintEntry] | None, plugin: str) -> list[ClusterEvent]:
    """GatingPluginEvents: the events the plugin gating a pod registered."""
    return [e.event for e in entries or () if e.plugin == plugin]
