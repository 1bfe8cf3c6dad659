"""Issue 11, hostile pods: each shape of bench/hostile.py goes through the informer's decoding
and conversion into the real Engine; every pod is bound or reported Unschedulable with a message
naming the cause (none dropped, none raises), and a plain pod queued after them all still binds."""

from __future__ import annotations

import pytest

from policy_scheduler.bench.hostile import (
    SHAPES,
    SPECIAL_NODE,
    Shape,
    make_engine,
    pod_from_json,
    pod_json,
    run,
)
from policy_scheduler.scheduler.cycle_failure import REASON_UNSCHEDULABLE

NODES = 12


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_hostile_pods_are_bound_or_told_why(shape: Shape) -> None:
    engine, outcomes = make_engine(NODES)
    pods = [pod_from_json(shape.make(i)) for i in range(3)]
    for pod in pods:
        engine.pod_added(pod)
    engine.pod_added(pod_from_json(pod_json("plain")))
    run(engine)

    assert outcomes.bound.get("plain"), "a plain pod behind the hostile ones is still scheduled"
    for pod in pods:
        if shape.bound:
            assert pod.name in outcomes.bound, outcomes.failures.get(pod.name)
        else:
            reason, message = outcomes.failures[pod.name]
            assert reason == REASON_UNSCHEDULABLE
            assert shape.message in message
            assert pod.name not in outcomes.bound
    if shape.name == "labels at their limits":
        assert {outcomes.bound[p.name] for p in pods} == {SPECIAL_NODE}
    if shape.name == "1000 host ports":
        assert len({outcomes.bound[p.name] for p in pods}) == len(pods)  # the ports conflict


def test_a_negative_quantity_is_malformed_not_free_capacity() -> None:
    pod = pod_from_json(pod_json("negative", cpu="-500m"))
    assert pod.malformed == (
        "Pod hostile/negative: spec.containers[0].resources.requests.cpu: "
        'invalid quantity "-500m": must be greater than or equal to 0'
    )
