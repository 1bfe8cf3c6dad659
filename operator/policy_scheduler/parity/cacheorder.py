"""The order of pods in kube-scheduler's NodeInfo, replayed from its log.

Preemption reprieves equally important victims (same priority, same start second) in
NodeInfo order, and that order is an artifact of the cache: an update or a removal swaps
the last pod into the gap (removeFromSlice) and an update re-appends the pod. Our engine gets
the bound pods in this order, so ties are broken the same way on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _swap_remove(pods: list[str], key: str) -> None:
    if key in pods:
        i = pods.index(key)
        pods[i] = pods[-1]
        pods.pop()


class CacheOrder:
    def __init__(self) -> None:
        self.by_node: dict[str, list[str]] = {}
        self.node_of: dict[str, str] = {}
        self.assumed: set[str] = set()
        self._cursor = 0

    def consume(self, ops: Sequence[tuple[str, str, str]], upto: int, known: Mapping[str, str]) -> None:
        """Apply the log's cache operations before index `upto`; `known` maps pod keys to nodes."""
        for op, key, node in ops[self._cursor : upto]:
            node = node or self.node_of.get(key) or known.get(key, "")
            if node:
                self._apply(op, key, node)
        self._cursor = max(self._cursor, upto)

    def _apply(self, op: str, key: str, node: str) -> None:
        pods = self.by_node.setdefault(node, [])
        if op == "assume":
            self.node_of[key] = node
            self.assumed.add(key)
            pods.append(key)
        elif op == "add" and key not in self.assumed:
            self.node_of[key] = node
            if key not in pods:
                pods.append(key)
        elif op in ("add", "update"):  # cache.updatePod: remove, then add again
            self.assumed.discard(key)
            _swap_remove(pods, key)
            pods.append(key)
        elif op == "delete":
            _swap_remove(pods, key)
            self.node_of.pop(key, None)

    def sort(self, bound: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """`bound` (API pods) with each node's pods in NodeInfo order; unknown pods first."""

        def position(pod: Mapping[str, Any]) -> int:
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            pods = self.by_node.get(pod["spec"]["nodeName"], [])
            return pods.index(key) if key in pods else -1

        return sorted(bound, key=position)
