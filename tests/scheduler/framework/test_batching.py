"""Opportunistic batching (KEP-5598): signatures, when a hint is given, and that batched
decisions are decisions the unbatched scheduler could have made."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.config import MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.batch import MAX_BATCH_AGE, OpportunisticBatch
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    LabelSelector,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    Toleration,
    TopologySpreadConstraint,
)
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.storage.volumes import PVC, PodResourceClaim, Volume
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35

NO_SPREAD = {MULTI_POINT: PluginSet(disabled=(PluginRef("PodTopologySpread"),))}


def make_pod(name: str, cpu: int = 600, **kw: Any) -> Pod:
    return Pod(
        name, uid=name, labels={"app": "web"}, containers=(Container("c", requests={"cpu": cpu}),), **kw
    )


class Binder:
    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.bound: dict[str, str] = {}

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        self.bound[pod.name] = node_name
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


def make_engine(
    nodes: int, plugins: dict[str, PluginSet] | None = None, seed: int = 3
) -> tuple[Engine, Binder]:
    binder = Binder()
    engine = Engine(binder=binder, seed=seed)
    binder.engine = engine
    config = ProfileConfig(plugins=NO_SPREAD if plugins is None else plugins)
    engine.set_profiles([resolve_profile(config, implemented_plugin_names())])
    for i in range(nodes):
        # Each node takes one 600m pod; cpu differs so that scores differ.
        cpu = 1000 + 50 * (i % 4)
        engine.node_added(Node(f"n{i}", allocatable={"cpu": cpu, "memory": 1 << 32, "pods": 110}))
    return engine, binder


# ---- signatures ----------------------------------------------------------------------------------------


def test_default_profile_signs_no_pod() -> None:
    """PodTopologySpread's system default constraints make every pod unsignable (as upstream)."""
    engine, _ = make_engine(2, plugins={})
    assert engine.frameworks["default-scheduler"].sign_pod(make_pod("p")) is None


def test_equal_pods_sign_alike_and_differences_show() -> None:
    engine, _ = make_engine(2)
    fw = engine.frameworks["default-scheduler"]
    a, b = fw.sign_pod(make_pod("a")), fw.sign_pod(make_pod("b"))
    assert a is not None
    assert a == b
    assert fw.sign_pod(make_pod("c", cpu=700)) != a
    assert fw.sign_pod(make_pod("d", node_selector={"zone": "z1"})) != a
    assert fw.sign_pod(make_pod("e", tolerations=(Toleration("k", "Exists"),))) != a
    assert fw.sign_pod(dataclasses.replace(make_pod("f"), labels={"app": "db"})) != a  # InterPodAffinity


@pytest.mark.parametrize(
    "pod",
    [
        make_pod(
            "affinity",
            affinity=Affinity(
                pod_anti_affinity=PodAffinity(
                    required=(
                        PodAffinityTerm("kubernetes.io/hostname", LabelSelector(match_labels=(("a", "b"),))),
                    )
                )
            ),
        ),
        make_pod(
            "spread",
            topology_spread_constraints=(
                TopologySpreadConstraint(1, "kubernetes.io/hostname", "DoNotSchedule", LabelSelector()),
            ),
        ),
    ],
    ids=["inter-pod affinity", "topology spread"],
)
def test_unsignable_pods(pod: Pod) -> None:
    engine, _ = make_engine(2, plugins={MULTI_POINT: PluginSet()})
    # With PodTopologySpread enabled but no default constraints, plain pods sign.
    engine.set_profiles(
        [
            resolve_profile(
                ProfileConfig(plugin_config={"PodTopologySpread": {"defaultingType": "List"}}),
                implemented_plugin_names(),
            )
        ]
    )
    fw = engine.frameworks["default-scheduler"]
    assert fw.sign_pod(make_pod("plain")) is not None
    assert fw.sign_pod(pod) is None


def test_a_plugin_that_cannot_sign_disables_signatures() -> None:
    engine, _ = make_engine(2)
    fw = engine.frameworks["default-scheduler"]
    assert fw.signatures_enabled
    assert {p.name for p in fw.signers} >= {"NodeResourcesFit", "TaintToleration", "NodeAffinity"}

    class Unsigned(type(fw.signers[0])):  # type: ignore[misc]
        signs_pods = False

    registry = dict(engine.registry)
    registry[fw.signers[0].name] = Unsigned
    other = Framework(fw.profile, registry, engine.base_handle)
    assert not other.signatures_enabled
    assert other.sign_pod(make_pod("p")) is None


# ---- the batch state ------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_hint_rules() -> None:
    clock = Clock()
    batch = OpportunisticBatch(clock)
    sig = {"SchedulerName": "s"}
    full = lambda name: True  # noqa: E731 - the last chosen node rejects the next pod
    assert batch.node_hint(sig, 1, full) == ""  # nothing stored yet
    batch.store(sig, "", "n0", ["n1", "n2", "n3"], 1)
    assert batch.node_hint(sig, 2, full) == "n1"
    batch.store(sig, "n1", "n1", None, 2)  # hint used: the ranking stays
    assert batch.batched_pods == 1
    assert batch.node_hint(dict(sig), 3, full) == "n2"  # equal, not identical, signatures
    batch.store(sig, "n2", "n2", None, 3)
    # A pod skipped a cycle (failed, or another profile's pod ran): no hint, state dropped.
    assert batch.node_hint(sig, 5, full) == ""
    assert batch.node_hint(sig, 6, full) == ""

    batch.store(sig, "", "n0", ["n1", "n2"], 10)
    assert batch.node_hint({"SchedulerName": "other"}, 11, full) == ""  # different signature
    batch.store(sig, "", "n0", ["n1", "n2"], 20)
    assert batch.node_hint(None, 21, full) == ""  # unsignable pod
    batch.store(sig, "", "n0", ["n1", "n2"], 30)
    assert batch.node_hint(sig, 31, lambda name: False) == ""  # last node still fits: rescore
    batch.store(sig, "", "n0", ["n1", "n2"], 40)
    clock.now += MAX_BATCH_AGE + 0.01
    assert batch.node_hint(sig, 41, full) == ""  # too old
    batch.store(sig, "", "n0", ["n1"], 50)
    batch.store(sig, "n5", "n0", None, 51)  # hint not used, one feasible node: no ranking left
    assert batch.node_hint(sig, 52, full) == ""


# ---- through the scheduler -------------------------------------------------------------------------------


def _drain(engine: Engine) -> None:
    async def loop() -> None:
        while engine.schedule_next():
            await engine.scheduler.drain_binding()

    asyncio.run(loop())


def _best_nodes_unbatched(engine: Engine, pod: Pod) -> set[str]:
    """The nodes an unbatched cycle could pick for `pod` now: feasible ones with the top score."""
    fw = engine.frameworks["default-scheduler"]
    state = CycleState()
    feasible, _ = engine.scheduler.find_nodes_that_fit(fw, state, pod)
    if len(feasible) <= 1:
        return set(engine.table.names_of(feasible.tolist()))
    assert fw.run_pre_score(state, pod, feasible).is_success
    total = fw.run_score(state, pod, feasible).total
    return set(engine.table.names_of(feasible[total == total.max()].tolist()))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_burst_of_identical_pods_batches_and_matches_unbatched_choices(seed: int) -> None:
    engine, binder = make_engine(12, seed=seed)
    fw = engine.frameworks["default-scheduler"]
    pods = [make_pod(f"p{i}") for i in range(10)]
    choices: list[tuple[str, set[str]]] = []
    for p in pods:
        engine.pod_added(p)

    async def loop() -> None:
        while True:
            info = engine.queue.try_pop()
            if info is None:
                return
            allowed = _best_nodes_unbatched(engine, info.pod)
            task = engine.scheduler.schedule_one(info)
            assert task is not None
            engine.scheduler.start_binding(task)
            await engine.scheduler.drain_binding()
            choices.append((binder.bound[info.pod.name], allowed))

    asyncio.run(loop())
    assert len(binder.bound) == 10
    assert len(set(binder.bound.values())) == 10  # one pod per node
    for chosen, allowed in choices:
        assert chosen in allowed
    assert fw.batch.batched_pods == 9  # every pod after the first took the hint


def test_same_placements_as_without_batching_when_scores_are_distinct() -> None:
    """Distinct scores leave no ties: batched and unbatched scheduling bind identically. (With
    v1.35's BalancedAllocation these nodes score apart; from v1.36 it scores the improvement in
    balance, which ties them, and ties are broken at random.)"""
    v135 = Features(V1_35)

    def run(batching: bool) -> dict[str, str]:
        binder = Binder()
        engine = Engine(binder=binder, seed=0)
        binder.engine = engine
        engine.set_profiles(
            [resolve_profile(ProfileConfig(plugins=NO_SPREAD), implemented_plugin_names(), features=v135)]
        )
        for i in range(8):
            engine.node_added(
                Node(f"n{i}", allocatable={"cpu": 1000 + 25 * i, "memory": 1 << 32, "pods": 110})
            )
        engine.frameworks["default-scheduler"].signatures_enabled = batching
        for i in range(8):
            engine.pod_added(make_pod(f"p{i}"))
        _drain(engine)
        assert engine.frameworks["default-scheduler"].batch.batched_pods == (7 if batching else 0)
        return binder.bound

    assert run(True) == run(False)


def test_unsignable_pod_in_between_breaks_the_batch() -> None:
    engine, binder = make_engine(6)
    fw = engine.frameworks["default-scheduler"]
    term = PodAffinityTerm("kubernetes.io/hostname", LabelSelector(match_labels=(("x", "y"),)))
    anti = Affinity(pod_anti_affinity=PodAffinity(required=(term,)))
    engine.pod_added(make_pod("a"))
    engine.pod_added(make_pod("b", affinity=anti))
    engine.pod_added(make_pod("c"))
    engine.pod_added(make_pod("d"))
    _drain(engine)
    assert len(binder.bound) == 4
    assert fw.batch.batched_pods == 1  # only d, on the ranking c left


def test_hint_that_no_longer_fits_falls_back_to_a_full_search() -> None:
    engine, binder = make_engine(4)
    fw = engine.frameworks["default-scheduler"]
    engine.pod_added(make_pod("a"))
    _drain(engine)
    assert fw.batch.state is not None
    hinted = fw.batch.state.ranked[-1]
    # Someone else fills the node the ranking would hand out next.
    engine.pod_added(
        Pod("other", uid="other", node_name=hinted, containers=(Container("c", requests={"cpu": 900}),))
    )
    engine.pod_added(make_pod("b"))
    _drain(engine)
    assert binder.bound["b"] != hinted
    assert fw.batch.batched_pods == 0
    assert np.unique(list(binder.bound.values())).size == 2


def test_storage_plugins_sign_volumes_and_refuse_claims() -> None:
    engine, _ = make_engine(2)
    fw = engine.frameworks["default-scheduler"]
    assert {p.name for p in fw.signers} >= {"VolumeBinding", "VolumeRestrictions", "DynamicResources"}
    plain = fw.sign_pod(make_pod("a"))
    config = Volume("cfg")  # configMap and secret volumes decode as OTHER: not part of it
    assert fw.sign_pod(make_pod("b", volumes=(config,))) == plain
    claim = Volume("data", kind=PVC, claim_name="data-0")
    assert fw.sign_pod(make_pod("c", volumes=(claim,))) != plain
    assert fw.sign_pod(make_pod("d", resource_claims=(PodResourceClaim("gpu", "gpu-claim"),))) is None
