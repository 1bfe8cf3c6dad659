"""The scheduler's nodes and pods as node pressure reads them (the monitor's ClusterView)."""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Node, Pod


class EngineView:
    """Nodes from the engine's table; a node's running pods are the bound ones (pods assumed
    by a binding cycle in flight are not running there yet)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def nodes(self) -> Sequence[Node]:
        return list(self.engine.table.nodes)

    def running_pods(self, node: str) -> Sequence[Pod]:
        table, cache = self.engine.table, self.engine.cache
        if node not in table:
            return []
        return [p for p in table.pods_on(table.row(node)) if not cache.is_assumed(p)]

    def find_pod(self, namespace: str, name: str) -> Pod | None:
        return self.engine.cache.get_pod(f"{namespace}/{name}")
