"""In-tree → CSI translation (csi-translation-lib): names, volume handles, migration per CSINode,
and the PV's in-tree source decoded from the API."""

from __future__ import annotations

import msgspec
import pytest

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.storage_convert import pv_from_api
from policy_scheduler.scheduler.storage.csi_translation import (
    csi_name_from_in_tree_name,
    in_tree_plugin_name,
    is_csi_migration_on,
    pv_volume_handle,
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


def test_migration_is_on_per_csinode() -> None:
    px, ebs = "kubernetes.io/portworx-volume", "kubernetes.io/aws-ebs"
    assert not is_csi_migration_on(None, ebs)
    assert is_csi_migration_on(CSINode("n"), ebs)
    assert not is_csi_migration_on(CSINode("n"), px)
    assert is_csi_migration_on(CSINode("n", annotations={ANN_MIGRATED_PLUGINS: f"{ebs},{px}"}), px)
    assert not is_csi_migration_on(CSINode("n", annotations={ANN_MIGRATED_PLUGINS: px}), px, portworx=False)
    # Azure File and vSphere are not migrated for the scheduler's limits, annotation or not.
    azure_file = in_tree_plugin_name(AZURE_FILE)
    assert not is_csi_migration_on(CSINode("n", annotations={ANN_MIGRATED_PLUGINS: azure_file}), azure_file)


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
