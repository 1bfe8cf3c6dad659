"""VolumeBinding's binder pieces: assume/revert (binder_test.go's AssumePodVolumes and
RevertAssumedPodVolumes cases that apply), checkBindings, the assume cache, and the queueing
hints (volume_binding_test.go's isSchedulableAfter* tables)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.volumebinding import VolumeBinding
from policy_scheduler.scheduler.plugins.volumebinding.args import VolumeBindingArgs
from policy_scheduler.scheduler.plugins.volumebinding.assume_cache import AssumeCache, AssumeError
from policy_scheduler.scheduler.plugins.volumebinding.binder import VolumeBinder, bind_volume_to_claim
from policy_scheduler.scheduler.plugins.volumebinding.claims import BinderError
from policy_scheduler.scheduler.plugins.volumebinding.matching import (
    ERR_REASON_NODE_CONFLICT,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
)
from policy_scheduler.scheduler.storage.csi_translation import (
    GCE_PD_PLUGIN,
    LABEL_REGION_BETA,
    LABEL_ZONE_BETA,
)
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.scheduler.storage.types import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_MIGRATED_PLUGINS,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from policy_scheduler.scheduler.storage.volumes import CSI, GCE_PD, Volume

from ._build_storage import HOSTNAME, WAIT_SC, bound, make_pod, make_pv, make_pvc

Q, S = QueueingHint.QUEUE, QueueingHint.SKIP


def binder_with(*objects: object) -> tuple[VolumeBinder, AssumeCache, StorageObjects]:
    storage = StorageObjects(list(objects))  # type: ignore[arg-type]
    cache = AssumeCache(storage)
    labels = {"node1": {HOSTNAME: "node1"}}
    return VolumeBinder(cache, storage, None, 600.0, labels.get), cache, storage


def test_bind_volume_to_claim_sets_claim_ref_and_bound_by_controller() -> None:
    pvc = make_pvc("claim", WAIT_SC.name)
    pv, dirty = bind_volume_to_claim(make_pv("pv", WAIT_SC.name), pvc)
    assert dirty
    assert pv.claim_ref == ClaimRef("default", "claim", pvc.uid)
    assert pv.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    again, dirty = bind_volume_to_claim(pv, pvc)
    assert not dirty
    assert again == pv
    # Pre-bound by the user (claimRef without uid): uid filled in, not marked bound-by-controller.
    pre = make_pv("pv", WAIT_SC.name, claim=dataclasses.replace(pvc, uid=""))
    new, dirty = bind_volume_to_claim(pre, pvc)
    assert dirty
    assert new.claim_ref is not None
    assert new.claim_ref.uid == pvc.uid
    assert ANN_BOUND_BY_CONTROLLER not in new.annotations


def test_assume_then_revert() -> None:
    pvc = make_pvc("claim", WAIT_SC.name, version="1")
    pvc2 = make_pvc("dyn", WAIT_SC.name, version="1")
    pv = make_pv("pv", WAIT_SC.name, version="1")
    binder, cache, _ = binder_with(pvc, pvc2, pv)
    pod = make_pod("p", "claim", "dyn")
    volumes = PodVolumes([BindingInfo(pvc, pv)], [DynamicProvision(pvc2)])
    assert binder.assume(pod, "node1", volumes) is False
    assumed = cache.get_pv("pv")
    assert assumed is not None
    assert assumed.claim_ref is not None
    assert assumed.claim_ref.name == "claim"
    claim = cache.get_pvc("default", "dyn")
    assert claim is not None
    assert claim.annotations[ANN_SELECTED_NODE] == "node1"
    binder.revert(volumes)
    assert cache.get_pv("pv") == pv
    assert cache.get_pvc("default", "dyn") == pvc2


def test_assume_all_bound_assumes_nothing() -> None:
    pvc = make_pvc("claim", WAIT_SC.name, bound_pv="pv")
    binder, cache, _ = binder_with(pvc, make_pv("pv", WAIT_SC.name))
    assert binder.assume(make_pod("p", "claim"), "node1", PodVolumes()) is True
    assert cache.assumed_pvs() == []


def test_assume_cache_rejects_stale_objects_and_yields_to_newer_informer_versions() -> None:
    pv = make_pv("pv", WAIT_SC.name, version="5")
    _, cache, storage = binder_with(pv)
    with pytest.raises(AssumeError, match="out of sync"):
        cache.assume_pv(dataclasses.replace(pv, resource_version="4"))
    cache.assume_pv(dataclasses.replace(pv, phase="Bound"))
    got = cache.get_pv("pv")
    assert got is not None
    assert got.phase == "Bound"
    storage.upsert(dataclasses.replace(pv, resource_version="6"))
    got = cache.get_pv("pv")
    assert got is not None
    assert got.resource_version == "6"
    assert cache.assumed_pvs() == []


def test_check_bindings() -> None:
    pvc = make_pvc("claim", WAIT_SC.name, version="1")
    pv = make_pv("pv", WAIT_SC.name, version="1", node_affinity={HOSTNAME: ["node1"]})
    binder, _, storage = binder_with(pvc, pv)
    pod = make_pod("p", "claim")
    written = dataclasses.replace(pv, claim_ref=ClaimRef("default", "claim", pvc.uid), resource_version="2")
    binding = [BindingInfo(pvc, written)]
    assert not binder.check_bindings(pod, "node1", binding, [])  # informer has not seen the write
    storage.upsert(written)
    assert not binder.check_bindings(pod, "node1", binding, [])  # claim not bound yet
    storage.upsert(bound(pvc, "pv"))
    assert binder.check_bindings(pod, "node1", binding, [])
    storage.upsert(dataclasses.replace(written, claim_ref=None, resource_version="3"))
    with pytest.raises(BinderError, match='ClaimRef got reset for pv "pv"'):
        binder.check_bindings(pod, "node1", binding, [])
    # A provisioned claim whose selected node was reset means provisioning failed.
    dyn = make_pvc("dyn", WAIT_SC.name, annotations={ANN_SELECTED_NODE: "node1"}, version="1")
    storage.upsert(dataclasses.replace(dyn, annotations={}, resource_version="2"))
    with pytest.raises(BinderError, match='provisioning failed for PVC "dyn"'):
        binder.check_bindings(pod, "node1", [], [dyn])


def hint(resource: Resource):  # type: ignore[no-untyped-def]
    table = NodeTable()
    table.set_node(Node("node1"))
    plugin = VolumeBinding.from_profile(Handle(table=table, storage=StorageObjects()), {})
    return next(e.hint for e in plugin.events_to_register() if e.event.resource == resource)


def test_hints_csi_node() -> None:
    fn = hint(Resource.CSI_NODE)
    pod = make_pod("p", "claim")
    assert fn(pod, None, CSINode("n")) == Q
    old = CSINode("n")
    assert fn(pod, old, CSINode("n", annotations={ANN_MIGRATED_PLUGINS: "kubernetes.io/aws-ebs"})) == Q
    assert fn(pod, old, CSINode("n", resource_version="2")) == S


def test_hints_pvc() -> None:
    fn = hint(Resource.PERSISTENT_VOLUME_CLAIM)
    pod = make_pod("pod-a", "pvc-a", ephemeral=("eph",))
    assert fn(pod, None, make_pvc("pvc-a", WAIT_SC.name)) == Q
    assert fn(pod, None, make_pvc("pod-a-eph", WAIT_SC.name)) == Q
    assert fn(pod, None, make_pvc("other", WAIT_SC.name)) == S
    assert fn(pod, None, dataclasses.replace(make_pvc("pvc-a", WAIT_SC.name), namespace="x")) == S


def test_hints_storage_class() -> None:
    fn = hint(Resource.STORAGE_CLASS)
    pod = make_pod("p", "claim")
    assert fn(pod, None, WAIT_SC) == Q
    changed = dataclasses.replace(
        WAIT_SC, allowed_topologies=make_pv("x", "", node_affinity={"a": ["b"]}).node_affinity or ()
    )
    assert fn(pod, WAIT_SC, changed) == Q
    assert fn(pod, WAIT_SC, dataclasses.replace(WAIT_SC, provisioner="x")) == S


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, (100, None), Q),
        ((None, None), (100, None), Q),  # Capacity set
        ((None, 50), (None, 100), Q),  # MaximumVolumeSize increased
        ((50, None), (100, None), Q),  # Capacity increased
        ((100, 50), (100, None), Q),  # MaximumVolumeSize unset: limit 50 → 100
        ((50, 200), (100, None), S),  # MaximumVolumeSize unset: limit 200 → 100
        ((100, None), (100, None), S),
        ((100, 50), (100, 50), S),
        ((100, None), (50, None), S),
        ((100, 50), (100, 40), S),
    ],
)
def test_hints_csi_storage_capacity(
    old: tuple[int | None, int | None] | None, new: tuple[int, int | None], want: QueueingHint
) -> None:
    fn = hint(Resource.CSI_STORAGE_CAPACITY)

    def cap(values: tuple[int | None, int | None]) -> CSIStorageCapacity:
        return CSIStorageCapacity("c", capacity=values[0], maximum_volume_size=values[1])

    assert fn(make_pod("p", "claim"), None if old is None else cap(old), cap(new)) == want


def test_hints_csi_driver() -> None:
    fn = hint(Resource.CSI_DRIVER)
    pod = dataclasses.replace(make_pod("p"), volumes=(Volume("v", CSI, source_id="d"),))
    on, off = CSIDriver("d", storage_capacity=True), CSIDriver("d", storage_capacity=False)
    assert fn(pod, on, off) == Q
    assert fn(pod, on, CSIDriver("d")) == Q
    assert fn(pod, off, on) == S
    assert fn(pod, None, off) == S
    assert fn(make_pod("p"), on, off) == S
    assert fn(pod, CSIDriver("other", storage_capacity=True), CSIDriver("other")) == S


def test_storage_class_without_binding_mode_is_an_error_at_pre_filter() -> None:
    from policy_scheduler.scheduler.framework.cycle_state import CycleState
    from policy_scheduler.scheduler.framework.status import Code

    table = NodeTable()
    table.set_node(Node("node1"))
    storage = StorageObjects([StorageClass("unset", volume_binding_mode=None), make_pvc("claim", "unset")])
    plugin = VolumeBinding.from_profile(Handle(table=table, storage=storage), {})
    _, status = plugin.pre_filter(CycleState(), make_pod("p", "claim"))
    assert status.code == Code.ERROR
    assert status.message == 'VolumeBindingMode not set for StorageClass "unset"'


# binder_test.go's CSI migration fixtures: a GCE PD PV zoned by its beta labels only, and nodes
# labelled with the GCE PD CSI driver's topology key.
GKE_ZONE = "topology.gke.io/zone"
ZONE1_LABELS = {LABEL_ZONE_BETA: "us-east-1", LABEL_REGION_BETA: "us-east-1a"}
CSI_NODE_MIGRATED = CSINode("node1", annotations={ANN_MIGRATED_PLUGINS: GCE_PD_PLUGIN})
CSI_NODE_NOT_MIGRATED = CSINode("node1", annotations={ANN_MIGRATED_PLUGINS: ""})


def migration_pv(claim: PersistentVolumeClaim | None, *, migratable: bool = True) -> PersistentVolume:
    pv = make_pv("pv", WAIT_SC.name, claim=claim, version="1")
    kind = GCE_PD if migratable else ""
    return dataclasses.replace(pv, labels=ZONE1_LABELS, in_tree_kind=kind, in_tree_volume_id="test-disk")


@pytest.mark.parametrize(
    ("csi_nodes", "zone", "conflict"),
    [
        pytest.param([CSI_NODE_MIGRATED], "us-east-1", False, id="pvc-bound"),
        pytest.param([CSI_NODE_NOT_MIGRATED], "us-east-1", False, id="pvc-bound,csinode-not-migrated"),
        pytest.param([], "us-east-1", False, id="pvc-bound,missing-csinode"),
        pytest.param([CSI_NODE_MIGRATED], "us-east-2", True, id="pvc-bound,node-different-zone"),
        pytest.param([CSI_NODE_NOT_MIGRATED], "us-east-2", False, id="different-zone,csinode-not-migrated"),
    ],
)
def test_find_pod_volumes_with_csi_migration(csi_nodes: list[CSINode], zone: str, conflict: bool) -> None:
    """TestFindPodVolumesWithCSIMigration: a bound in-tree PV's affinity is checked as translated
    to CSI (topology.gke.io/zone from its beta zone label) only where the CSINode migrated it."""
    pvc = bound(make_pvc("claim", WAIT_SC.name), "pv")
    table = NodeTable()
    table.set_node(Node("node1", labels={HOSTNAME: "node1", GKE_ZONE: zone}))
    storage = StorageObjects([WAIT_SC, pvc, migration_pv(pvc), *csi_nodes])
    plugin = VolumeBinding.from_profile(Handle(table=table, storage=storage), {"bindTimeoutSeconds": 300})
    state, pod = CycleState(), make_pod("p", "claim")
    assert plugin.pre_filter(state, pod)[1] == SUCCESS
    status = plugin.filter(state, pod, np.array([0])).status_of(0)
    assert status == (
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_CONFLICT,)) if conflict else SUCCESS
    )


def test_find_pod_volumes_translates_per_node() -> None:
    """Each row uses its own CSINode: the same PV conflicts only on the migrated node."""
    pvc = bound(make_pvc("claim", WAIT_SC.name), "pv")
    table = NodeTable()
    for name in ("node1", "node2"):
        table.set_node(Node(name, labels={HOSTNAME: name, GKE_ZONE: "us-east-2"}))
    storage = StorageObjects([WAIT_SC, pvc, migration_pv(pvc), CSI_NODE_MIGRATED, CSINode("node2")])
    plugin = VolumeBinding.from_profile(Handle(table=table, storage=storage), {"bindTimeoutSeconds": 300})
    state, pod = CycleState(), make_pod("p", "claim")
    plugin.pre_filter(state, pod)
    assert plugin.filter(state, pod, np.array([0, 1])).passed.tolist() == [False, True]


def test_find_pod_volumes_translation_error_is_an_error() -> None:
    pvc = bound(make_pvc("claim", WAIT_SC.name), "pv")
    pv = dataclasses.replace(migration_pv(pvc), labels={LABEL_ZONE_BETA: "bad__zones"})
    table = NodeTable()
    table.set_node(Node("node1", labels={HOSTNAME: "node1"}))
    storage = StorageObjects([WAIT_SC, pvc, pv, CSI_NODE_MIGRATED])
    plugin = VolumeBinding.from_profile(Handle(table=table, storage=storage), {"bindTimeoutSeconds": 300})
    state, pod = CycleState(), make_pod("p", "claim")
    plugin.pre_filter(state, pod)
    assert plugin.filter(state, pod, np.array([0])).status_of(0).code == Code.ERROR


def test_a_failed_find_is_counted_as_a_predicate_stage_error_per_node() -> None:
    pvc = bound(make_pvc("claim", WAIT_SC.name), "pv")
    pv = dataclasses.replace(migration_pv(pvc), labels={LABEL_ZONE_BETA: "bad__zones"})
    table = NodeTable()
    for name in ("node1", "node2"):
        table.set_node(Node(name, labels={HOSTNAME: name}))
    failures: list[tuple[str, int]] = []
    services = ClusterServices(volume_stage_failed=lambda operation, n: failures.append((operation, n)))
    storage = StorageObjects(
        [
            WAIT_SC,
            pvc,
            pv,
            CSI_NODE_MIGRATED,
            CSINode("node2", annotations={ANN_MIGRATED_PLUGINS: GCE_PD_PLUGIN}),
        ]
    )
    handle = Handle(table=table, storage=storage, services=services)
    plugin = VolumeBinding.from_profile(handle, {"bindTimeoutSeconds": 300})
    state, pod = CycleState(), make_pod("p", "claim")
    plugin.pre_filter(state, pod)
    plugin.filter(state, pod, np.array([0, 1]))
    assert failures == [("predicate", 2)]


@pytest.mark.parametrize(
    ("csi_nodes", "zone", "migratable", "fails"),
    [
        pytest.param([CSI_NODE_MIGRATED], "us-east-1", True, False, id="binding-node-pv-same-zone"),
        pytest.param([], "us-east-1", True, False, id="binding-without-csinode"),
        pytest.param([CSI_NODE_NOT_MIGRATED], "us-east-1", True, False, id="binding-non-migrated-plugin"),
        pytest.param([CSI_NODE_MIGRATED], "us-east-2", True, True, id="binding-node-pv-in-different-zones"),
        pytest.param(
            [CSI_NODE_MIGRATED], "us-east-2", False, False, id="binding-node-pv-different-zones-migration-off"
        ),
    ],
)
def test_check_bindings_with_csi_migration(
    csi_nodes: list[CSINode], zone: str, migratable: bool, fails: bool
) -> None:
    """TestCheckBindingsWithCSIMigration (binding cases)."""
    pvc = make_pvc("claim", WAIT_SC.name, version="1")
    pv = dataclasses.replace(migration_pv(pvc, migratable=migratable), phase="Bound")
    storage = StorageObjects([pvc, pv, *csi_nodes])
    labels = {"node1": {HOSTNAME: "node1", GKE_ZONE: zone}}
    binder = VolumeBinder(AssumeCache(storage), storage, None, 600.0, labels.get)
    pod = make_pod("p", "claim")
    if fails:
        with pytest.raises(BinderError, match='pv "pv" node affinity doesn\'t match node "node1"'):
            binder.check_bindings(pod, "node1", [BindingInfo(pvc, pv)], [])
    else:
        assert not binder.check_bindings(pod, "node1", [BindingInfo(pvc, pv)], [])  # claim not bound yet


def test_check_bindings_provisioned_claim_with_csi_migration() -> None:
    """TestCheckBindingsWithCSIMigration "provisioning-pvc-bound", and its zone mismatch."""
    pvc = bound(make_pvc("claim", WAIT_SC.name, annotations={ANN_SELECTED_NODE: "node1"}, version="1"), "pv")
    storage = StorageObjects([pvc, migration_pv(pvc), CSI_NODE_MIGRATED])
    labels = {"node1": {HOSTNAME: "node1", GKE_ZONE: "us-east-1"}}
    binder = VolumeBinder(AssumeCache(storage), storage, None, 600.0, labels.get)
    assert binder.check_bindings(make_pod("p", "claim"), "node1", [], [pvc])
    labels["node1"][GKE_ZONE] = "us-east-2"
    with pytest.raises(BinderError, match="node affinity doesn't match"):
        binder.check_bindings(make_pod("p", "claim"), "node1", [], [pvc])


def test_profiles_over_one_table_share_its_assume_cache_and_another_table_has_its_own() -> None:
    pv = make_pv("pv-1", WAIT_SC.name)
    storage = StorageObjects([pv])
    table = NodeTable()
    one = VolumeBinding(Handle(table=table, storage=storage), VolumeBindingArgs())
    other_profile = VolumeBinding(Handle(table=table, storage=storage), VolumeBindingArgs())
    elsewhere = VolumeBinding(Handle(table=NodeTable(), storage=storage), VolumeBindingArgs())
    other_storage = VolumeBinding(Handle(table=table, storage=StorageObjects([pv])), VolumeBindingArgs())
    one.cache.assume_pv(pv)
    # What one profile assumed, the other profile over the same table sees: no PV assumed twice.
    assert other_profile.cache.assumed_pvs() == ["pv-1"]
    assert elsewhere.cache.assumed_pvs() == []
    assert other_storage.cache.assumed_pvs() == []
