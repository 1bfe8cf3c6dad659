"""NodeVolumeLimits: ports of csi_test.go TestCSILimits (CSI, ephemeral, in-tree migration and
VolumeAttachment cases) and of the Pod and VolumeAttachment delete hints' tests."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from policy_scheduler.scheduler.storage.lister import StorageObject, StorageObjects
from policy_scheduler.scheduler.storage.types import (
    ANN_MIGRATED_PLUGINS,
    CSIDriver,
    CSINode,
    CSINodeDriver,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from policy_scheduler.scheduler.storage.volumes import (
    AWS_EBS,
    AZURE_DISK,
    EPHEMERAL,
    GCE_PD,
    PORTWORX,
    PVC,
    Volume,
)
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
SC = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status(Code.UNSCHEDULABLE, ("node(s) exceed max volume count",))
_n = 0


def pod(*claims: str, name: str = "", namespace: str = "default", uid: str = "", ephemeral: str = "") -> Pod:
    global _n
    _n += 1
    volumes = tuple(Volume(f"v{i}", PVC, claim_name=c) for i, c in enumerate(claims))
    if ephemeral:
        volumes += (Volume(ephemeral, EPHEMERAL),)
    return Pod(name or f"p{_n}", namespace=namespace, uid=uid or f"u{_n}", volumes=volumes)


def storage_objects(*drivers: str) -> list[StorageObject]:
    out: list[StorageObject] = [StorageClass(SC, provisioner=EBS)]
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            out.append(PersistentVolume(name, csi_driver=driver, csi_volume_handle=name))
            out.append(PersistentVolumeClaim(name, volume_name=name))
    out.append(PersistentVolumeClaim("csi-4", storage_class_name=SC))
    out.append(PersistentVolumeClaim("csi-5"))
    out.append(PersistentVolumeClaim("csi-6", storage_class_name=SC, volume_name="missing-in-action"))
    return out


RUNNING = pod(f"csi-{EBS}-3")
PENDING = pod("csi-4")
UNBOUND_2 = pod("csi-4")
MISSING_PV = pod("csi-6")
NO_SC = pod("csi-5")
GCE_TWO = pod(f"csi-{GCE}-1", f"csi-{GCE}-2")
EBS_ONE = pod(f"csi-{EBS}-0")
EBS_TWO = pod(f"csi-{EBS}-1", f"csi-{EBS}-2")
EPHEMERAL_POD = pod(name="abc", namespace="test", uid="12345", ephemeral="xyz")
EPHEMERAL_CLAIM = PersistentVolumeClaim(
    "abc-xyz",
    namespace="test",
    storage_class_name=SC,
    owner_references=(OwnerRef("Pod", "abc", "12345", controller=True),),
)


@dataclass
class Case:
    name: str
    new: Pod
    existing: list[Pod]
    max_vols: int
    drivers: tuple[str, ...] = (EBS,)
    limit_source: str = "csinode"
    extra: list[StorageObject] = field(default_factory=list)
    want: Status = SUCCESS


CASES = [
    Case("fits when node volume limit >= new pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], 4),
    Case("doesn't when node volume limit <= pods CSI volume", EBS_ONE, [RUNNING, EBS_TWO], 2, want=EXCEEDED),
    Case(
        "should when driver does not support volume limits",
        EBS_ONE,
        [RUNNING, EBS_TWO],
        2,
        limit_source="csinode-with-no-limit",
    ),
    Case(
        "count pending PVCs towards volume limit <= pods CSI volume",
        EBS_ONE,
        [PENDING, EBS_TWO],
        2,
        want=EXCEEDED,
    ),
    Case(
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        EBS_ONE,
        [PENDING, UNBOUND_2, EBS_TWO],
        4,
    ),
    Case(
        "should count PVCs with invalid PV name but valid SC",
        EBS_ONE,
        [MISSING_PV, EBS_TWO],
        2,
        want=EXCEEDED,
    ),
    Case("don't count pvcs with missing SC towards volume limit", EBS_ONE, [RUNNING, NO_SC], 2),
    Case(
        "count pvcs with the same type towards volume limit",
        EBS_ONE,
        [GCE_TWO, EBS_TWO],
        2,
        drivers=(EBS, GCE),
        want=EXCEEDED,
    ),
    Case(
        "don't count pvcs with different type towards volume limit",
        GCE_TWO,
        [EBS_TWO, RUNNING],
        2,
        drivers=(EBS, GCE),
    ),
    Case("nil csi node", EBS_ONE, [RUNNING, EBS_TWO], 2, limit_source="none"),
    Case(
        "ephemeral volume missing",
        EPHEMERAL_POD,
        [],
        2,
        want=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',),
        ),
    ),
    Case(
        "ephemeral volume not owned",
        EPHEMERAL_POD,
        [],
        2,
        extra=[PersistentVolumeClaim("abc-xyz", namespace="test", storage_class_name=SC)],
        want=Status(Code.ERROR, ("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",)),
    ),
    Case("ephemeral volume unbound", EPHEMERAL_POD, [], 2, extra=[EPHEMERAL_CLAIM]),
    Case(
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        EPHEMERAL_POD,
        [EBS_TWO],
        2,
        extra=[EPHEMERAL_CLAIM],
        want=EXCEEDED,
    ),
    Case("already attached volume is not counted twice", EBS_ONE, [EBS_ONE, RUNNING], 2),
]


def build(case: Case) -> NodeVolumeLimits:
    table = NodeTable()
    table.set_node(Node(NODE))
    for p in case.existing:
        table.add_pod(p, 0)
    objects = storage_objects(EBS, GCE) + case.extra
    if case.limit_source != "none":
        limit = case.max_vols if case.limit_source == "csinode" else None
        objects.append(CSINode(NODE, tuple(CSINodeDriver(d, NODE, limit) for d in case.drivers)))
    return NodeVolumeLimits(Handle(table=table, storage=StorageObjects(objects)), {})


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_csi_limits(case: Case) -> None:
    plugin = build(case)
    state = CycleState()
    assert plugin.pre_filter(state, case.new)[1] == SUCCESS
    assert plugin.filter(state, case.new, np.array([0])).status_of(0) == case.want


def test_pre_filter_skips_pods_without_claims() -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    assert plugin.pre_filter(CycleState(), Pod("p", volumes=(Volume("secret"),)))[1] == SKIP


def test_limits_follow_each_node() -> None:
    table = NodeTable()
    for name in ("a", "b", "c"):
        table.set_node(Node(name))
    table.add_pod(EBS_TWO, 0)
    table.add_pod(pod(f"csi-{EBS}-1", f"csi-{EBS}-2"), 1)
    objects = [
        *storage_objects(EBS),
        CSINode("a", (CSINodeDriver(EBS, "a", 2),)),
        CSINode("b", (CSINodeDriver(EBS, "b", 3),)),
    ]
    plugin = NodeVolumeLimits(Handle(table=table, storage=StorageObjects(objects)), {})
    result = plugin.filter(CycleState(), EBS_ONE, np.arange(3))
    assert result.passed.tolist() == [False, True, True]


def test_limits_are_rebuilt_when_nodes_or_csinodes_change() -> None:
    table = NodeTable()
    table.set_node(Node("a"))
    storage = StorageObjects([*storage_objects(EBS), CSINode("a", (CSINodeDriver(EBS, "a", 0),))])
    plugin = NodeVolumeLimits(Handle(table=table, storage=storage), {})
    assert not plugin.filter(CycleState(), EBS_ONE, np.arange(1)).passed[0]
    storage.upsert(CSINode("a", (CSINodeDriver(EBS, "a", 1),)))
    storage.upsert(CSINode("b", (CSINodeDriver(EBS, "b", 0),)))
    assert plugin.filter(CycleState(), EBS_ONE, np.arange(1)).passed[0]
    table.set_node(Node("b"))
    table.remove_node("a")  # only the rows change: b moves to row 0
    assert not plugin.filter(CycleState(), EBS_ONE, np.arange(1)).passed[0]


def test_limits_are_not_rebuilt_per_cycle() -> None:
    table = NodeTable()
    table.set_node(Node("a"))
    storage = StorageObjects([*storage_objects(EBS), CSINode("a", (CSINodeDriver(EBS, "a", 4),))])
    plugin = NodeVolumeLimits(Handle(table=table, storage=storage), {})
    limits = plugin._node_limits()
    table.add_pod(EBS_TWO, 0)  # a binding: pods change, rows do not
    table.set_node(Node("a", labels={"x": "y"}))
    assert plugin._node_limits() is limits


def attachments(count: int, driver: str = EBS, node: str = NODE, first: int = 0) -> list[StorageObject]:
    """getFakeVolumeAttachmentLister: `count` attachments of the driver's csi-<driver>-<j> PVs."""
    return [
        VolumeAttachment(f"va-{driver}-{j}", driver, node, f"csi-{driver}-{j}")
        for j in range(first, first + count)
    ]


@pytest.mark.parametrize(
    ("name", "existing", "extra", "passes"),
    [
        ("should count VolumeAttachments towards volume limit when no pods exist", [], attachments(2), False),
        ("should schedule pod when VolumeAttachments count does not exceed limit", [], attachments(1), True),
        ("attachments on another node do not count", [], attachments(2, node="other"), True),
        ("attachments of another driver do not count", [], attachments(2, GCE), True),
        (
            "attachments without a PV name or of a missing PV do not count",
            [],
            [VolumeAttachment("va-a", EBS, NODE), VolumeAttachment("va-b", EBS, NODE, "gone")],
            True,
        ),
    ],
)
def test_volume_attachments_count(
    name: str, existing: list[Pod], extra: list[StorageObject], passes: bool
) -> None:
    plugin = build(Case(name, EBS_ONE, existing, 2, extra=extra))
    assert bool(plugin.filter(CycleState(), EBS_ONE, np.array([0])).passed[0]) is passes


def test_attachments_of_volumes_pods_use_are_not_counted_twice() -> None:
    # EBS_TWO's csi-ebs-1/2 are also attached by VolumeAttachments: 2 + 1 new fits a limit of 3.
    fits = build(Case("x", EBS_ONE, [EBS_TWO], 3, extra=attachments(2, first=1)))
    assert fits.filter(CycleState(), EBS_ONE, np.array([0])).passed[0]
    full = build(Case("x", EBS_ONE, [EBS_TWO], 3, extra=attachments(3, first=1)))
    assert not full.filter(CycleState(), EBS_ONE, np.array([0])).passed[0]


def test_volume_attachments_are_counted_per_row() -> None:
    table = NodeTable()
    for name in ("a", "b"):
        table.set_node(Node(name))
    objects = [
        *storage_objects(EBS),
        *attachments(2, node="b"),
        CSINode("a", (CSINodeDriver(EBS, "a", 2),)),
        CSINode("b", (CSINodeDriver(EBS, "b", 2),)),
    ]
    plugin = NodeVolumeLimits(Handle(table=table, storage=StorageObjects(objects)), {})
    result = plugin.filter(CycleState(), EBS_ONE, np.array([1, 0]))
    assert result.passed.tolist() == [False, True]


@pytest.mark.parametrize(
    ("volumes", "want"),
    [
        ((Volume("v", PVC, claim_name="pvc1"),), QueueingHint.QUEUE),
        ((Volume("v", EPHEMERAL),), QueueingHint.SKIP),
        ((Volume("secret"),), QueueingHint.SKIP),
    ],
)
def test_volume_attachment_deleted_hint(volumes: tuple[Volume, ...], want: QueueingHint) -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    (hint,) = [
        h
        for h in plugin.events_to_register()
        if h.event == ClusterEvent(Resource.VOLUME_ATTACHMENT, Action.DELETE)
    ]
    assert hint.hint is not None
    deleted = VolumeAttachment("volumeattachment1", EBS, NODE, "pv1")
    assert hint.hint(Pod("p", volumes=volumes), deleted, None) == want


AWS_PLUGIN = "kubernetes.io/aws-ebs"
IN_TREE = (AWS_PLUGIN, EBS)


def in_tree_objects() -> list[StorageObject]:
    """getFakeCSIPVLister/PVCLister for the in-tree EBS plugin, and csi-sc provisioned by it."""
    out: list[StorageObject] = [StorageClass(SC, provisioner=AWS_PLUGIN)]
    for j in range(4):
        name = f"csi-{AWS_PLUGIN}-{j}"
        out.append(PersistentVolume(name, in_tree_kind=AWS_EBS, in_tree_volume_id=name))
        out.append(PersistentVolumeClaim(name, volume_name=name))
    hostpath = "csi-kubernetes.io/hostpath-0"
    out.append(PersistentVolume(hostpath))  # a non-migratable in-tree source
    out.append(PersistentVolumeClaim(hostpath, volume_name=hostpath))
    return out


def inline_ebs(volume_id: str) -> Pod:
    return Pod(f"inline-{volume_id}", volumes=(Volume("v", AWS_EBS, source_id=volume_id),))


IN_TREE_ONE = pod(f"csi-{AWS_PLUGIN}-0")
IN_TREE_TWO = pod(f"csi-{AWS_PLUGIN}-1", f"csi-{AWS_PLUGIN}-2")
INLINE = inline_ebs("aws-inline1")
MIGRATION_CASES = [
    Case("should count in-tree volumes if migration is enabled", IN_TREE_ONE, [IN_TREE_TWO], 2, IN_TREE, want=EXCEEDED),
    Case("nil csi node", INLINE, [IN_TREE_TWO], 0, IN_TREE, limit_source="none"),
    Case("should count unbound in-tree volumes if migration is enabled", PENDING, [IN_TREE_TWO], 2, IN_TREE, want=EXCEEDED),
    Case("should not limit pod if volume used does not report limits", IN_TREE_ONE, [IN_TREE_TWO], 2, IN_TREE, limit_source="csinode-with-no-limit"),
    Case("should not count non-migratable in-tree volumes", pod("csi-kubernetes.io/hostpath-0"), [EBS_TWO], 2, ("kubernetes.io/hostpath", EBS)),
    Case("should count in-tree inline volumes if migration is enabled", INLINE, [IN_TREE_TWO], 2, IN_TREE, want=EXCEEDED),
    Case("should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)", IN_TREE_ONE, [EBS_TWO], 2, IN_TREE, want=EXCEEDED),
    Case("should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", INLINE, [EBS_TWO, IN_TREE_ONE], 3, IN_TREE, want=EXCEEDED),
    Case("should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", inline_ebs(f"csi-{EBS}-1"), [EBS_TWO, IN_TREE_ONE], 3, IN_TREE),
    Case("should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)", EBS_ONE, [IN_TREE_TWO], 2, IN_TREE, want=EXCEEDED),
    Case("existing inline in-tree volumes count", EBS_ONE, [inline_ebs("aws://us-east-1a/vol-1"), inline_ebs("vol-2")], 2, IN_TREE, want=EXCEEDED),
]  # fmt: skip


@pytest.mark.parametrize("case", MIGRATION_CASES, ids=lambda c: c.name)
def test_csi_limits_with_in_tree_migration(case: Case) -> None:
    plugin = build(dataclasses.replace(case, extra=[*in_tree_objects(), *case.extra]))
    state = CycleState()
    assert plugin.pre_filter(state, case.new)[1] == SUCCESS
    assert plugin.filter(state, case.new, np.array([0])).status_of(0) == case.want


@pytest.mark.parametrize(("version", "on_b"), [(V1_35, True), (V1_36, False), (V1_37, False)])
def test_migrated_volumes_count_only_on_nodes_whose_csinode_has_migration_on(
    version: KubernetesVersion, on_b: bool
) -> None:
    """v1.35 counts Portworx where the CSINode lists it as migrated (its gate is locked on); v1.36
    removed the gate and the annotation check: wherever a CSINode exists, as EBS."""
    px_driver, px_plugin = "pxd.portworx.com", "kubernetes.io/portworx-volume"
    table = NodeTable()
    for name in ("a", "b"):
        table.set_node(Node(name))
    objects: list[StorageObject] = [
        PersistentVolume("px", in_tree_kind=PORTWORX, in_tree_volume_id="px1"),
        PersistentVolumeClaim("px", volume_name="px"),
        CSINode("a", (CSINodeDriver(px_driver, "a", 1),), annotations={ANN_MIGRATED_PLUGINS: px_plugin}),
        CSINode("b", (CSINodeDriver(px_driver, "b", 1),), annotations={ANN_MIGRATED_PLUGINS: AWS_PLUGIN}),
        PersistentVolume("px-new", csi_driver=px_driver, csi_volume_handle="px-new"),
        PersistentVolumeClaim("px-new", volume_name="px-new"),
    ]
    table.add_pod(pod("px"), 0)
    table.add_pod(pod("px"), 1)
    plugin = NodeVolumeLimits(
        Handle(table=table, storage=StorageObjects(objects), features=Features(version)), {}
    )
    result = plugin.filter(CycleState(), pod("px-new"), np.arange(2))
    assert result.passed.tolist() == [False, on_b]
    migrated_new = plugin.filter(CycleState(), pod("px"), np.arange(2))
    assert migrated_new.passed.tolist() == [True, True]  # already on a; not counted on b


def test_pre_filter_runs_for_inline_migratable_volumes() -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    assert plugin.pre_filter(CycleState(), INLINE)[1] == SUCCESS


@pytest.mark.parametrize(
    ("volumes", "attacher", "want"),
    [
        ((Volume("v", AWS_EBS, source_id="vol-1"),), EBS, QueueingHint.QUEUE),
        ((Volume("v", GCE_PD, source_id="pd"),), EBS, QueueingHint.SKIP),
        (
            (Volume("v", AWS_EBS, source_id="vol-1"), Volume("c", PVC, claim_name="c")),
            GCE,
            QueueingHint.QUEUE,
        ),
    ],
)
def test_volume_attachment_deleted_hint_for_inline_volumes(
    volumes: tuple[Volume, ...], attacher: str, want: QueueingHint
) -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    (hint,) = [h for h in plugin.events_to_register() if h.event.resource == Resource.VOLUME_ATTACHMENT]
    assert hint.hint is not None
    assert hint.hint(Pod("p", volumes=volumes), VolumeAttachment("va", attacher, NODE, "pv1"), None) == want


def test_pod_deleted_hint_queues_for_inline_migratable_volumes() -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    (hint,) = [h for h in plugin.events_to_register() if h.event.resource == Resource.POD]
    assert hint.hint is not None
    deleted = dataclasses.replace(inline_ebs("vol-1"), node_name=NODE)
    assert hint.hint(EBS_ONE, deleted, None) == QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("old_count", "new_count", "want"),
    [
        (1, 2, QueueingHint.QUEUE),  # limit raised
        (2, 1, QueueingHint.SKIP),  # limit decreased
        (1, 1, QueueingHint.SKIP),  # limit unchanged
        (None, 1, QueueingHint.QUEUE),  # no count is 0
    ],
)
def test_csi_node_updated_hint(old_count: int | None, new_count: int | None, want: QueueingHint) -> None:
    """TestCSILimitsAfterCSINodeUpdatedQHint."""
    plugin = build(Case("x", EBS_ONE, [], 2))
    (hint,) = [
        h for h in plugin.events_to_register() if h.event == ClusterEvent(Resource.CSI_NODE, Action.UPDATE)
    ]
    assert hint.hint is not None
    old = CSINode("test-node", (CSINodeDriver(EBS, "test-node", old_count),))
    new = CSINode("test-node", (CSINodeDriver(EBS, "test-node", new_count),))
    assert hint.hint(EBS_ONE, old, new) == want


def test_csi_node_updated_hint_queues_for_new_driver() -> None:
    plugin = build(Case("x", EBS_ONE, [], 2))
    (hint,) = [
        h for h in plugin.events_to_register() if h.event == ClusterEvent(Resource.CSI_NODE, Action.UPDATE)
    ]
    assert hint.hint is not None
    old = CSINode("test-node")
    assert hint.hint(EBS_ONE, old, CSINode("test-node", (CSINodeDriver(EBS, "n", 1),))) == QueueingHint.QUEUE
    assert hint.hint(EBS_ONE, old, CSINode("test-node", (CSINodeDriver(EBS, "n"),))) == QueueingHint.SKIP


AZURE_DISK_DRIVER = "disk.csi.azure.com"


def inline_azure_disk(disk_uri: str) -> Pod:
    return Pod(f"inline-{disk_uri}", volumes=(Volume("v", AZURE_DISK, source_id=disk_uri),))


@pytest.mark.parametrize(
    ("new", "existing", "want"),
    [
        (inline_azure_disk("disk-3"), [inline_azure_disk("disk-1"), inline_azure_disk("disk-2")], EXCEEDED),
        (inline_azure_disk("disk-1"), [inline_azure_disk("disk-1"), inline_azure_disk("disk-2")], SUCCESS),
        (inline_azure_disk("disk-3"), [inline_azure_disk("disk-1")], SUCCESS),
    ],
    ids=["third disk exceeds", "a disk already attached counts once", "under the limit"],
)
def test_inline_azure_disks_count_under_their_csi_driver(new: Pod, existing: list[Pod], want: Status) -> None:
    """checkAttachableInlineVolume for azureDisk: diskURI is the CSI handle of disk.csi.azure.com."""
    case = Case("azure", new, existing, 2, ("kubernetes.io/azure-disk", AZURE_DISK_DRIVER))
    plugin = build(case)
    state = CycleState()
    assert plugin.pre_filter(state, new)[1] == SUCCESS
    assert plugin.filter(state, new, np.array([0])).status_of(0) == want


# TestVolumeLimitScalingGate (csi_test.go): with VolumeLimitScaling a node whose CSINode lacks the
# driver of the pod's new volume is refused; v1.35 whenever a CSIDriver object exists for it,
# from v1.36 only when that CSIDriver sets preventPodSchedulingIfMissing.
NOT_INSTALLED = Status(Code.UNSCHEDULABLE, (f"{EBS} CSI driver is not installed on the node",))


def limit_scaling(version: KubernetesVersion, on: bool) -> Features:
    return Features(version, (("VolumeLimitScaling", on),))


@pytest.mark.parametrize(
    ("features", "driver", "limit_source", "want"),
    [
        # v1.35.4's table
        (limit_scaling(V1_35, True), CSIDriver(EBS), "no-csi-driver", NOT_INSTALLED),
        (limit_scaling(V1_35, False), CSIDriver(EBS), "no-csi-driver", SUCCESS),
        (limit_scaling(V1_35, True), CSIDriver(EBS), "csinode", SUCCESS),
        (limit_scaling(V1_35, True), None, "no-csi-driver", SUCCESS),
        # v1.36.3's and v1.37.2's table (the gate is on by default from v1.37)
        (limit_scaling(V1_36, True), CSIDriver(EBS), "no-csi-driver", SUCCESS),
        (Features(V1_37), CSIDriver(EBS), "no-csi-driver", SUCCESS),
        (
            limit_scaling(V1_36, True),
            CSIDriver(EBS, prevent_pod_scheduling_if_missing=True),
            "no-csi-driver",
            NOT_INSTALLED,
        ),
        (
            Features(V1_37),
            CSIDriver(EBS, prevent_pod_scheduling_if_missing=True),
            "no-csi-driver",
            NOT_INSTALLED,
        ),
        (
            limit_scaling(V1_37, False),
            CSIDriver(EBS, prevent_pod_scheduling_if_missing=True),
            "no-csi-driver",
            SUCCESS,
        ),
        (Features(V1_37), CSIDriver(EBS, prevent_pod_scheduling_if_missing=True), "csinode", SUCCESS),
        (Features(V1_37), None, "no-csi-driver", SUCCESS),
    ],
)
def test_volume_limit_scaling_gate(
    features: Features, driver: CSIDriver | None, limit_source: str, want: Status
) -> None:
    table = NodeTable()
    table.set_node(Node(NODE))
    drivers = (CSINodeDriver(EBS, NODE, 2),) if limit_source == "csinode" else ()
    objects: list[StorageObject] = [*storage_objects(EBS), CSINode(NODE, drivers)]
    if driver is not None:
        objects.append(driver)
    plugin = NodeVolumeLimits(Handle(table=table, storage=StorageObjects(objects), features=features), {})
    state = CycleState()
    assert plugin.pre_filter(state, EBS_ONE)[1] == SUCCESS
    assert plugin.filter(state, EBS_ONE, np.array([0])).status_of(0) == want


def test_a_missing_driver_is_reported_before_the_limit() -> None:
    """checkCSIDriverOnNode runs before the limits are counted: a row without the driver gets
    that reason even where the limit is exceeded; the others keep theirs."""
    table = NodeTable()
    for name in ("full", "missing", "room"):
        table.set_node(Node(name))
    table.add_pod(EBS_TWO, 0)
    objects: list[StorageObject] = [
        *storage_objects(EBS),
        CSIDriver(EBS, prevent_pod_scheduling_if_missing=True),
        CSINode("full", (CSINodeDriver(EBS, "full", 2),)),
        CSINode("missing", ()),
        CSINode("room", (CSINodeDriver(EBS, "room", 2),)),
    ]
    plugin = NodeVolumeLimits(
        Handle(table=table, storage=StorageObjects(objects), features=Features(V1_37)), {}
    )
    result = plugin.filter(CycleState(), EBS_ONE, np.arange(3))
    assert [result.status_of(i) for i in range(3)] == [EXCEEDED, NOT_INSTALLED, SUCCESS]
