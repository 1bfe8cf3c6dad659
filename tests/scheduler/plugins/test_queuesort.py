"""PrioritySort: port of priority_sort_test.go."""

from __future__ import annotations

import pytest

from policy_scheduler.scheduler.framework.interfaces import Handle, QueuedPodInfo
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.queuesort import PrioritySort

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def info(priority: int, timestamp: float = 0.0, name: str = "p") -> QueuedPodInfo:
    return QueuedPodInfo(Pod(name, priority=priority), timestamp)


@pytest.mark.parametrize(
    ("name", "p1", "p2", "p1_first"),
    [
        ("p1.priority less than p2.priority", info(LOW), info(HIGH), False),
        ("p1.priority greater than p2.priority", info(HIGH), info(LOW), True),
        ("equal priority, p1 added earlier", info(HIGH, T1), info(HIGH, T2), True),
        ("equal priority, p2 added earlier", info(HIGH, T2), info(HIGH, T1), False),
        ("negative priorities", info(-5, T1), info(-1, T2), False),
        ("priority wins over time", info(HIGH, T2), info(LOW, T1), True),
    ],
)
def test_less(name: str, p1: QueuedPodInfo, p2: QueuedPodInfo, p1_first: bool) -> None:
    plugin = PrioritySort(Handle(table=NodeTable()), {})
    assert (plugin.sort_key(p1) < plugin.sort_key(p2)) is p1_first


def test_sorting_a_queue() -> None:
    plugin = PrioritySort(Handle(table=NodeTable()), {})
    queue = [info(0, 3.0, "a"), info(5, 9.0, "b"), info(0, 1.0, "c"), info(5, 2.0, "d")]
    assert [i.pod.name for i in sorted(queue, key=plugin.sort_key)] == ["d", "b", "c", "a"]
