"""Node usage as the scheduler keeps it, and the headroom a pod would leave above a node's
eviction thresholds.

A usage sample is older than the pods bound since: `NodeUsage.measured_requests` holds the
requests of the pods the sample covers, so the requests of the node's pods beyond those (the
node table's sum minus this) count as demand the sample does not show yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.pressure.observations import NodeStats, Observations, make_signal_observations
from policy_scheduler.scheduler.pressure.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
)
from policy_scheduler.scheduler.pressure.thresholds import EvictionConfig, Threshold
from policy_scheduler.scheduler.pressure.units import amount
from policy_scheduler.scheduler.resource_names import EPHEMERAL_STORAGE, MEMORY

# The request that stands for a new pod's usage of each signal's resource; the others
# (inodes, PIDs, image layers) have no request and count as 0.
DEMAND_RESOURCE: Mapping[str, str] = {
    MEMORY_AVAILABLE: MEMORY,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY,
    NODEFS_AVAILABLE: EPHEMERAL_STORAGE,
    CONTAINERFS_AVAILABLE: EPHEMERAL_STORAGE,
}
DEMAND_RESOURCES = (MEMORY, EPHEMERAL_STORAGE)


def requests_of(pods: Iterable[Pod]) -> dict[str, int]:
    """The memory and ephemeral-storage requests of `pods`, summed as the node table sums them."""
    total = dict.fromkeys(DEMAND_RESOURCES, 0)
    for pod in pods:
        for resource in DEMAND_RESOURCES:
            total[resource] += pod.requests.get(resource, 0)
    return total


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """One node's last usage sample, with what is known of its kubelet's thresholds."""

    observations: Observations
    # The node's own eviction thresholds (UpdateContainerFsThresholds applied); None: unknown.
    thresholds: tuple[Threshold, ...] | None = None
    # Requests of the pods the sample includes; None: unknown (no correction for newer pods).
    measured_requests: Mapping[str, int] | None = None
    time: float | None = None  # the sample's time (the oldest of its signals)
    source: str = ""
    threshold_source: str = ""  # where `thresholds` come from ("" when unknown)

    @classmethod
    def of(
        cls,
        stats: NodeStats,
        config: EvictionConfig | None = None,
        measured_pods: Iterable[Pod] | None = None,
    ) -> NodeUsage:
        observations = make_signal_observations(stats)
        times = [o.time for o in observations.values() if o.time is not None]
        return cls(
            observations,
            config.thresholds_for(stats.layout) if config is not None else None,
            requests_of(measured_pods) if measured_pods is not None else None,
            min(times) if times else None,
            stats.source,
            config.source if config is not None else "",
        )

    def unmeasured(self, requested: Mapping[str, int]) -> dict[str, int]:
        """Of `requested` (the summed requests of pods on the node), what the sample does not
        show yet; nothing when it is unknown which pods the sample covers."""
        if self.measured_requests is None:
            return dict.fromkeys(DEMAND_RESOURCES, 0)
        return {r: max(0, requested.get(r, 0) - self.measured_requests.get(r, 0)) for r in DEMAND_RESOURCES}

    def level(self, signal: str, floor: Threshold | None) -> int | None:
        """The highest of the node's thresholds on `signal` and `floor`, resolved against the
        signal's capacity; None without an observation."""
        observed = self.observations.get(signal)
        if observed is None:
            return None
        levels = [t.quantity(observed.capacity) for t in self.thresholds or () if t.signal == signal]
        if floor is not None:
            levels.append(floor.quantity(observed.capacity))
        return max(levels, default=0)


class NodeUsageStore:
    """Usage per node name; `generation` moves on every change (plugins cache by it)."""

    def __init__(self) -> None:
        self._usage: dict[str, NodeUsage] = {}
        self.generation = 0

    def set(self, node: str, usage: NodeUsage) -> None:
        self._usage[node] = usage
        self.generation += 1

    def delete(self, node: str) -> None:
        if self._usage.pop(node, None) is not None:
            self.generation += 1

    def get(self, node: str) -> NodeUsage | None:
        return self._usage.get(node)

    def __len__(self) -> int:
        return len(self._usage)


@dataclass(frozen=True, slots=True)
class Crossing:
    """What a placement leaves of a signal against the node's threshold (amounts in the
    signal's unit); `crosses` when that is below the threshold."""

    signal: str
    available_before: int  # what the sample shows, less the requests placed before
    available_after: int
    level: int

    @property
    def crosses(self) -> bool:
        return self.available_after < self.level

    @property
    def short_by(self) -> int:
        """How far below the threshold the placement leaves the signal (0: not below)."""
        return max(0, self.level - self.available_after)

    def describe(self, node: str) -> str:
        threshold = amount(self.level, self.signal)
        if self.available_before < self.level:
            before = amount(self.available_before, self.signal)
            return f"{node} is already below its {self.signal} eviction threshold ({before} < {threshold})"
        after, what = amount(self.available_after, self.signal), f"{self.signal} on {node}"
        if self.crosses:
            return f"would push {what} below its eviction threshold ({after} left < {threshold})"
        return f"would leave {what} above its eviction threshold ({after} left >= {threshold})"


def placement_checks(
    usage: NodeUsage,
    earlier: Mapping[str, int],
    added: Mapping[str, int],
    floors: Mapping[str, Threshold] | None = None,
) -> list[Crossing]:
    """What a pod requesting `added` leaves of each signal its requests draw on, against the
    node's thresholds (or `floors`), after `earlier` requests the sample does not show yet."""
    found: list[Crossing] = []
    for signal, resource in DEMAND_RESOURCE.items():
        observed = usage.observations.get(signal)
        if observed is None or added.get(resource, 0) <= 0:
            continue
        level = usage.level(signal, (floors or {}).get(signal))
        if not level:
            continue
        before = observed.available - earlier.get(resource, 0)
        found.append(Crossing(signal, before, before - added[resource], level))
    return found


@dataclass(slots=True)
class PlacementTracker:
    """Requests placed on each node since its usage sample, to tell which placements leave the
    node below a threshold (simulate's note, explain's check)."""

    store: NodeUsageStore
    placed: dict[str, dict[str, int]] = field(default_factory=dict)

    def seed(self, node: str, pods: Iterable[Pod]) -> None:
        """The pods already on the node: their requests the usage sample does not include."""
        usage = self.store.get(node)
        if usage is not None:
            self.placed[node] = usage.unmeasured(requests_of(pods))

    def check(self, node: str, pod: Pod) -> list[Crossing] | None:
        """What placing the pod on the node leaves of each signal (placing nothing); None
        without usage for the node."""
        usage = self.store.get(node)
        if usage is None:
            return None
        earlier = self.placed.get(node, dict.fromkeys(DEMAND_RESOURCES, 0))
        return placement_checks(usage, earlier, requests_of([pod]))

    def place(self, node: str, pod: Pod) -> list[Crossing]:
        """Place the pod; the signals its placement leaves below a threshold."""
        found = self.check(node, pod)
        if found is None:
            return []
        earlier = self.placed.get(node, dict.fromkeys(DEMAND_RESOURCES, 0))
        added = requests_of([pod])
        self.placed[node] = {r: earlier[r] + added[r] for r in DEMAND_RESOURCES}
        return [c for c in found if c.crosses]
