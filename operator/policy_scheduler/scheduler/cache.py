"""The scheduler cache: nodes and the pods placed on them, including assumed pods.

An assumed pod is placed in the node table as soon as the scheduling cycle picks its node,
so the next cycle already sees its resources. The watch later confirms it (the bound pod
arrives with spec.nodeName), or the binding fails and the pod is forgotten. An assumed pod
whose binding finished but that the watch never confirms expires after `assumed_ttl`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable

log = logging.getLogger(__name__)

# Upstream stopped expiring assumed pods (ttl 0); we keep a bound so a lost watch event
# cannot leak capacity forever. Document: docs/differences.md.
DEFAULT_ASSUMED_TTL = 30.0


class CacheError(RuntimeError):
    pass


@dataclass(slots=True)
class _PodState:
    pod: Pod
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    def __init__(
        self,
        table: NodeTable | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        assumed_ttl: float = DEFAULT_ASSUMED_TTL,
    ) -> None:
        self.table = table if table is not None else NodeTable()
        self.clock = clock
        self.assumed_ttl = assumed_ttl
        self._pods: dict[str, _PodState] = {}
        # Pods whose node the cache has not seen (yet, or any more): re-placed when it appears.
        self._orphans: dict[str, dict[str, Pod]] = {}

    # ---- nodes -------------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        new = node.name not in self.table
        row = self.table.set_node(node)
        if new:
            for pod in self._orphans.pop(node.name, {}).values():
                self.table.add_pod(pod, row)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        if name not in self.table:
            return
        pods = self.table.remove_node(name)
        if pods:
            # Upstream keeps a deleted node's pods until they are deleted too.
            self._orphans[name] = {p.key: p for p in pods}

    @property
    def node_count(self) -> int:
        return len(self.table)

    def sizes(self) -> dict[str, int]:
        """Upstream's scheduler_cache_size: nodes, pods, and assumed pods."""
        assumed = sum(1 for state in self._pods.values() if state.assumed)
        return {"nodes": len(self.table), "pods": len(self._pods), "assumed_pods": assumed}

    # ---- pods --------------------------------------------------------------------------------

    def _place(self, pod: Pod) -> None:
        if pod.node_name in self.table:
            self.table.add_pod(pod, self.table.row(pod.node_name))
        else:
            self._orphans.setdefault(pod.node_name, {})[pod.key] = pod

    def _unplace(self, pod: Pod) -> None:
        if pod.node_name in self.table:
            self.table.remove_pod(pod, self.table.row(pod.node_name))
        else:
            orphans = self._orphans.get(pod.node_name)
            if orphans is not None:
                orphans.pop(pod.key, None)
                if not orphans:
                    del self._orphans[pod.node_name]

    def assume_pod(self, pod: Pod, node_name: str) -> Pod:
        """Place `pod` on `node_name` before the binding is confirmed; returns the assumed copy."""
        if pod.key in self._pods:
            raise CacheError(f"pod {pod.key} is in the cache, so can't be assumed")
        assumed = dataclasses.replace(pod, node_name=node_name)
        self._pods[pod.key] = _PodState(assumed, assumed=True)
        self._place(assumed)
        return assumed

    def finish_binding(self, pod: Pod) -> None:
        state = self._pods.get(pod.key)
        if state is not None and state.assumed:
            state.binding_finished = True
            state.deadline = self.clock() + self.assumed_ttl

    def forget_pod(self, pod: Pod) -> None:
        state = self._pods.get(pod.key)
        if state is None or not state.assumed:
            return
        self._unplace(state.pod)
        del self._pods[pod.key]

    def is_assumed(self, pod: Pod) -> bool:
        state = self._pods.get(pod.key)
        return state is not None and state.assumed

    def add_pod(self, pod: Pod) -> None:
        """A bound pod seen by the watch: confirms an assumed pod or adds a new one."""
        state = self._pods.get(pod.key)
        if state is not None:
            # Confirmation (or a re-add): replace whatever we had with the real object.
            self._unplace(state.pod)
        self._pods[pod.key] = _PodState(pod)
        self._place(pod)

    def update_pod(self, pod: Pod) -> None:
        self.add_pod(pod)

    def remove_pod(self, pod: Pod) -> None:
        state = self._pods.pop(pod.key, None)
        if state is not None:
            self._unplace(state.pod)

    def get_pod(self, key: str) -> Pod | None:
        state = self._pods.get(key)
        return None if state is None else state.pod

    def cleanup_expired_assumed_pods(self) -> list[Pod]:
        now = self.clock()
        expired = [
            s.pod
            for s in self._pods.values()
            if s.assumed and s.binding_finished and s.deadline is not None and now >= s.deadline
        ]
        for pod in expired:
            log.warning("assumed pod expired without confirmation", extra={"pod": pod.key})
            self.forget_pod(pod)
        return expired

    @property
    def pod_count(self) -> int:
        return len(self._pods)
