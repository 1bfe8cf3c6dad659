"""unschedulablePods: pods tried and found unschedulable, plus pods gated by PreEnqueue."""

from __future__ import annotations

from collections.abc import Iterator

from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo


class UnschedulablePods:
    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, pod_key: object) -> bool:
        return pod_key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self._pods.values()))

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        return self._pods.get(pod_key)

    def add_or_update(self, info: QueuedPodInfo) -> bool:
        """True when the pod was not here before."""
        new = info.pod.key not in self._pods
        self._pods[info.pod.key] = info
        return new

    def delete(self, pod_key: str) -> QueuedPodInfo | None:
        return self._pods.pop(pod_key, None)

    def counts(self) -> tuple[int, int]:
        """(unschedulable, gated): gated pods are counted apart, as upstream's pending_pods metric."""
        gated = sum(1 for info in self._pods.values() if info.gated)
        return len(self._pods) - gated, gated
