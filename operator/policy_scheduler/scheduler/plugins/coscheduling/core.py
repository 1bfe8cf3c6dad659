"""Port of scheduler-plugins' pkg/coscheduling/core: the checks on a group as a whole."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from policy_scheduler.scheduler.gang.podgroup import PodGroup
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.resource_names import PODS


def not_enough_members(pod_name: str, present: int, group: PodGroup) -> str:
    return (
        f"pre-filter pod {pod_name} cannot find enough sibling pods, "
        f"current pods number: {present}, minMember of group: {group.min_member}"
    )


def resource_gap(table: NodeTable, group: PodGroup, assigned_rows: Mapping[str, int]) -> dict[str, int]:
    """CheckClusterResource: what of minResources (plus minMember pods) the nodes cannot hold.

    A node's room is allocatable minus requested, with the group's own assigned members given
    back (getNodeResource); rooms are summed node by node until the request is covered.
    Empty when the group fits.
    """
    wanted = dict(group.min_resources or {})
    wanted[PODS] = group.min_member
    n = len(table)
    if n == 0:
        return {name: value for name, value in wanted.items() if value > 0}
    own_pods = np.zeros(n, dtype=np.int64)
    own: dict[str, np.ndarray] = {}
    for key, row in assigned_rows.items():
        member = table.pods[row].get(key)
        if member is None:
            continue
        own_pods[row] += 1
        for name, value in member.requests.items():
            own.setdefault(name, np.zeros(n, dtype=np.int64))[row] += value
    gap: dict[str, int] = {}
    for name, value in wanted.items():
        index = table.resource_index.get(name)
        if name == PODS:
            alloc = table.allocatable[index, :n] if index is not None else np.zeros(n, dtype=np.int64)
            room = alloc - (table.pod_count[:n] - own_pods)
        elif index is None:
            room = np.zeros(n, dtype=np.int64)
        else:
            room = table.allocatable[index, :n] - table.requested[index, :n] + own.get(name, 0)
        # Upstream subtracts node after node and stops once covered: the best prefix sum decides.
        order = table.order()
        best = int(np.cumsum(room[order]).max()) if len(order) else 0
        if best < value:
            gap[name] = value - max(best, 0)
    return gap


def format_gap(gap: Mapping[str, int]) -> str:
    return "resource gap: map[" + " ".join(f"{name}:{gap[name]}" for name in sorted(gap)) + "]"
