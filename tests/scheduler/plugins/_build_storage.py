"""Builders mirroring upstream's volumebinding test_utils.go (makePV, makePVC, makePod, makeNode)."""

from __future__ import annotations

import dataclasses

from policy_scheduler.scheduler.model import LabelSelector, Node, NodeSelectorTerm, Pod, Requirement
from policy_scheduler.scheduler.storage.types import (
    ANN_BIND_COMPLETED,
    IMMEDIATE,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimRef,
    CSIDriver,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from policy_scheduler.scheduler.storage.volumes import EPHEMERAL, PVC, Volume

GI = 1 << 30
HOSTNAME = "kubernetes.io/hostname"
NODE_LABEL_KEY = "nodeKey"

IMMEDIATE_SC = StorageClass("immediate-sc", volume_binding_mode=IMMEDIATE)
WAIT_SC = StorageClass("wait-sc", volume_binding_mode=WAIT_FOR_FIRST_CONSUMER)
WAIT_HDD_SC = StorageClass("wait-hdd-sc", volume_binding_mode=WAIT_FOR_FIRST_CONSUMER)
WAIT_SC_CAPACITY = StorageClass(
    "wait-sc-with-storage-capacity",
    provisioner="driver-with-storage-capacity",
    volume_binding_mode=WAIT_FOR_FIRST_CONSUMER,
)
DRIVER_WITH_CAPACITY = CSIDriver("driver-with-storage-capacity", storage_capacity=True)


def make_node(name: str, **labels: str) -> Node:
    return Node(name, labels={HOSTNAME: name, **labels})


def affinity(**key_values: list[str]) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(tuple(Requirement(k, "In", tuple(v)) for k, v in key_values.items())),)


def make_pv(
    name: str,
    class_name: str,
    *,
    phase: str = "",
    capacity: int = 0,
    node_affinity: dict[str, list[str]] | None = None,
    claim: PersistentVolumeClaim | None = None,
    version: str = "",
    access_modes: tuple[str, ...] = (),
) -> PersistentVolume:
    return PersistentVolume(
        name,
        storage_class_name=class_name,
        phase=phase,
        capacity=capacity,
        node_affinity=None if node_affinity is None else affinity(**node_affinity),
        claim_ref=None if claim is None else ClaimRef(claim.namespace, claim.name, claim.uid),
        resource_version=version,
        access_modes=access_modes,
    )


def make_pvc(
    name: str,
    class_name: str,
    *,
    bound_pv: str = "",
    request: int | None = None,
    phase: str = "Pending",
    version: str = "",
    annotations: dict[str, str] | None = None,
) -> PersistentVolumeClaim:
    ann = dict(annotations or {})
    if bound_pv:
        ann[ANN_BIND_COMPLETED] = "true"
    return PersistentVolumeClaim(
        name,
        uid=f"uid-{name}",
        storage_class_name=class_name,
        volume_name=bound_pv,
        request=request,
        phase=phase,
        annotations=ann,
        resource_version=version,
    )


def bound(pvc: PersistentVolumeClaim, pv_name: str) -> PersistentVolumeClaim:
    return dataclasses.replace(
        pvc, volume_name=pv_name, annotations={**pvc.annotations, ANN_BIND_COMPLETED: "yes"}
    )


def make_pod(name: str, *claims: str, ephemeral: tuple[str, ...] = (), uid: str = "") -> Pod:
    volumes = tuple(Volume(f"vol{i}", PVC, claim_name=c) for i, c in enumerate(claims))
    volumes += tuple(Volume(v, EPHEMERAL) for v in ephemeral)
    return Pod(name, uid=uid or f"uid-{name}", volumes=volumes)


def make_capacity(
    name: str, class_name: str, node: Node, capacity: int, maximum_volume_size: int | None = None
) -> CSIStorageCapacity:
    selector = LabelSelector(match_labels=((NODE_LABEL_KEY, node.labels[NODE_LABEL_KEY]),))
    return CSIStorageCapacity(
        name,
        storage_class_name=class_name,
        node_topology=selector,
        capacity=capacity,
        maximum_volume_size=maximum_volume_size,
    )
