"""VolumeZone: ports of volume_zone_test.go (TestSingleZone, TestWithBinding) and a batch case."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import QueueingHint
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.volumezone import VolumeZone
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.scheduler.storage.types import (
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from policy_scheduler.scheduler.storage.volumes import PVC, Volume

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had no available volume zone",))

PVS = [
    PersistentVolume("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    PersistentVolume("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    PersistentVolume("Vol_3", labels={BETA_REGION: "us-west1"}),
    PersistentVolume("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    PersistentVolume("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    PersistentVolume("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    PersistentVolume("Vol_Multi", labels={ZONE: "us-west1-a__us-west1-b"}),
]
PVCS = [
    PersistentVolumeClaim(f"PVC_{suffix}", volume_name=f"Vol_{suffix}")
    for suffix in ("1", "2", "3", "Stable_1", "Stable_2", "Stable_3", "Multi")
] + [
    PersistentVolumeClaim("PVC_4", volume_name="Vol_not_exist"),
    PersistentVolumeClaim("PVC_NoSC", storage_class_name="Class_0"),
    PersistentVolumeClaim("PVC_EmptySC"),
    PersistentVolumeClaim("PVC_WaitSC", storage_class_name="Class_Wait"),
    PersistentVolumeClaim("PVC_ImmediateSC", storage_class_name="Class_Immediate"),
]
CLASSES = [
    StorageClass("Class_Immediate", volume_binding_mode=None),
    StorageClass("Class_Wait", volume_binding_mode=WAIT_FOR_FIRST_CONSUMER),
]


def pod_with(claim: str | None) -> Pod:
    volumes = () if claim is None else (Volume("v", PVC, claim_name=claim),)
    return Pod("pod_1", volumes=volumes)


def plugin_for(*nodes: Node) -> VolumeZone:
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    return VolumeZone(Handle(table=table, storage=StorageObjects([*PVS, *PVCS, *CLASSES])), {})


def U(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


CASES = [
    ("pod without volume", None, {BETA_ZONE: "us-west1-a"}, SKIP, SUCCESS),
    ("node without labels", "PVC_1", {}, SUCCESS, SUCCESS),
    ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS, SUCCESS),
    (
        "beta region label matched",
        "PVC_2",
        {BETA_REGION: "us-west1", "uselessLabel": "none"},
        SUCCESS,
        SUCCESS,
    ),
    ("beta region label doesn't match", "PVC_2", {BETA_REGION: "no_us-west1"}, SUCCESS, CONFLICT),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a"}, SUCCESS, CONFLICT),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a"}, SUCCESS, SUCCESS),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1"}, SUCCESS, SUCCESS),
    ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1"}, SUCCESS, CONFLICT),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a"}, SUCCESS, CONFLICT),
    ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, SUCCESS, CONFLICT),
    ("pv with zone,node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, SUCCESS, CONFLICT),
    ("pv with beta label,node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, SUCCESS, SUCCESS),
    ("pv with beta label,node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, SUCCESS, CONFLICT),
    ("multi-zone label value", "PVC_Multi", {ZONE: "us-west1-b"}, SUCCESS, SUCCESS),
    ("label zone failure domain matched", "PVC_1", {BETA_ZONE: "us-west1-a"}, SUCCESS, SUCCESS),
    (
        "unbound volume empty storage class",
        "PVC_EmptySC",
        {BETA_ZONE: "us-west1-a"},
        U("PersistentVolumeClaim had no pv name and storageClass name"),
        None,
    ),
    (
        "unbound volume no storage class",
        "PVC_NoSC",
        {BETA_ZONE: "us-west1-a"},
        U('storageclass.storage.k8s.io "Class_0" not found'),
        None,
    ),
    (
        "unbound volume immediate binding mode",
        "PVC_ImmediateSC",
        {BETA_ZONE: "us-west1-a"},
        U('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
        None,
    ),
    ("unbound volume wait binding mode", "PVC_WaitSC", {BETA_ZONE: "us-west1-a"}, SKIP, None),
    ("pv not found", "PVC_4", {}, U('persistentvolume "Vol_not_exist" not found'), None),
    ("pvc not found", "PVC_missing", {}, U('persistentvolumeclaim "PVC_missing" not found'), None),
]


@pytest.mark.parametrize(
    ("name", "claim", "labels", "want_pre", "want_filter"), CASES, ids=[c[0] for c in CASES]
)
def test_single_zone(
    name: str, claim: str | None, labels: dict[str, str], want_pre: Status, want_filter: Status | None
) -> None:
    plugin = plugin_for(Node("host1", labels=labels))
    state, pod = CycleState(), pod_with(claim)
    _, status = plugin.pre_filter(state, pod)
    assert status == want_pre
    if want_filter is not None:
        assert plugin.filter(state, pod, np.array([0])).status_of(0) == want_filter


def test_batch_rows_get_their_own_verdict() -> None:
    nodes = [
        Node("a", labels={ZONE: "us-west1-a"}),
        Node("b", labels={ZONE: "us-west1-b"}),
        Node("c"),
        Node("d", labels={BETA_ZONE: "us-west1-a"}),
    ]
    plugin = plugin_for(*nodes)
    state, pod = CycleState(), pod_with("PVC_1")  # beta zone us-west1-a
    plugin.pre_filter(state, pod)
    assert plugin.filter(state, pod, np.arange(4)).passed.tolist() == [True, False, True, True]


def test_pv_hint_queues_only_on_topology_change() -> None:
    hint = next(e.hint for e in plugin_for().events_to_register() if e.event.resource == "PersistentVolume")
    assert hint is not None
    old = PersistentVolume("v", labels={ZONE: "a"})
    assert hint(pod_with("x"), old, PersistentVolume("v", labels={ZONE: "a", "x": "y"})) == QueueingHint.SKIP
    assert hint(pod_with("x"), old, PersistentVolume("v", labels={ZONE: "b"})) == QueueingHint.QUEUE
