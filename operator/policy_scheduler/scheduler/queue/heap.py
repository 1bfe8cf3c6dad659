"""A heap of QueuedPodInfo keyed by pod key, with update and delete (lazy invalidation)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo

SortKey = Callable[[QueuedPodInfo], tuple[Any, ...]]


class _Entry:
    __slots__ = ("alive", "info", "key", "seq")

    def __init__(self, key: tuple[Any, ...], seq: int, info: QueuedPodInfo) -> None:
        self.key = key
        self.seq = seq
        self.info = info
        self.alive = True

    def __lt__(self, other: _Entry) -> bool:
        # seq breaks ties first-in first-out and keeps infos from ever being compared.
        return (self.key, self.seq) < (other.key, other.seq)


class PodHeap:
    """Smallest sort key pops first; equal keys pop in insertion order."""

    def __init__(self, sort_key: SortKey) -> None:
        self.sort_key = sort_key
        self._heap: list[_Entry] = []
        self._entries: dict[str, _Entry] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self._entries

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return (entry.info for entry in list(self._entries.values()))

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        entry = self._entries.get(pod_key)
        return entry.info if entry is not None else None

    def add_or_update(self, info: QueuedPodInfo) -> None:
        """Insert, or re-key an existing pod (its sort key may have changed)."""
        pod_key = info.pod.key
        old = self._entries.get(pod_key)
        if old is not None:
            old.alive = False
        entry = _Entry(self.sort_key(info), next(self._seq), info)
        self._entries[pod_key] = entry
        heapq.heappush(self._heap, entry)
        self._maybe_compact()

    def delete(self, pod_key: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(pod_key, None)
        if entry is None:
            return None
        entry.alive = False
        self._maybe_compact()
        return entry.info

    def peek(self) -> QueuedPodInfo | None:
        self._drop_dead_top()
        return self._heap[0].info if self._heap else None

    def pop(self) -> QueuedPodInfo | None:
        self._drop_dead_top()
        if not self._heap:
            return None
        entry = heapq.heappop(self._heap)
        del self._entries[entry.info.pod.key]
        return entry.info

    def rebuild(self, sort_key: SortKey | None = None) -> None:
        """Recompute every key (after a framework or backoff setting changed)."""
        if sort_key is not None:
            self.sort_key = sort_key
        infos = [e.info for e in sorted(self._entries.values(), key=lambda e: e.seq)]
        self._heap = []
        self._entries = {}
        for info in infos:
            self.add_or_update(info)

    def _drop_dead_top(self) -> None:
        while self._heap and not self._heap[0].alive:
            heapq.heappop(self._heap)

    def _maybe_compact(self) -> None:
        if len(self._heap) > 64 and len(self._heap) > 2 * len(self._entries):
            self._heap = [e for e in self._heap if e.alive]
            heapq.heapify(self._heap)
