"""Property tests: random clusters and pods through `simulate`, checked by a brute-force model.

Without spread or pod affinity constraints (and without preemption), each placement must be
valid on its own, and a pod left pending must fit on no node of the final cluster: pods are
only ever added, so a node that rejected a pod earlier rejects it later too.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.model import (
    Affinity,
    Container,
    ContainerPort,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Taint,
    Toleration,
)
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.simulate.run import simulate
from policy_scheduler.simulate.scenario import Scenario

LABEL_KEYS = ("disk", "zone", "gpu")
LABEL_VALUES = ("a", "b", "c")
TAINT_KEYS = ("dedicated", "spot")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
RESOURCES = ("cpu", "memory", "example.com/gpu")
PROFILE = resolve_profile(
    ProfileConfig(plugins={"postFilter": PluginSet(disabled=(PluginRef("*"),))}), implemented_plugin_names()
)

# ---- strategies ----------------------------------------------------------------------------------------

labels_st = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)
taint_st = st.builds(Taint, st.sampled_from(TAINT_KEYS), st.sampled_from(("", "x")), st.sampled_from(EFFECTS))


@st.composite
def nodes_st(draw: st.DrawFn) -> list[Node]:
    count = draw(st.integers(1, 5))
    nodes = []
    for i in range(count):
        allocatable = {
            "cpu": draw(st.integers(0, 8)) * 250,
            "memory": draw(st.integers(0, 8)) * (256 << 20),
            "pods": draw(st.integers(1, 6)),
        }
        if draw(st.booleans()):
            allocatable["example.com/gpu"] = draw(st.integers(0, 3))
        nodes.append(
            Node(
                f"node-{i}",
                labels={"kubernetes.io/hostname": f"node-{i}", **draw(labels_st)},
                taints=tuple(draw(st.lists(taint_st, max_size=2, unique=True))),
                unschedulable=draw(st.booleans()) and draw(st.booleans()),
                allocatable=allocatable,
            )
        )
    return nodes


toleration_st = st.one_of(
    st.builds(
        Toleration,
        key=st.sampled_from(TAINT_KEYS),
        operator=st.just("Equal"),
        value=st.sampled_from(("", "x")),
        effect=st.sampled_from(("", *EFFECTS)),
    ),
    st.builds(
        Toleration,
        key=st.sampled_from(("", *TAINT_KEYS)),
        operator=st.just("Exists"),
        effect=st.sampled_from(("", "NoSchedule")),
    ),
    st.just(Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")),
)

requirement_st = st.one_of(
    st.builds(
        Requirement,
        st.sampled_from(LABEL_KEYS),
        st.sampled_from(("In", "NotIn")),
        st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=2, unique=True).map(tuple),
    ),
    st.builds(Requirement, st.sampled_from(LABEL_KEYS), st.sampled_from(("Exists", "DoesNotExist"))),
)
term_st = st.builds(NodeSelectorTerm, st.lists(requirement_st, min_size=1, max_size=2).map(tuple))
affinity_st = st.one_of(
    st.none(),
    st.lists(term_st, min_size=1, max_size=2).map(
        lambda terms: Affinity(node_affinity=NodeAffinity(required=tuple(terms)))
    ),
)
port_st = st.builds(
    ContainerPort,
    container_port=st.just(8080),
    host_port=st.sampled_from((80, 443)),
    protocol=st.sampled_from(("TCP", "UDP")),
    host_ip=st.sampled_from(("", "10.0.0.1", "10.0.0.2")),
)


@st.composite
def pods_st(draw: st.DrawFn) -> list[Pod]:
    count = draw(st.integers(1, 10))
    pods = []
    for i in range(count):
        requests = {}
        for resource, step in (("cpu", 250), ("memory", 256 << 20), ("example.com/gpu", 1)):
            if draw(st.booleans()):
                requests[resource] = draw(st.integers(0, 4)) * step
        ports = (
            draw(st.lists(port_st, max_size=2, unique_by=lambda p: (p.host_port, p.protocol, p.host_ip)))
            if draw(st.booleans())
            else []
        )
        pods.append(
            Pod(
                f"pod-{i}",
                uid=f"uid-{i}",
                containers=(Container("c", requests=requests, ports=tuple(ports)),),
                node_selector=draw(
                    st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=1)
                ),
                affinity=draw(affinity_st),
                tolerations=tuple(draw(st.lists(toleration_st, max_size=2))),
            )
        )
    return pods


# ---- the brute-force model ------------------------------------------------------------------------------


def requirement_matches(req: Requirement, labels: dict[str, str]) -> bool:
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.values
    if req.operator == "NotIn":
        return not present or labels[req.key] not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    raise AssertionError(req.operator)


def selector_ok(pod: Pod, node: Node) -> bool:
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    affinity = pod.affinity.node_affinity if pod.affinity else None
    if affinity is None or affinity.required is None:
        return True
    return any(
        all(requirement_matches(r, node.labels) for r in term.match_expressions) for term in affinity.required
    )


def tolerated(pod: Pod, taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in pod.tolerations)


def taints_ok(pod: Pod, node: Node) -> bool:
    if node.unschedulable and not tolerated(pod, UNSCHEDULABLE_TAINT):
        return False
    return all(tolerated(pod, t) for t in node.taints if t.effect in ("NoSchedule", "NoExecute"))


def port_key(port: ContainerPort) -> tuple[str, int]:
    return (port.protocol or "TCP", port.host_port)


def ports_conflict(a: ContainerPort, b: ContainerPort) -> bool:
    if port_key(a) != port_key(b):
        return False
    ip_a, ip_b = a.host_ip or "0.0.0.0", b.host_ip or "0.0.0.0"
    return "0.0.0.0" in (ip_a, ip_b) or ip_a == ip_b


@dataclass
class NodeState:
    node: Node
    pods: list[Pod]

    def used(self, resource: str) -> int:
        return sum(p.requests.get(resource, 0) for p in self.pods)

    def resources_ok(self, pod: Pod) -> bool:
        if len(self.pods) + 1 > self.node.allocatable.get("pods", 0):
            return False
        for resource, amount in pod.requests.items():
            if amount > 0 and self.used(resource) + amount > self.node.allocatable.get(resource, 0):
                return False
        return True

    def ports_ok(self, pod: Pod) -> bool:
        used = [port for other in self.pods for port in other.host_ports()]
        return not any(ports_conflict(want, have) for want in pod.host_ports() for have in used)

    def fits(self, pod: Pod) -> bool:
        return (
            selector_ok(pod, self.node)
            and taints_ok(pod, self.node)
            and self.resources_ok(pod)
            and self.ports_ok(pod)
        )


# ---- the properties -------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st(), pods=pods_st(), seed=st.integers(0, 3))
def test_placements_are_valid_and_pending_pods_fit_nowhere(
    nodes: list[Node], pods: list[Pod], seed: int
) -> None:
    outcomes = simulate(Scenario(nodes=nodes, pods=pods), [PROFILE], seed=seed)
    assert [o.name for o in outcomes] == [p.name for p in pods]
    by_name = {n.name: n for n in nodes}
    placed: dict[str, list[Pod]] = defaultdict(list)
    for pod, outcome in zip(pods, outcomes, strict=True):
        if outcome.node is not None:
            assert outcome.node in by_name
            placed[outcome.node].append(pod)
        else:
            assert outcome.message, f"{pod.name} pending without a message"

    states = {name: NodeState(node, placed[name]) for name, node in by_name.items()}
    for name, state in states.items():
        node = state.node
        # Never over-committed, on any resource or on the pod count.
        assert len(state.pods) <= node.allocatable["pods"]
        for resource in RESOURCES:
            assert state.used(resource) <= node.allocatable.get(resource, 0), (name, resource)
        for i, pod in enumerate(state.pods):
            assert selector_ok(pod, node), (pod.name, name)
            assert taints_ok(pod, node), (pod.name, name)
            for other in state.pods[i + 1 :]:
                clash = [(a, b) for a in pod.host_ports() for b in other.host_ports() if ports_conflict(a, b)]
                assert not clash, (pod.name, other.name, name)

    for pod, outcome in zip(pods, outcomes, strict=True):
        if outcome.node is None:
            fitting = [name for name, state in states.items() if state.fits(pod)]
            assert not fitting, f"{pod.name} left pending ({outcome.message}) but fits on {fitting}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_st(), pods=pods_st(), seed=st.integers(0, 1000))
def test_same_seed_same_outcome(nodes: list[Node], pods: list[Pod], seed: int) -> None:
    first = simulate(Scenario(nodes=nodes, pods=pods), [PROFILE], seed=seed)
    again = simulate(Scenario(nodes=nodes, pods=pods), [PROFILE], seed=seed)
    assert [(o.node, o.message) for o in first] == [(o.node, o.message) for o in again]
