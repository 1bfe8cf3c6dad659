"""Small immutable views of the cluster objects the scheduler consults besides pods and nodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.scheduler.model import LabelSelector


@dataclass(frozen=True, slots=True)
class PriorityClassInfo:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class PDBInfo:
    namespace: str
    name: str
    # None selects nothing (as upstream); an empty LabelSelector selects every pod in the namespace.
    selector: LabelSelector | None
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    # Pod names the disruption controller already counts as disrupted (preemption skips them).
    disrupted_pods: frozenset[str] = field(default_factory=frozenset)
    uid: str = ""
    resource_version: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    uid: str = ""
    phase: str = ""
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class PodConditionInfo:
    """One pod condition, as much of it as status patches need to decide what to send."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None
