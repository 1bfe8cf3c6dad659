"""The scheduler's view of node pressure under relief: the nodes an EvictionPolicy's
pressureRelief holds under pressure, and the policies that relieve. The NodePressure filter
keeps the pods of those policies' profiles off such nodes, as the taints the node lifecycle
controller derives from the kubelet's conditions will once the kubelet reports them."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReliefMark:
    """A node under relief pressure: the conditions relief reports for it (MemoryPressure,
    DiskPressure, PIDPressure), under which policy."""

    conditions: tuple[str, ...]
    policy: str


class NodePressureView:
    """Marks by node name; `generation` moves on every change (the filter caches by it)."""

    def __init__(self) -> None:
        self._marks: dict[str, ReliefMark] = {}
        self._policies: frozenset[str] = frozenset()
        self.generation = 0

    @property
    def policies(self) -> frozenset[str]:
        """The EvictionPolicies with pressureRelief on."""
        return self._policies

    def set_policies(self, names: Collection[str]) -> None:
        names = frozenset(names)
        if names != self._policies:
            self._policies = names
            self.generation += 1

    def set(self, node: str, mark: ReliefMark | None) -> bool:
        """Mark (or, with None, clear) a node; True when that changed anything."""
        if self._marks.get(node) == mark:
            return False
        if mark is None:
            del self._marks[node]
        else:
            self._marks[node] = mark
        self.generation += 1
        return True

    def get(self, node: str) -> ReliefMark | None:
        return self._marks.get(node)

    def marks(self) -> Mapping[str, ReliefMark]:
        return dict(self._marks)
