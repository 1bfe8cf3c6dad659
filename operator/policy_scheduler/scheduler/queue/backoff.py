"""backoffQ: pods waiting out an exponential backoff before they may be retried.

As upstream v1.35 (SchedulerPopFromBackoffQ on): two heaps, one for pods rejected by plugins
(ordered by backoff expiry, then queue sort order; pop() may take from it when activeQ is empty)
and one for pods that failed with an error (ordered by backoff expiry only; never popped early).
Expiry times are aligned down to whole seconds, the 1 s ordering window.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.queue.heap import PodHeap
from policy_scheduler.scheduler.queue.types import Clock

ORDERING_WINDOW_SECONDS = 1.0
NO_BACKOFF = -math.inf  # upstream's zero time: before any "now"
_NS = 1_000_000_000

# Per pod: (initial, max) backoff in seconds, from the pod's profile.
BackoffFor = Callable[[QueuedPodInfo], tuple[float, float]]


def calculate_backoff_duration(count: int, initial: float, maximum: float) -> float:
    """backoffQueue.calculateBackoffDuration: initial * 2^(count-1), capped at maximum.

    Done in integer nanoseconds like Go's time.Duration, including its overflow guard.
    """
    if count == 0:
        return 0.0
    initial_ns, max_ns = round(initial * _NS), round(maximum * _NS)
    shift = count - 1
    if initial_ns > max_ns >> shift:
        return max_ns / _NS
    return (initial_ns << shift) / _NS


def has_rejector_plugins(info: QueuedPodInfo) -> bool:
    return bool(info.unschedulable_plugins or info.pending_plugins)


class BackoffQueue:
    def __init__(
        self,
        clock: Clock,
        backoff_for: BackoffFor,
        sort_key: Callable[[QueuedPodInfo], tuple[Any, ...]],
        pop_from_backoff: bool = True,
    ) -> None:
        self.clock = clock
        self.backoff_for = backoff_for
        self.pop_from_backoff = pop_from_backoff
        self._sort_key = sort_key
        self.rejected = PodHeap(self._rejected_key)
        self.errored = PodHeap(self._errored_key)

    # ---- backoff time ----------------------------------------------------------------------------

    def align(self, t: float) -> float:
        """alignToWindow: truncate to the ordering window when popping from backoffQ is enabled."""
        if not self.pop_from_backoff:
            return t
        return math.floor(t / ORDERING_WINDOW_SECONDS) * ORDERING_WINDOW_SECONDS

    def backoff_time(self, info: QueuedPodInfo) -> float:
        """getBackoffTime: cached in info.backoff_expiration (0.0 means not computed yet)."""
        initial, maximum = self.backoff_for(info)
        if maximum == 0:
            return NO_BACKOFF
        count = info.consecutive_errors_count or info.unschedulable_count
        if count == 0:
            return NO_BACKOFF
        if info.backoff_expiration == 0.0:
            duration = calculate_backoff_duration(count, initial, maximum)
            info.backoff_expiration = self.align(info.timestamp + duration)
        return info.backoff_expiration

    def is_backing_off(self, info: QueuedPodInfo) -> bool:
        return not self.backoff_time(info) < self.align(self.clock())

    def _rejected_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        if self.pop_from_backoff:
            return (self.backoff_time(info), *self._sort_key(info))
        return (self.backoff_time(info),)

    def _errored_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        return (self.backoff_time(info),)

    # ---- contents --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rejected) + len(self.errored)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self.rejected or pod_key in self.errored

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        yield from self.rejected
        yield from self.errored

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        return self.rejected.get(pod_key) or self.errored.get(pod_key)

    def add(self, info: QueuedPodInfo) -> None:
        """Pods with no rejecting plugin failed with an error: they go to the error heap."""
        if has_rejector_plugins(info):
            self.errored.delete(info.pod.key)
            self.rejected.add_or_update(info)
        else:
            self.rejected.delete(info.pod.key)
            self.errored.add_or_update(info)

    def update(self, info: QueuedPodInfo) -> bool:
        """Re-key a pod already here (its pod object changed); False when it is not here."""
        for heap in (self.rejected, self.errored):
            if info.pod.key in heap:
                heap.add_or_update(info)
                return True
        return False

    def delete(self, pod_key: str) -> QueuedPodInfo | None:
        return self.rejected.delete(pod_key) or self.errored.delete(pod_key)

    def pop_rejected(self) -> QueuedPodInfo | None:
        """popBackoff: the head of the plugin-rejected heap, for when activeQ is empty."""
        return self.rejected.pop()

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        """popAllBackoffCompleted: every pod whose backoff is over, from both heaps."""
        done: list[QueuedPodInfo] = []
        for heap in (self.rejected, self.errored):
            while (head := heap.peek()) is not None and not self.is_backing_off(head):
                heap.pop()
                done.append(head)
        return done

    def rebuild(self, reset_expirations: bool) -> None:
        if reset_expirations:
            for info in self:
                info.backoff_expiration = 0.0
        self.rejected.rebuild()
        self.errored.rebuild()
