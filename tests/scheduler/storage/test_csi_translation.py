"""In-tree → CSI translation (csi-translation-lib): names, volume handles, migration per CSINode,
and the PV's in-tree source decoded from the API."""

from __future__ import annotations

import msgspec
import pytest

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.storage_convert import pv_from_api
from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement
from policy_scheduler.scheduler.storage.csi_translation import (
    LABEL_REGION,
    LABEL_REGION_BETA,
    LABEL_ZONE,
    LABEL_ZONE_BETA,
    csi_name_from_in_tree_name,
    in_tree_plugin_name,
    is_csi_migration_on,
    is_plugin_migrated_on_node,
    pv_for_node,
    pv_volume_handle,
    translate_pv_topology,
)
from policy_scheduler.scheduler.storage.types import ANN_MIGRATED_PLUGINS, CSINode, PersistentVolume
from policy_scheduler.scheduler.storage.volumes import AWS_EBS, AZURE_DISK, AZURE_FILE, CINDER, GCE_PD


def gce(labels: dict[str, str]) -> PersistentVolume:
    return PersistentVolume("pv", labels=labels, in_tree_kind=GCE_PD, in_tree_volume_id="disk")


@pytest.mark.parametrize(
    ("pv", "handle"),
    [
        (gce({}), "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk"),
        (
            gce({"topology.kubernetes.io/zone": "us-east1-b"}),
            "projects/UNSPECIFIED/zones/us-east1-b/disks/disk",
        ),
        (
            gce({"failure-domain.beta.kubernetes.io/zone": "europe-west1-b__europe-west1-c"}),
            "projects/UNSPECIFIED/regions/europe-west1/disks/disk",
        ),
        (gce({"topology.kubernetes.io/zone": "us-east1-b__us-west1-a"}), None),  # two regions
        (PersistentVolume("pv", in_tree_kind=AWS_EBS, in_tree_volume_id="aws://us-east-1a/vol-1"), "vol-1"),
        (PersistentVolume("pv", in_tree_kind=AWS_EBS, in_tree_volume_id="aws://us-east-1a/disk-1"), None),
        (PersistentVolume("pv", in_tree_kind=AWS_EBS, in_tree_volume_id="bare"), "bare"),
        (PersistentVolume("pv", in_tree_kind=CINDER, in_tree_volume_id="c1"), "c1"),
    ],
)
def test_pv_volume_handle(pv: PersistentVolume, handle: str | None) -> None:
    assert pv_volume_handle(pv) == handle


def test_names() -> None:
    assert in_tree_plugin_name(AZURE_DISK) == "kubernetes.io/azure-disk"
    assert csi_name_from_in_tree_name("kubernetes.io/azure-disk") == "disk.csi.azure.com"
    assert csi_name_from_in_tree_name("kubernetes.io/hostpath") == ""


@pytest.mark.parametrize("portworx_needs_annotation", [True, False], ids=["v1.35", "v1.36+"])
def test_migration_is_on_per_csinode(portworx_needs_annotation: bool) -> None:
    """isCSIMigrationOn (nodevolumelimits/utils.go): v1.35 wants Portworx in the CSINode's
    migrated-plugins annotation (its gate locked on); v1.36 removed the gate and the check."""
    px, ebs = "kubernetes.io/portworx-volume", "kubernetes.io/aws-ebs"

    def on(csi_node: CSINode | None, plugin: str) -> bool:
        return is_csi_migration_on(csi_node, plugin, portworx_needs_annotation=portworx_needs_annotation)

    assert not on(None, ebs)
    assert on(CSINode("n"), ebs)
    assert on(CSINode("n"), px) is not portworx_needs_annotation
    assert on(CSINode("n", annotations={ANN_MIGRATED_PLUGINS: f"{ebs},{px}"}), px)
    assert not on(None, px)
    # Azure File and vSphere are not migrated for the scheduler's limits, annotation or not.
    azure_file = in_tree_plugin_name(AZURE_FILE)
    assert not on(CSINode("n", annotations={ANN_MIGRATED_PLUGINS: azure_file}), azure_file)


def test_pv_in_tree_source_is_decoded() -> None:
    raw = {
        "metadata": {"name": "pv"},
        "spec": {"awsElasticBlockStore": {"volumeID": "vol-9", "fsType": "ext4"}},
    }
    pv = pv_from_api(msgspec.convert(raw, st.PersistentVolume, strict=False))
    assert (pv.in_tree_kind, pv.in_tree_volume_id) == (AWS_EBS, "vol-9")
    raw = {"metadata": {"name": "pv"}, "spec": {"gcePersistentDisk": {"pdName": "d"}}}
    pv = pv_from_api(msgspec.convert(raw, st.PersistentVolume, strict=False))
    assert (pv.in_tree_kind, pv.in_tree_volume_id) == (GCE_PD, "d")
    raw = {"metadata": {"name": "pv"}, "spec": {"azureDisk": {"diskName": "x", "diskURI": "/sub/d"}}}
    assert pv_from_api(msgspec.convert(raw, st.PersistentVolume, strict=False)).in_tree_volume_id == "/sub/d"


GKE_ZONE = "topology.gke.io/zone"


def term(*requirements: tuple[str, tuple[str, ...]]) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(Requirement(k, "In", v) for k, v in requirements))


@pytest.mark.parametrize(
    ("zone_key", "region_key", "zone", "region"),
    [
        pytest.param(LABEL_ZONE, LABEL_REGION, "us-east1-a", "us-east1", id="GA zone topology to GCE CSI"),
        pytest.param(
            LABEL_ZONE_BETA, LABEL_REGION_BETA, "us-west2-b", "us-west2", id="beta topology, region to GA"
        ),
    ],
)
def test_translate_topology_from_in_tree_to_csi(
    zone_key: str, region_key: str, zone: str, region: str
) -> None:
    """TestTranslateTopologyFromInTreeToCSI."""
    pv = PersistentVolume(
        "gcepd",
        labels={LABEL_ZONE: "us-east1-a", LABEL_REGION: "us-east1"},
        node_affinity=(term((zone_key, (zone,)), (region_key, (region,))),),
    )
    assert translate_pv_topology(pv, GKE_ZONE).node_affinity == (
        term((GKE_ZONE, (zone,)), (LABEL_REGION, (region,))),
    )


def test_translate_topology_adds_zone_labels_to_every_term() -> None:
    """No zone in the affinity: the PV's zone label (multi-zone "__") is added to each term."""
    pv = PersistentVolume(
        "pv",
        labels={LABEL_ZONE_BETA: "b__a__ "},
        node_affinity=(term(("x", ("1",))), term(("y", ("2",)))),
    )
    key = "topology.ebs.csi.aws.com/zone"
    assert translate_pv_topology(pv, key).node_affinity == (
        term(("x", ("1",)), (key, ("a", "b"))),
        term(("y", ("2",)), (key, ("a", "b"))),
    )
    assert translate_pv_topology(PersistentVolume("pv", labels={LABEL_ZONE: "z"}), key).node_affinity == (
        term((key, ("z",))),
    )
    assert translate_pv_topology(PersistentVolume("pv"), key).node_affinity is None


def test_pv_for_node_translates_only_where_the_csi_node_lists_the_plugin() -> None:
    """binder.go tryTranslatePVToCSI: the binder needs the migrated-plugins annotation (unlike
    NodeVolumeLimits); Azure File and vSphere are never translated."""
    pv = gce({LABEL_ZONE: "z"})
    migrated = CSINode("n", annotations={ANN_MIGRATED_PLUGINS: "kubernetes.io/gce-pd"})
    assert pv_for_node(pv, None) is pv
    assert pv_for_node(pv, CSINode("n")) is pv
    translated = pv_for_node(pv, migrated)
    assert translated is not None
    assert translated.node_affinity == (term((GKE_ZONE, ("z",))),)
    assert pv_for_node(gce({LABEL_ZONE: "a-b-c__x-y-z"}), migrated) is None  # region of zones fails
    files = CSINode("n", annotations={ANN_MIGRATED_PLUGINS: "kubernetes.io/azure-file"})
    assert not is_plugin_migrated_on_node(files, "kubernetes.io/azure-file")
