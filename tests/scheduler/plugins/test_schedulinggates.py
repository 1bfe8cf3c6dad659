"""SchedulingGates: port of scheduling_gates_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.schedulinggates import SchedulingGates


def plugin() -> SchedulingGates:
    return SchedulingGates(Handle(table=NodeTable()), {})


@pytest.mark.parametrize(
    ("name", "pod", "want"),
    [
        ("no scheduling gates", Pod("p"), SUCCESS),
        (
            "scheduling gates",
            Pod("p", scheduling_gates=("foo", "bar")),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [foo bar]",)),
        ),
        (
            "one gate",
            Pod("p", scheduling_gates=("example.com/gate",)),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [example.com/gate]",)
            ),
        ),
    ],
)
def test_pre_enqueue(name: str, pod: Pod, want: Status) -> None:
    assert plugin().pre_enqueue(pod) == want


def test_events() -> None:
    (event,) = plugin().events_to_register()
    assert event.event.resource == Resource.POD
    assert event.event.action == Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("wrong old object", Pod("p"), "not-a-pod", None, QueueingHint.QUEUE),
        ("wrong new object", Pod("p"), None, "not-a-pod", QueueingHint.QUEUE),
        (
            "other pod updated",
            Pod("p", uid="uid0", scheduling_gates=("foo", "bar")),
            Pod("p1", uid="uid1", scheduling_gates=("foo", "bar")),
            Pod("p1", uid="uid1", scheduling_gates=("foo",)),
            QueueingHint.SKIP,
        ),
        (
            "the gated pod updated",
            Pod("p", scheduling_gates=("foo",)),
            Pod("p", scheduling_gates=("foo",)),
            Pod("p"),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_gates_eliminated_hint(name: str, pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    hint = plugin().events_to_register()[0].hint
    assert hint is not None
    assert hint(pod, old, new) == want
