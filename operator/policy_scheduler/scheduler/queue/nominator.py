"""Pods nominated to nodes (by preemption, or status.nominatedNodeName) but not yet bound.

Lower-or-equal priority pods are filtered as if nominated pods already ran on those nodes.
Unlike upstream, which keeps name/UID references and re-reads the pod from the queue, the latest
Pod object is stored directly; the queue refreshes it on every update it sees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.queue.types import pod_uid

log = logging.getLogger(__name__)

# namespace/name -> the live pod, or None when it no longer exists (upstream's pod lister).
PodLister = Callable[[str], Pod | None]


class PodNominator:
    def __init__(self, pod_lister: PodLister | None = None) -> None:
        self.pod_lister = pod_lister
        self._by_node: dict[str, list[Pod]] = {}
        self._node_of: dict[str, str] = {}
        # node -> highest priority nominated to it, kept up to date per change; `_top` is a copy
        # taken lazily, a new object per change so that callers may cache what they derive
        # from it by identity (a C-level copy, not a rescan of every nominated pod).
        self._live_top: dict[str, int] = {}
        self._top: Mapping[str, int] | None = None

    def add_nominated_pod(self, pod: Pod, node_name: str | None = None) -> None:
        """node_name None: ModeNoop (use pod.nominated_node_name); a string: ModeOverride.

        An override with "" clears the nomination.
        """
        self.delete_nominated_pod_if_exists(pod)
        target = pod.nominated_node_name if node_name is None else node_name
        if not target:
            return
        if self.pod_lister is not None:
            live = self.pod_lister(pod.key)
            if live is None:
                log.debug("pod %s no longer exists, not nominating it", pod.key)
                return
            if live.node_name:
                log.debug("pod %s is already bound to %s, not nominating it", pod.key, live.node_name)
                return
        self._node_of[pod_uid(pod)] = target
        self._by_node.setdefault(target, []).append(pod)
        top = self._live_top.get(target)
        if top is None or pod.priority > top:
            self._live_top[target] = pod.priority
        self._top = None

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """Keep an in-memory nomination when an update arrives before the status shows it."""
        node_name: str | None = None
        if not old.nominated_node_name and not new.nominated_node_name:
            node_name = self._node_of.get(pod_uid(old))
        self.delete_nominated_pod_if_exists(old)
        self.add_nominated_pod(new, node_name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        uid = pod_uid(pod)
        node_name = self._node_of.pop(uid, None)
        if node_name is None:
            return
        pods = self._by_node.get(node_name, [])
        pods[:] = [p for p in pods if pod_uid(p) != uid]
        if pods:
            self._live_top[node_name] = max(p.priority for p in pods)
        else:
            self._by_node.pop(node_name, None)
            self._live_top.pop(node_name, None)
        self._top = None

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self._by_node.get(node_name, ()))

    def nominated_node_names(self) -> list[str]:
        """Nodes with at least one nominated pod."""
        return list(self._by_node)

    def nominated_priorities(self) -> Mapping[str, int]:
        """Node -> the highest priority among the pods nominated to it (nodes without any are
        absent): the framework re-filters only nodes holding a pod of priority >= the pod's.
        The same object is returned until the nominations change."""
        if self._top is None:
            self._top = dict(self._live_top)
        return self._top

    def nominated_node_name(self, pod: Pod) -> str | None:
        return self._node_of.get(pod_uid(pod))

    def __len__(self) -> int:
        return len(self._node_of)
