"""activeQ and the in-flight bookkeeping (upstream active_queue.go).

In-flight pods are those popped and not yet done(). Cluster events received while any pod is in
flight are recorded in one ordered log; when a pod fails, only the events logged after its own pop
are replayed through its queueing hints, so an event that arrived mid-cycle is not lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from policy_scheduler.scheduler.framework.events import ClusterEvent
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.queue.heap import PodHeap, SortKey
from policy_scheduler.scheduler.queue.types import pod_uid


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    event: ClusterEvent
    old: Any = None
    new: Any = None


class ActiveQueue:
    def __init__(self, sort_key: SortKey) -> None:
        self.heap = PodHeap(sort_key)
        self.scheduling_cycle = 0
        # uid -> (log position at pop, pod); the log holds (position, event) in arrival order.
        self._in_flight: dict[str, tuple[int, Pod]] = {}
        self._log: deque[tuple[int, InFlightEvent]] = deque()
        self._position = 0

    def __len__(self) -> int:
        return len(self.heap)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self.heap

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self.heap)

    # ---- popping ---------------------------------------------------------------------------------

    def is_in_flight(self, pod: Pod) -> bool:
        return pod_uid(pod) in self._in_flight

    def start_flight(self, info: QueuedPodInfo) -> bool:
        """Register a popped pod; False if it is already in flight (a bug upstream guards against)."""
        uid = pod_uid(info.pod)
        if uid in self._in_flight:
            return False
        self._position += 1
        self._in_flight[uid] = (self._position, info.pod)
        self.scheduling_cycle += 1
        return True

    def done(self, uid: str) -> None:
        """End tracking; drop log entries no remaining in-flight pod can need."""
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._log.clear()
            return
        # Positions grow in insertion order, so the oldest in-flight pod is the dict's first.
        oldest = next(iter(self._in_flight.values()))[0]
        while self._log and self._log[0][0] < oldest:
            self._log.popleft()

    def done_all(self) -> None:
        for uid in list(self._in_flight):
            self.done(uid)

    # ---- the event log ---------------------------------------------------------------------------

    def _record(self, event: InFlightEvent) -> None:
        self._position += 1
        self._log.append((self._position, event))

    def add_event_if_any_in_flight(self, old: Any, new: Any, event: ClusterEvent) -> bool:
        if not self._in_flight:
            return False
        self._record(InFlightEvent(event, old, new))
        return True

    def add_events_if_pod_in_flight(self, old: Pod | None, new: Pod, events: Iterable[ClusterEvent]) -> bool:
        """An update of a pod being scheduled is recorded instead of applied (it comes back later)."""
        if pod_uid(new) not in self._in_flight:
            return False
        for event in events:
            self._record(InFlightEvent(event, old, new))
        return True

    def events_for_pod(self, pod: Pod) -> list[InFlightEvent] | None:
        """clusterEventsForPod: events logged after this pod was popped; None when not in flight."""
        flight = self._in_flight.get(pod_uid(pod))
        if flight is None:
            return None
        since = flight[0]
        newer: list[InFlightEvent] = []
        for position, event in reversed(self._log):
            if position <= since:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def in_flight_pods(self) -> list[Pod]:
        return [pod for _, pod in self._in_flight.values()]

    def in_flight_log(self) -> list[Pod | InFlightEvent]:
        """listInFlightEvents: pod markers and events interleaved in arrival order (for tests)."""
        merged: list[tuple[int, Pod | InFlightEvent]] = [
            (position, pod) for position, pod in self._in_flight.values()
        ]
        merged.extend(self._log)
        merged.sort(key=lambda item: item[0])
        return [item for _, item in merged]
