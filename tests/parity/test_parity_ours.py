"""The parity harness: our side of a decision (parity/ours.py) writes the unschedulable message
as the scheduling cycle does, per release, and the judge (parity/compare.py) reads a tied
nomination's message for the node kube-scheduler chose."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.parity.compare import Reference, judge
from policy_scheduler.parity.ours import Decision, evaluate
from policy_scheduler.parity.profiles import resolved_profiles
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

FILTER_REASONS = "0/1 nodes are available: 1 Insufficient cpu."


def _node() -> dict[str, Any]:
    resources = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def _pod(name: str, priority: int, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "parity-default",
        "priority": priority,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "800m"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("version", "post_filter"),
    [
        (V1_35, ""),
        (V1_36, ""),
        (V1_37, " preemption: found a potential placement for pod on node n1, preempting 1 victims"),
    ],
)
def test_a_preemptor_message_is_the_releases(version: KubernetesVersion, post_filter: str) -> None:
    profile = resolved_profiles(Features(version))["parity-default"]
    decision = evaluate(profile, [_node()], [_pod("low", 0, "n1")], _pod("high", 1000), {"ns": {}})
    assert decision.outcome == "preempt"
    assert decision.victims == {"n1": ["ns/low"]}
    assert decision.message == FILTER_REASONS + post_filter


def _placement(node: str) -> str:
    return f"{FILTER_REASONS} preemption: found a potential placement for pod on node {node}, preempting 1 victims"


@pytest.mark.parametrize(
    ("kube_node", "nominees", "agrees"),
    [
        ("n2", {"n1", "n2"}, True),  # a tie: which node is cache order, the message follows it
        ("n2", {"n1"}, False),  # not a tie: the message names another node
    ],
)
def test_a_tied_nomination_is_judged_by_the_references_node(
    kube_node: str, nominees: set[str], agrees: bool
) -> None:
    ref = Reference("preempt", node=kube_node, message=_placement(kube_node), victims=["ns/b"])
    ours = Decision(
        "preempt", message=_placement("n1"), nominees=nominees, victims={"n1": ["ns/a"], "n2": ["ns/b"]}
    )
    verdict = judge(ref, ours)
    assert verdict.decision is agrees
    assert verdict.message is agrees
