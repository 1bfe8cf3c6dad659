"""The small protocol the queue needs from a profile's framework, and shared queue helpers."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.framework.status import Status
from policy_scheduler.scheduler.model import Pod

DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1.0
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_SECONDS = 300.0

# Names of the sub-queues, as in upstream metrics and logs.
ACTIVE_Q = "active"
BACKOFF_Q = "backoff"
UNSCHEDULABLE_Q = "unschedulable"


class BackoffSettings(Protocol):
    """The two backoff fields of a ResolvedProfile."""

    @property
    def pod_initial_backoff_seconds(self) -> float: ...

    @property
    def pod_max_backoff_seconds(self) -> float: ...


class QueueFramework(Protocol):
    """What the queue uses of framework.runtime.Framework (tests use tiny stubs)."""

    @property
    def profile(self) -> BackoffSettings: ...

    def queue_sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]: ...

    def run_pre_enqueue(self, pod: Pod) -> Status: ...

    def events_to_register(self) -> Mapping[str, Sequence[ClusterEventWithHint]]: ...


# A live mapping scheduler name -> framework, or a zero-argument callable returning one.
FrameworkSource = Mapping[str, QueueFramework] | Callable[[], Mapping[str, QueueFramework]]

Clock = Callable[[], float]


def pod_uid(pod: Pod) -> str:
    """In-flight pods are tracked by UID (pods built without one fall back to their key)."""
    return pod.uid or pod.key
