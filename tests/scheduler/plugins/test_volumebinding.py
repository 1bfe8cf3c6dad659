"""VolumeBinding: ports of volume_binding_test.go TestVolumeBinding, plus Reserve/PreBind cases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.volumebinding import VolumeBinding
from policy_scheduler.scheduler.storage.lister import StorageObject, StorageObjects
from policy_scheduler.scheduler.storage.types import ANN_SELECTED_NODE, CLAIM_LOST
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.gates import STORAGE_CAPACITY_SCORING
from policy_scheduler.scheduler.versioning.version import V1_35

from ._build_storage import (
    DRIVER_WITH_CAPACITY,
    GI,
    HOSTNAME,
    IMMEDIATE_SC,
    NODE_LABEL_KEY,
    WAIT_HDD_SC,
    WAIT_SC,
    WAIT_SC_CAPACITY,
    make_capacity,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
)

BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
DEFAULT_TEST_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
AVAILABLE = "Available"


def U(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def scoring_features(scoring: bool) -> Features:
    """The StorageCapacityScoring gate as upstream's cases set it (on by default from v1.37)."""
    return Features(V1_35, ((STORAGE_CAPACITY_SCORING, scoring),))


def setup(
    nodes: list[Node], objects: list[StorageObject], scoring: bool = False, args: dict[str, Any] | None = None
) -> tuple[VolumeBinding, NodeTable, StorageObjects]:
    table = NodeTable()
    for node in nodes:
        table.set_node(node)
    storage = StorageObjects(
        [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, WAIT_SC_CAPACITY, DRIVER_WITH_CAPACITY, *objects]
    )
    plugin_args = {
        "bindTimeoutSeconds": 300,
        **({"shape": DEFAULT_TEST_SHAPE} if scoring else {}),
        **(args or {}),
    }
    handle = Handle(table=table, storage=storage, features=scoring_features(scoring))
    return VolumeBinding.from_profile(handle, plugin_args), table, storage


@dataclass
class Case:
    name: str
    pod: Pod
    nodes: list[Node]
    objects: list[StorageObject] = field(default_factory=list)
    pre_filter: Status | None = None  # None: Success
    filters: list[Status] = field(default_factory=list)
    scores: list[int] | None = None  # None: PreScore skips
    scoring: bool = False
    args: dict[str, Any] | None = None


def zonal_nodes() -> list[Node]:
    out = []
    for zone in ("a", "b", "c"):
        for n in ("a", "b"):
            labels = {
                "topology.kubernetes.io/region": f"region-{zone}",
                "topology.kubernetes.io/zone": f"zone-{zone}",
            }
            out.append(make_node(f"zone-{zone}-node-{n}", **labels))
    return out


def zonal_pvs() -> list[StorageObject]:
    pvs: list[StorageObject] = []
    for zone, size in (("a", 200), ("b", 100)):
        for i in range(2):
            pvs.append(
                make_pv(
                    f"pv-{zone}-{i}",
                    WAIT_SC.name,
                    phase=AVAILABLE,
                    capacity=size * GI,
                    node_affinity={
                        "topology.kubernetes.io/region": [f"region-{zone}"],
                        "topology.kubernetes.io/zone": [f"zone-{zone}"],
                    },
                )
            )
    return pvs


def local_pvs(sc: str, names: list[tuple[str, int, str]]) -> list[StorageObject]:
    return [
        make_pv(name, sc, phase=AVAILABLE, capacity=size * GI, node_affinity={HOSTNAME: [node]})
        for name, size, node in names
    ]


def cap_nodes() -> list[Node]:
    return [make_node(n, **{NODE_LABEL_KEY: n}) for n in ("node-a", "node-b", "node-c")]


def capacities(*sizes: int) -> list[StorageObject]:
    return [
        make_capacity(node.name, WAIT_SC_CAPACITY.name, node, size * GI)
        for node, size in zip(cap_nodes(), sizes, strict=False)
    ]


CASES = [
    Case("pod has not pvcs", make_pod("pod-a"), [make_node("node-a")], pre_filter=SKIP, filters=[SUCCESS]),
    Case(
        "all bound",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC.name, bound_pv="pv-a"), make_pv("pv-a", WAIT_SC.name, phase=AVAILABLE)],
        filters=[SUCCESS],
    ),
    Case(
        "PVC does not exist",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        pre_filter=U('persistentvolumeclaim "pvc-a" not found'),
    ),
    Case(
        "Part of PVCs do not exist",
        make_pod("pod-a", "pvc-a", "pvc-b"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC.name, bound_pv="pv-a")],
        pre_filter=U('persistentvolumeclaim "pvc-b" not found'),
    ),
    Case(
        "immediate claims not bound",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", IMMEDIATE_SC.name)],
        pre_filter=U("pod has unbound immediate PersistentVolumeClaims"),
    ),
    Case(
        "unbound claims no matches",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC.name)],
        filters=[U(BIND_CONFLICT)],
    ),
    Case(
        "bound and unbound unsatisfied",
        make_pod("pod-a", "pvc-a", "pvc-b"),
        [make_node("node-a", foo="barbar")],
        [
            make_pvc("pvc-a", WAIT_SC.name, bound_pv="pv-a"),
            make_pvc("pvc-b", WAIT_SC.name),
            make_pv("pv-a", WAIT_SC.name, phase=AVAILABLE, node_affinity={"foo": ["bar"]}),
        ],
        filters=[U(NODE_CONFLICT, BIND_CONFLICT)],
    ),
    Case(
        "pv not found",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC.name, bound_pv="pv-a")],
        filters=[U(PV_NOT_EXIST)],
    ),
    Case(
        "pv not found claim lost",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a")],
        [make_pvc("pvc-a", WAIT_SC.name, bound_pv="pv-a", phase=CLAIM_LOST)],
        pre_filter=U('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
    ),
    Case(
        "local volumes with close capacity are preferred",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a"), make_node("node-b"), make_node("node-c")],
        [
            make_pvc("pvc-a", WAIT_SC.name, request=50 * GI),
            *local_pvs(
                WAIT_SC.name,
                [
                    ("pv-a-0", 200, "node-a"),
                    ("pv-a-1", 200, "node-a"),
                    ("pv-b-0", 100, "node-b"),
                    ("pv-b-1", 100, "node-b"),
                ],
            ),
        ],
        filters=[SUCCESS, SUCCESS, U(BIND_CONFLICT)],
        scores=[25, 50, 0],
        scoring=True,
    ),
    Case(
        "local volumes with close capacity are preferred (multiple pvcs)",
        make_pod("pod-a", "pvc-0", "pvc-1"),
        [make_node("node-a"), make_node("node-b"), make_node("node-c")],
        [
            make_pvc("pvc-0", WAIT_SC.name, request=50 * GI),
            make_pvc("pvc-1", WAIT_HDD_SC.name, request=100 * GI),
            *local_pvs(WAIT_SC.name, [("pv-a-0", 200, "node-a"), ("pv-a-1", 200, "node-a")]),
            *local_pvs(WAIT_HDD_SC.name, [("pv-a-2", 200, "node-a"), ("pv-a-3", 200, "node-a")]),
            *local_pvs(WAIT_SC.name, [("pv-b-0", 100, "node-b"), ("pv-b-1", 100, "node-b")]),
            *local_pvs(WAIT_HDD_SC.name, [("pv-b-2", 100, "node-b"), ("pv-b-3", 100, "node-b")]),
        ],
        filters=[SUCCESS, SUCCESS, U(BIND_CONFLICT)],
        scores=[38, 75, 0],
        scoring=True,
    ),
    Case(
        "zonal volumes with close capacity are preferred",
        make_pod("pod-a", "pvc-a"),
        zonal_nodes(),
        [make_pvc("pvc-a", WAIT_SC.name, request=50 * GI), *zonal_pvs()],
        filters=[SUCCESS] * 4 + [U(BIND_CONFLICT)] * 2,
        scores=[25, 25, 50, 50, 0, 0],
        scoring=True,
    ),
    Case(
        "zonal volumes with close capacity are preferred (custom shape)",
        make_pod("pod-a", "pvc-a"),
        zonal_nodes(),
        [make_pvc("pvc-a", WAIT_SC.name, request=50 * GI), *zonal_pvs()],
        filters=[SUCCESS] * 4 + [U(BIND_CONFLICT)] * 2,
        scores=[15, 15, 30, 30, 0, 0],
        scoring=True,
        args={
            "shape": [
                {"utilization": 0, "score": 0},
                {"utilization": 50, "score": 3},
                {"utilization": 100, "score": 5},
            ]
        },
    ),
    Case(
        "storage capacity score",
        make_pod("pod-a", "pvc-dynamic"),
        cap_nodes(),
        [make_pvc("pvc-dynamic", WAIT_SC_CAPACITY.name, request=10 * GI), *capacities(100, 50, 10)],
        filters=[SUCCESS] * 3,
        scores=[10, 20, 100],
        scoring=True,
    ),
    Case(
        "storage capacity score with static binds",
        make_pod("pod-a", "pvc-dynamic", "pvc-static"),
        cap_nodes(),
        [
            make_pvc("pvc-dynamic", WAIT_SC_CAPACITY.name, request=10 * GI),
            make_pvc("pvc-static", WAIT_SC.name, request=50 * GI),
            *local_pvs(
                WAIT_SC.name,
                [
                    ("pv-static-a", 100, "node-a"),
                    ("pv-static-b", 100, "node-b"),
                    ("pv-static-c", 100, "node-c"),
                ],
            ),
            *capacities(100, 50, 10),
        ],
        filters=[SUCCESS] * 3,
        scores=[50, 50, 50],
        scoring=True,
    ),
    Case(
        "dynamic provisioning with multiple PVCs of the same StorageClass",
        make_pod("pod-a", "pvc-dynamic-0", "pvc-dynamic-1"),
        cap_nodes()[:1],
        [
            make_pvc("pvc-dynamic-0", WAIT_SC_CAPACITY.name, request=50 * GI),
            make_pvc("pvc-dynamic-1", WAIT_SC_CAPACITY.name, request=50 * GI),
            *capacities(100),
        ],
        filters=[SUCCESS],
        scores=[100],
        scoring=True,
    ),
    Case(
        "prefer node with least allocatable",
        make_pod("pod-a", "pvc-dynamic"),
        cap_nodes(),
        [make_pvc("pvc-dynamic", WAIT_SC_CAPACITY.name, request=10 * GI), *capacities(100, 20, 10)],
        filters=[SUCCESS] * 3,
        scores=[10, 50, 100],
        scoring=True,
    ),
    Case(
        "prefer node with maximum allocatable",
        make_pod("pod-a", "pvc-dynamic"),
        cap_nodes(),
        [make_pvc("pvc-dynamic", WAIT_SC_CAPACITY.name, request=10 * GI), *capacities(100, 20, 10)],
        filters=[SUCCESS] * 3,
        scores=[90, 50, 0],
        scoring=True,
        args={"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
    ),
    # Not upstream table cases: capacity, provisioner and selected-node rejections.
    Case(
        "dynamic provisioning without enough capacity",
        make_pod("pod-a", "pvc-dynamic"),
        cap_nodes(),
        [make_pvc("pvc-dynamic", WAIT_SC_CAPACITY.name, request=60 * GI), *capacities(100, 50)],
        filters=[SUCCESS, U(NOT_ENOUGH_SPACE), U(NOT_ENOUGH_SPACE)],
    ),
    Case(
        "claim provisioned for another node",
        make_pod("pod-a", "pvc-a"),
        [make_node("node-a"), make_node("node-b")],
        [make_pvc("pvc-a", WAIT_SC_CAPACITY.name, annotations={ANN_SELECTED_NODE: "node-b"})],
        filters=[U(BIND_CONFLICT), SUCCESS],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_volume_binding(case: Case) -> None:
    plugin, _, _ = setup(case.nodes, case.objects, case.scoring, case.args)
    state = CycleState()
    _, status = plugin.pre_filter(state, case.pod)
    assert status == (case.pre_filter or SUCCESS)
    if not status.is_success:
        return
    rows = np.arange(len(case.nodes))
    result = plugin.filter(state, case.pod, rows)
    assert [result.status_of(i) for i in range(len(rows))] == case.filters
    pre_score = plugin.pre_score(state, case.pod, rows)
    if case.scores is None:
        assert pre_score == SKIP
        return
    assert pre_score == SUCCESS
    assert plugin.score(state, case.pod, rows).tolist() == case.scores
