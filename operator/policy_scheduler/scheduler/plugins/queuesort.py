"""PrioritySort: the default queue order (queuesort/priority_sort.go)."""

from __future__ import annotations

from typing import Any

from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    """Higher priority first; equal priorities by the time the pod entered the queue."""

    name = "PrioritySort"

    def sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        return (-info.pod.priority, info.timestamp)
