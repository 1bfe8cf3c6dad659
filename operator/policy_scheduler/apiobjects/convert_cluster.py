"""Nodes, priority classes, PDBs and namespaces from decoded API structs or plain dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.cluster_objects import NamespaceInfo, PDBInfo, PriorityClassInfo
from policy_scheduler.apiobjects.convert_common import (
    PREEMPT_LOWER_PRIORITY,
    Errors,
    labels,
    quantities,
    struct_from_dict,
)
from policy_scheduler.scheduler import model
from policy_scheduler.scheduler.pressure.signals import CONDITIONS
from policy_scheduler.scheduler.resource_names import MEMORY
from policy_scheduler.scheduler.selectors import to_label_selector as label_selector

_CONDITION_TRUE = "True"


def _memory_capacity(capacity: dict[str, structs.Quantity] | None, errs: Errors) -> int | None:
    if not capacity or MEMORY not in capacity:
        return None
    return quantities({MEMORY: capacity[MEMORY]}, "status.capacity", errs).get(MEMORY)


def _pressure_conditions(conditions: list[structs.NodeCondition] | None) -> tuple[str, ...]:
    if not conditions:
        return ()
    true = {c.type for c in conditions if c.status == _CONDITION_TRUE}
    return tuple(c for c in CONDITIONS if c in true)


def _node(n: structs.Node, errs: Errors) -> model.Node:
    meta, spec, status = n.metadata, n.spec, n.status
    # SetDefaults_NodeStatus: allocatable defaults to capacity.
    if status.allocatable is not None:
        allocatable = quantities(status.allocatable, "status.allocatable", errs)
    else:
        allocatable = quantities(status.capacity, "status.capacity", errs)
    return model.Node(
        name=meta.name,
        uid=meta.uid,
        labels=labels(meta.labels),
        taints=tuple(model.Taint(t.key, t.value, t.effect) for t in spec.taints or ()),
        unschedulable=spec.unschedulable,
        allocatable=allocatable,
        images=tuple(model.ContainerImage(tuple(i.names or ()), i.size_bytes) for i in status.images or ()),
        resource_version=meta.resource_version,
        memory_capacity=_memory_capacity(status.capacity, errs),
        pressure_conditions=_pressure_conditions(status.conditions),
        declared_features=tuple(status.declared_features or ()),
    )


def node_from_api(n: structs.Node) -> model.Node:
    errs: Errors = []
    node = _node(n, errs)
    if errs:
        raise errs[0].for_object(f"Node {n.metadata.name}")
    return node


# --- other cluster objects ------------------------------------------------------------------------


def priority_class_from_api(pc: structs.PriorityClass) -> PriorityClassInfo:
    return PriorityClassInfo(
        name=pc.metadata.name,
        value=pc.value,
        global_default=pc.global_default,
        preemption_policy=pc.preemption_policy or PREEMPT_LOWER_PRIORITY,
        resource_version=pc.metadata.resource_version,
    )


def pdb_from_api(pdb: structs.PodDisruptionBudget) -> PDBInfo:
    meta, spec, status = pdb.metadata, pdb.spec, pdb.status
    return PDBInfo(
        namespace=meta.namespace or "default",
        name=meta.name,
        selector=label_selector(spec.selector),
        disruptions_allowed=status.disruptions_allowed,
        current_healthy=status.current_healthy,
        desired_healthy=status.desired_healthy,
        expected_pods=status.expected_pods,
        min_available=spec.min_available,
        max_unavailable=spec.max_unavailable,
        disrupted_pods=frozenset(status.disrupted_pods or ()),
        uid=meta.uid,
        resource_version=meta.resource_version,
    )


def namespace_from_api(ns: structs.Namespace) -> NamespaceInfo:
    return NamespaceInfo(
        name=ns.metadata.name,
        labels=labels(ns.metadata.labels),
        uid=ns.metadata.uid,
        phase=ns.status.phase,
        resource_version=ns.metadata.resource_version,
    )


def node_from_dict(d: Mapping[str, Any]) -> model.Node:
    return node_from_api(struct_from_dict(d, structs.Node, "Node"))


def priority_class_from_dict(d: Mapping[str, Any]) -> PriorityClassInfo:
    return priority_class_from_api(struct_from_dict(d, structs.PriorityClass, "PriorityClass"))


def pdb_from_dict(d: Mapping[str, Any]) -> PDBInfo:
    return pdb_from_api(struct_from_dict(d, structs.PodDisruptionBudget, "PodDisruptionBudget"))


def namespace_from_dict(d: Mapping[str, Any]) -> NamespaceInfo:
    return namespace_from_api(struct_from_dict(d, structs.Namespace, "Namespace"))
