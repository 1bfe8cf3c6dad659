"""What the scheduling and binding cycles need from the queue and tell their hooks, and hand on."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import PostFilterResult, QueuedPodInfo
from policy_scheduler.scheduler.framework.outcomes import ScoreOutcome
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import Rows


class CycleQueue(Protocol):
    """What a cycle needs of the scheduling queue (the Engine adapts its SchedulingQueue)."""

    def done(self, uid: str) -> None: ...

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, scheduling_cycle: int) -> None: ...

    def requeue(self, info: QueuedPodInfo) -> None: ...

    def move_all_to_active_or_backoff(
        self, event: object, old: object, new: object, precheck: Callable[[Pod], bool] | None = None
    ) -> None: ...

    def activate_nominated(self, pod: Pod, node_name: str) -> None: ...

    def delete_nominated(self, pod: Pod) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...


class SchedulerHooks(Protocol):
    """Side effects the scheduler asks for; the operator writes them to the API, simulate to memory."""

    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None: ...

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None: ...

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None: ...

    def nomination_cleared(self, pod: Pod) -> None: ...

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None: ...


class NullHooks:
    def scheduled(self, pod: Pod, node_name: str, framework: Framework) -> None:
        pass

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        pass

    def preempting(self, pod: Pod, result: PostFilterResult, framework: Framework) -> None:
        pass

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: Framework, result: str, seconds: float) -> None:
        pass


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: ScoreOutcome | None = None
    feasible_rows: Rows | None = None


@dataclass(slots=True)
class BindingTask:
    """What a successful scheduling cycle hands to the binding cycle."""

    info: QueuedPodInfo
    framework: Framework
    state: CycleState
    assumed: Pod
    node_name: str
    started: float = field(default_factory=time.monotonic)
