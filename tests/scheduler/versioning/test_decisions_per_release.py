"""What one scheduling cycle decides per release, through the default profiles.

The property: on random clusters and pods, v1.35 and v1.37 find the same feasible nodes with the
same rejection reasons and give the same score from every plugin but
NodeResourcesBalancedAllocation, whose v1.35 score is the balance with the pod placed and whose
v1.37 score is the improvement (reference formulas below, transcribed from the two releases'
balanced_allocation.go). So a v1.35 profile decides as before, and v1.37 differs only where
upstream changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings

from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.cycle_contracts import NullHooks
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import FitError
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.model import Container, ContainerImage, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.imagelocality import ImageLocality
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.storage.volumes import IMAGE, Volume
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion
from tests.simulate.test_properties import nodes_st, pods_st

BALANCED = "NodeResourcesBalancedAllocation"
MB = 1024 * 1024


@dataclass
class Cycle:
    node: str | None
    message: str = ""
    feasible: tuple[str, ...] = ()
    scores: dict[str, dict[str, int]] | None = None  # plugin -> node -> score
    statuses: dict[str, str] | None = None  # node -> rejection message


def one_cycle(
    features: Features, nodes: list[Node], bound: list[Pod], pod: Pod, config: ProfileConfig | None = None
) -> Cycle:
    engine = Engine(seed=0)
    profile = resolve_profile(config or ProfileConfig(), implemented_plugin_names(), features=features)
    engine.set_profiles([profile])
    for node in nodes:
        engine.node_added(node)
    for other in bound:
        engine.pod_added(other)
    framework = engine.frameworks[profile.scheduler_name]
    state = CycleState()
    try:
        result = engine.scheduler.schedule_pod(framework, state, pod)
    except FitError as fit:
        statuses = {name: status.message for name, status in fit.diagnosis.node_to_status.items()}
        return Cycle(None, str(fit), statuses=statuses)
    table = engine.cache.table
    rows = list(result.feasible_rows) if result.feasible_rows is not None else []
    feasible = tuple(table.nodes[int(r)].name for r in rows)
    scores: dict[str, dict[str, int]] = {}
    if result.scores is not None:
        for plugin, values in result.scores.by_plugin.items():
            scores[plugin] = {name: int(values[i]) for i, name in enumerate(feasible)}
    return Cycle(result.node_name, feasible=feasible, scores=scores)


def balance(fractions: list[float]) -> int:
    """balancedResourceScore for cpu and memory (fractions capped at 1)."""
    capped = [min(f, 1.0) for f in fractions]
    std = abs((capped[0] - capped[1]) / 2) if len(capped) == 2 else 0.0
    return int((1 - std) * 100)


def reference_balanced(version: KubernetesVersion, node: Node, used: tuple[int, int], pod: Pod) -> int:
    cpu, memory = pod.requests.get("cpu", 0), pod.requests.get("memory", 0)
    alloc = (node.allocatable.get("cpu", 0), node.allocatable.get("memory", 0))
    present = [i for i in (0, 1) if alloc[i]]
    with_pod = balance([(used[i] + (cpu, memory)[i]) / alloc[i] for i in present])
    if version == V1_35:
        return with_pod
    without = balance([used[i] / alloc[i] for i in present])
    return 50 + (50 + with_pod - without) // 2


NO_PREEMPTION = ProfileConfig(plugins={"postFilter": PluginSet(disabled=(PluginRef("*"),))})


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(nodes=nodes_st(), pods=pods_st())
def test_v135_and_v137_differ_only_in_balanced_allocation(nodes: list[Node], pods: list[Pod]) -> None:
    pod, *others = pods
    bound: list[Pod] = []
    for i, other in enumerate(others):  # spread some pods onto the nodes, as if bound earlier
        target = nodes[i % len(nodes)]
        bound.append(Pod(f"bound-{i}", uid=f"bound-{i}", node_name=target.name, containers=other.containers))
    v135 = one_cycle(Features(V1_35), nodes, bound, pod, NO_PREEMPTION)
    v137 = one_cycle(Features(V1_37), nodes, bound, pod, NO_PREEMPTION)
    assert v135.feasible == v137.feasible
    assert (v135.node is None) == (v137.node is None)
    if v135.node is None:
        assert v135.message == v137.message
        assert v135.statuses == v137.statuses
        return
    assert v135.scores is not None
    assert v137.scores is not None
    assert set(v135.scores) == set(v137.scores)
    for plugin, scores in v135.scores.items():
        if plugin != BALANCED:
            assert scores == v137.scores[plugin], plugin
    if BALANCED in v135.scores and any(pod.requests.get(r, 0) for r in ("cpu", "memory")):
        by_name = {n.name: n for n in nodes}
        for name in v135.feasible:
            node = by_name[name]
            mine = [p for p in bound if p.node_name == name]
            used = (
                sum(p.requests.get("cpu", 0) for p in mine),
                sum(p.requests.get("memory", 0) for p in mine),
            )
            if "example.com/gpu" in pod.requests:
                continue  # a scalar resource joins the balance: covered by the ported tables
            assert v135.scores[BALANCED][name] == reference_balanced(V1_35, node, used, pod)
            assert v137.scores[BALANCED][name] == reference_balanced(V1_37, node, used, pod)


def nodes(*names: str, cordoned: str = "") -> list[Node]:
    return [
        Node(
            name,
            labels={"kubernetes.io/hostname": name},
            unschedulable=name == cordoned,
            allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110},
        )
        for name in names
    ]


def test_balanced_allocation_moves_a_placement_from_v136() -> None:
    """An empty node and one busy in memory only; the pod wants mostly cpu. v1.35 scores the
    balance with the pod, better on the empty node (91 against 71); from v1.36 the improvement
    counts, and the busy node gains most (79 against 70)."""
    busy, empty = nodes("busy", "empty")
    bound = [
        Pod("hog", uid="hog", node_name="busy", containers=(Container("c", requests={"memory": 6 << 30}),))
    ]
    pod = Pod("p", uid="p", containers=(Container("c", requests={"cpu": 1200, "memory": 1 << 30}),))
    only_balance = ProfileConfig(
        plugins={
            "score": PluginSet(enabled=(PluginRef(BALANCED, 1),), disabled=(PluginRef("*"),)),
        }
    )
    assert one_cycle(Features(V1_35), [busy, empty], bound, pod, only_balance).node == "empty"
    assert one_cycle(Features(V1_36), [busy, empty], bound, pod, only_balance).node == "busy"
    assert one_cycle(Features(V1_37), [busy, empty], bound, pod, only_balance).node == "busy"


def test_node_name_prefilter_charges_other_nodes_to_node_name_from_v137() -> None:
    """A pod naming a node (as a bound pod whose resize is deferred does) that does not fit it:
    v1.35 filters every node, so the cordoned one is NodeUnschedulable's; v1.37's NodeName
    PreFilter leaves the other nodes out before any filter runs."""
    cluster = nodes("named", "cordoned", cordoned="cordoned")
    pod = Pod("p", uid="p", node_name="named", containers=(Container("c", requests={"cpu": 9000}),))
    v135 = one_cycle(Features(V1_35), cluster, [], pod)
    assert v135.message.startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."
    ), v135.message
    v137 = one_cycle(Features(V1_37), cluster, [], pod)
    assert v137.message.startswith(
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't satisfy plugin(s) [NodeName]."
    ), v137.message


def test_v137_filters_node_name_before_node_unschedulable() -> None:
    """Without NodeName's PreFilter the filter order shows: a cordoned node the pod does not name
    is charged to NodeName in v1.37, to NodeUnschedulable before."""
    cluster = nodes("named", "cordoned", cordoned="cordoned")
    pod = Pod("p", uid="p", node_name="named", containers=(Container("c", requests={"cpu": 9000}),))
    no_prefilter = ProfileConfig(plugins={"preFilter": PluginSet(disabled=(PluginRef("NodeName"),))})
    v136 = one_cycle(Features(V1_36), cluster, [], pod, no_prefilter)
    v137 = one_cycle(Features(V1_37), cluster, [], pod, no_prefilter)
    assert "1 node(s) were unschedulable" in v136.message
    assert "1 node(s) didn't match the requested node name" in v137.message


def test_image_volumes_count_from_v136_and_raise_the_threshold_from_v137() -> None:
    """image_locality_test.go "pod with ImageVolume": container gcr.io/30, image volume
    gcr.io/300. v1.35 ignores the volume; v1.36 sums it against one container's threshold
    (12); v1.37 raises the threshold to two images (6)."""
    node1 = Node(
        "node1", images=tuple(ContainerImage((f"gcr.io/{s}:latest",), s * MB) for s in (300, 600, 900))
    )
    node2 = Node(
        "node2",
        images=(
            ContainerImage(("gcr.io/4000:latest",), 4000 * MB),
            ContainerImage(("gcr.io/30:latest",), 30 * MB),
        ),
    )
    table = NodeTable()
    table.set_node(node1)
    table.set_node(node2)
    pod = Pod(
        "p",
        containers=(Container("c", image="gcr.io/30"),),
        volumes=(Volume("imageVolume", IMAGE, source_id="gcr.io/300"),),
    )
    as_containers = Pod(
        "q", containers=(Container("c", image="gcr.io/30"), Container("d", image="gcr.io/300"))
    )
    rows = np.arange(2)
    for version, want in ((V1_35, [0, 0]), (V1_36, [12, 0]), (V1_37, [6, 0])):
        plugin = ImageLocality.from_profile(Handle(table, features=Features(version)), {})
        assert plugin.score(CycleState(), pod, rows).tolist() == want, version
        # the same images as containers score 6 in every release
        assert plugin.score(CycleState(), as_containers, rows).tolist() == [6, 0]


class FailureMessages(NullHooks):
    def __init__(self) -> None:
        self.messages: dict[str, tuple[str, str | None]] = {}

    def failed(
        self, pod: Pod, reason: str, message: str, nominated_node: str | None, framework: Framework | None
    ) -> None:
        self.messages[pod.name] = (message, nominated_node)


def test_v137_preemptor_message_says_where_it_found_room() -> None:
    """The pod that preempts stays Unschedulable for this cycle; from v1.37 its message ends with
    the preemption's success ("found a potential placement ...") instead of nothing."""
    for version, tail in (
        (V1_35, ""),  # the first successful PostFilter ends the run: DynamicResources' reason is dropped
        (V1_37, " preemption: found a potential placement for pod on node only, preempting 1 victims"),
    ):
        hooks = FailureMessages()
        engine = Engine(seed=0, hooks=hooks)
        engine.set_profiles(
            [resolve_profile(ProfileConfig(), implemented_plugin_names(), features=Features(version))]
        )
        engine.node_added(Node("only", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 110}))
        engine.pod_added(
            Pod("low", uid="low", node_name="only", containers=(Container("c", requests={"cpu": 800}),))
        )
        engine.pod_added(
            Pod("high", uid="high", priority=1000, containers=(Container("c", requests={"cpu": 500}),))
        )
        info = engine.queue.try_pop()
        assert info is not None
        engine.scheduler.schedule_one(info)
        message, nominated = hooks.messages["high"]
        assert nominated == "only"
        assert message == f"0/1 nodes are available: 1 Insufficient cpu.{tail}", version
