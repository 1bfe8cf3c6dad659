"""Builders for the PodTopologySpread tests, mirroring kube-scheduler's pkg/scheduler/testing
wrappers (st.MakePod() ...) so the upstream tables port nearly verbatim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import (
    Affinity,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    OwnerReference,
    Pod,
    Requirement,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)
from policy_scheduler.scheduler.nodetable import HOSTNAME_LABEL, ZONE_LABEL, NodeTable
from policy_scheduler.scheduler.plugins.podtopologyspread import PodTopologySpread, default_selector
from policy_scheduler.scheduler.plugins.podtopologyspread.common import Constraint
from policy_scheduler.scheduler.plugins.podtopologyspread.filtering import MAX_INT32
from policy_scheduler.scheduler.plugins.podtopologyspread.matching import Selector
from policy_scheduler.scheduler.plugins.podtopologyspread.scoring import topology_normalizing_weight
from policy_scheduler.scheduler.selectors import MATCH_NOTHING, compile_label_selector

HOSTNAME = HOSTNAME_LABEL
ZONE = ZONE_LABEL
NOTHING = MATCH_NOTHING
ignorePolicy = "Ignore"
honorPolicy = "Honor"
topologyNormalizingWeight = topology_normalizing_weight
taints = [Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")]


class MakeLabelSelector:
    def __init__(self) -> None:
        self._labels: dict[str, str] = {}
        self._exprs: list[Requirement] = []

    def Label(self, key: str, value: str) -> MakeLabelSelector:
        self._labels[key] = value
        return self

    def In(self, key: str, values: Sequence[str]) -> MakeLabelSelector:
        self._exprs.append(Requirement(key, "In", tuple(values)))
        return self

    def NotIn(self, key: str, values: Sequence[str]) -> MakeLabelSelector:
        self._exprs.append(Requirement(key, "NotIn", tuple(values)))
        return self

    def Exists(self, key: str) -> MakeLabelSelector:
        self._exprs.append(Requirement(key, "Exists"))
        return self

    def NotExist(self, key: str) -> MakeLabelSelector:
        self._exprs.append(Requirement(key, "DoesNotExist"))
        return self

    def Obj(self) -> LabelSelector:
        return LabelSelector(tuple(sorted(self._labels.items())), tuple(self._exprs))


fooSelector = MakeLabelSelector().Exists("foo").Obj()
barSelector = MakeLabelSelector().Exists("bar").Obj()


class MakePod:
    def __init__(self) -> None:
        self.pod = Pod(name="", namespace="")  # st.MakePod() leaves the namespace empty

    def Name(self, name: str) -> MakePod:
        self.pod.name = name
        return self

    def UID(self, uid: str) -> MakePod:
        self.pod.uid = uid
        return self

    def Namespace(self, namespace: str) -> MakePod:
        self.pod.namespace = namespace
        return self

    def Label(self, key: str, value: str) -> MakePod:
        self.pod.labels[key] = value
        return self

    def Node(self, name: str) -> MakePod:
        self.pod.node_name = name
        return self

    def Terminating(self) -> MakePod:
        self.pod.deletion_timestamp = 1.0
        return self

    def NodeSelector(self, labels: Mapping[str, str]) -> MakePod:
        self.pod.node_selector = dict(labels)
        return self

    def _required(self, term: NodeSelectorTerm) -> MakePod:
        self.pod.affinity = Affinity(node_affinity=NodeAffinity(required=(term,)))
        return self

    def NodeAffinityIn(self, key: str, values: Sequence[str], kind: str = "MatchExpressions") -> MakePod:
        req = Requirement(key, "In", tuple(values))
        if kind == "MatchExpressions":
            return self._required(NodeSelectorTerm(match_expressions=(req,)))
        return self._required(NodeSelectorTerm(match_fields=(req,)))

    def NodeAffinityNotIn(self, key: str, values: Sequence[str]) -> MakePod:
        return self._required(NodeSelectorTerm(match_expressions=(Requirement(key, "NotIn", tuple(values)),)))

    def Toleration(self, key: str) -> MakePod:
        self.pod.tolerations = (*self.pod.tolerations, Toleration(key=key, operator="Exists"))
        return self

    def OwnerReference(self, name: str, kind: str) -> MakePod:
        self.pod.owner_references = (OwnerReference(kind=kind, name=name, controller=True),)
        return self

    def SpreadConstraint(
        self,
        max_skew: int,
        key: str,
        mode: str,
        selector: LabelSelector | None,
        min_domains: int | None,
        node_affinity_policy: str | None,
        node_taints_policy: str | None,
        match_label_keys: Sequence[str] | None,
    ) -> MakePod:
        constraint = TopologySpreadConstraint(
            max_skew=max_skew,
            topology_key=key,
            when_unsatisfiable=mode,
            label_selector=selector,
            min_domains=min_domains,
            node_affinity_policy=node_affinity_policy,
            node_taints_policy=node_taints_policy,
            match_label_keys=tuple(match_label_keys or ()),
        )
        self.pod.topology_spread_constraints = (*self.pod.topology_spread_constraints, constraint)
        return self

    def Obj(self) -> Pod:
        return self.pod


class MakeNode:
    def __init__(self) -> None:
        self.node = Node(name="")

    def Name(self, name: str) -> MakeNode:
        self.node.name = name
        return self

    def Label(self, key: str, value: str) -> MakeNode:
        self.node.labels[key] = value
        return self

    def Taints(self, node_taints: Sequence[Taint | Mapping[str, str]]) -> MakeNode:
        self.node.taints = tuple(
            t if isinstance(t, Taint) else Taint(t["Key"], t.get("Value", ""), t["Effect"])
            for t in node_taints
        )
        return self

    def Obj(self) -> Node:
        return self.node


def mustConvertLabelSelectorAsSelector(_t: None, selector: LabelSelector | None) -> Selector:
    return compile_label_selector(selector)


def newCriticalPaths() -> tuple[tuple[str, int], tuple[str, int]]:
    return (("", MAX_INT32), ("", MAX_INT32))


def selector_key(selector: Selector) -> tuple[bool, frozenset[tuple[str, str, frozenset[str]]]]:
    """Selectors compare by requirement set (Go sorts requirements by key; order is irrelevant)."""
    return selector.nothing, frozenset(selector.requirements)


def constraint_of(want: Mapping[str, Any]) -> Constraint:
    return Constraint(
        max_skew=want["MaxSkew"],
        topology_key=want["TopologyKey"],
        selector=want["Selector"],
        min_domains=want["MinDomains"],
        node_affinity_policy=want["NodeAffinityPolicy"],
        node_taints_policy=want["NodeTaintsPolicy"],
    )


def build_table(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> NodeTable:
    """cache.NewSnapshot(pods, nodes): pods are placed on the node named by spec.nodeName."""
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    for pod in pods:
        if pod.node_name in table:
            table.add_pod(pod, table.row(pod.node_name))
    return table


def _owner_selectors(objs: Sequence[Mapping[str, Any]]) -> Any:
    """The `owner_selectors` service over upstream-style Service / ReplicaSet objects."""
    services: list[tuple[str, Mapping[str, str] | None]] = []
    replica_sets: dict[tuple[str, str], LabelSelector] = {}
    stateful_sets: dict[tuple[str, str], LabelSelector] = {}
    controllers: dict[tuple[str, str], Mapping[str, str]] = {}
    for obj in objs:
        meta = obj.get("ObjectMeta", {})
        key = (meta.get("Namespace", ""), meta.get("Name", ""))
        spec = obj.get("Spec", {})
        if obj["_kind"] == "Service":
            services.append((key[0], spec.get("Selector")))
        elif obj["_kind"] == "ReplicaSet":
            replica_sets[key] = spec["Selector"]
        elif obj["_kind"] == "StatefulSet":
            stateful_sets[key] = spec["Selector"]
        elif obj["_kind"] == "ReplicationController":
            controllers[key] = spec["Selector"]
    return lambda pod: default_selector(pod, services, controllers, replica_sets, stateful_sets)


def build_plugin(
    table: NodeTable,
    args: Mapping[str, Any] | None = None,
    objs: Sequence[Mapping[str, Any]] = (),
) -> PodTopologySpread:
    """The plugin with the owner_selectors service backed by `objs` (Services, ReplicaSets...)."""
    handle = Handle(table=table, services=ClusterServices(owner_selectors=_owner_selectors(objs)))
    return PodTopologySpread.from_profile(
        handle, dict(args if args is not None else {"defaultingType": "List"})
    )


def args_of(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """config.PodTopologySpreadArgs (Go field names) -> JSON-shaped args."""
    if config is None:
        return {"defaultingType": "List"}
    out: dict[str, Any] = {"defaultingType": config.get("DefaultingType", "System")}
    if "DefaultConstraints" in config:
        out["defaultConstraints"] = [
            {
                "maxSkew": c["MaxSkew"],
                "topologyKey": c["TopologyKey"],
                "whenUnsatisfiable": c["WhenUnsatisfiable"],
            }
            for c in config["DefaultConstraints"]
        ]
    return out
