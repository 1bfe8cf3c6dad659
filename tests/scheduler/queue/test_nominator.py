"""PodNominator, ported from kube-scheduler v1.35 scheduling_queue_test.go nominator cases."""

from __future__ import annotations

from functools import partial

import pytest

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.queue import PodNominator
from tests.builders import make_pod

# The upstream tests' pods live in namespace "ns1".
pod_in_ns1 = partial(make_pod, namespace="ns1")


def layout(nominator: PodNominator, *nodes: str) -> dict[str, list[str]]:
    return {n: [p.name for p in nominator.nominated_pods_for_node(n)] for n in nodes}


def test_add_from_status_and_override() -> None:
    """Port of TestPriorityQueue_UpdateNominatedPodForNode."""
    med = pod_in_ns1("mpp", nominated_node_name="node1", priority=2)
    unsched = pod_in_ns1("up", nominated_node_name="node1", priority=1)
    high = pod_in_ns1("hpp", priority=3)
    alive = {p.key: p for p in (med, unsched, high)}
    nominator = PodNominator(alive.get)

    nominator.add_nominated_pod(med)  # ModeNoop: from status
    nominator.add_nominated_pod(unsched, "node5")  # override wins over status
    nominator.add_nominated_pod(high, "node2")  # no status at all
    assert layout(nominator, "node1", "node2", "node5") == {
        "node1": ["mpp"],
        "node2": ["hpp"],
        "node5": ["up"],
    }

    nominator.add_nominated_pod(high, "node4")  # re-nominating moves it
    assert layout(nominator, "node2", "node4") == {"node2": [], "node4": ["hpp"]}

    nominator.add_nominated_pod(pod_in_ns1("gone"), "node1")  # not in the lister: ignored
    bound = pod_in_ns1("bound")
    alive[bound.key] = pod_in_ns1("bound", node_name="node3")
    nominator.add_nominated_pod(bound, "node1")  # already bound per the lister: ignored
    assert layout(nominator, "node1") == {"node1": ["mpp"]}

    nominator.delete_nominated_pod_if_exists(high)
    assert layout(nominator, "node1", "node4", "node5") == {"node1": ["mpp"], "node4": [], "node5": ["up"]}
    assert len(nominator) == 2


@pytest.mark.parametrize(
    ("pod", "deleted", "want"),
    [
        (pod_in_ns1("alive", nominated_node_name="node1"), False, 1),
        (pod_in_ns1("deleted", nominated_node_name="node1"), True, 0),
        (pod_in_ns1("no-status"), False, 0),
    ],
)
def test_nominated_pod_deleted(pod: Pod, deleted: bool, want: int) -> None:
    """Port of TestPriorityQueue_NominatedPodDeleted."""
    live = {} if deleted else {pod.key: pod}
    nominator = PodNominator(live.get)
    nominator.add_nominated_pod(pod)
    assert len(nominator.nominated_pods_for_node("node1")) == want


def test_update_keeps_in_memory_nomination_until_status_catches_up() -> None:
    nominator = PodNominator()
    pod = pod_in_ns1("p")
    nominator.add_nominated_pod(pod, "node1")  # set by preemption before the status patch lands
    newer = pod_in_ns1("p")  # an unrelated update without nominatedNodeName
    nominator.update_nominated_pod(pod, newer)
    assert nominator.nominated_pods_for_node("node1") == [newer]  # latest object, same node


@pytest.mark.parametrize(
    ("old_node", "new_node", "want"),
    [
        ("node1", "node2", {"node1": [], "node2": ["p"]}),  # status changed
        ("node1", "", {"node1": [], "node2": []}),  # status cleared
        ("", "node2", {"node1": [], "node2": ["p"]}),  # status set
    ],
)
def test_update_follows_status_changes(old_node: str, new_node: str, want: dict[str, list[str]]) -> None:
    nominator = PodNominator()
    old = pod_in_ns1("p", nominated_node_name=old_node)
    nominator.add_nominated_pod(old, "node1")
    nominator.update_nominated_pod(old, pod_in_ns1("p", nominated_node_name=new_node))
    assert layout(nominator, "node1", "node2") == want


def test_override_with_empty_name_clears() -> None:
    nominator = PodNominator()
    pod = pod_in_ns1("p", nominated_node_name="node1")
    nominator.add_nominated_pod(pod)
    nominator.add_nominated_pod(pod, "")  # clearNominatedNode after a failed attempt
    assert nominator.nominated_pods_for_node("node1") == []
    assert nominator.nominated_node_name(pod) is None


def test_pod_is_stored_once_and_result_is_a_copy() -> None:
    nominator = PodNominator()
    pod = pod_in_ns1("p", nominated_node_name="node1")
    nominator.add_nominated_pod(pod)
    nominator.add_nominated_pod(pod)
    listed = nominator.nominated_pods_for_node("node1")
    assert listed == [pod]
    listed.clear()
    assert nominator.nominated_pods_for_node("node1") == [pod]
    assert nominator.nominated_pods_for_node("node2") == []
