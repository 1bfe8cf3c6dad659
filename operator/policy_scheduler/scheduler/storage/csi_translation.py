"""In-tree → CSI translation (k8s.io/csi-translation-lib v0.35.4), reduced to what the volume
limits need: plugin and driver names, and the CSI volume handle a translated volume gets; and
for VolumeBinding, the node affinity a translated PV gets (CSI topology keys)."""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import urlparse

from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement
from policy_scheduler.scheduler.storage.types import ANN_MIGRATED_PLUGINS, CSINode, PersistentVolume
from policy_scheduler.scheduler.storage.volumes import (
    AWS_EBS,
    AZURE_DISK,
    AZURE_FILE,
    CINDER,
    GCE_PD,
    PORTWORX,
    VSPHERE,
    Volume,
)

GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
AZURE_FILE_PLUGIN = "kubernetes.io/azure-file"
CINDER_PLUGIN = "kubernetes.io/cinder"
VSPHERE_PLUGIN = "kubernetes.io/vsphere-volume"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"

# volume source kind → in-tree plugin name; in-tree plugin name → CSI driver.
_PLUGIN_OF_SOURCE = {
    GCE_PD: GCE_PD_PLUGIN,
    AWS_EBS: AWS_EBS_PLUGIN,
    AZURE_DISK: AZURE_DISK_PLUGIN,
    AZURE_FILE: AZURE_FILE_PLUGIN,
    CINDER: CINDER_PLUGIN,
    VSPHERE: VSPHERE_PLUGIN,
    PORTWORX: PORTWORX_PLUGIN,
}
_DRIVER_OF_PLUGIN = {
    GCE_PD_PLUGIN: "pd.csi.storage.gke.io",
    AWS_EBS_PLUGIN: "ebs.csi.aws.com",
    AZURE_DISK_PLUGIN: "disk.csi.azure.com",
    AZURE_FILE_PLUGIN: "file.csi.azure.com",
    CINDER_PLUGIN: "cinder.csi.openstack.org",
    VSPHERE_PLUGIN: "csi.vsphere.vmware.com",
    PORTWORX_PLUGIN: "pxd.portworx.com",
}
# Migration the scheduler takes as on whenever the node has a CSINode (utils.go isCSIMigrationOn).
_ALWAYS_MIGRATED = frozenset({AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN})

LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_REGION = "topology.kubernetes.io/region"
# The plugins whose TranslateInTreePVToCSI calls translateTopologyFromInTreeToCSI, with its key.
_TOPOLOGY_KEY_OF_SOURCE = {
    GCE_PD: "topology.gke.io/zone",
    AWS_EBS: "topology.ebs.csi.aws.com/zone",
    CINDER: "topology.cinder.csi.openstack.org/zone",
}
UNSPECIFIED = "UNSPECIFIED"
_AWS_VOLUME = re.compile(r"^vol-[^/]*$")


def is_pv_migratable(pv: PersistentVolume) -> bool:
    return pv.in_tree_kind in _PLUGIN_OF_SOURCE


def is_inline_migratable(volume: Volume) -> bool:
    return volume.kind in _PLUGIN_OF_SOURCE


def in_tree_plugin_name(kind: str) -> str:
    """GetInTreePluginNameFromSpec for a PV's or inline volume's source kind ("" when none)."""
    return _PLUGIN_OF_SOURCE.get(kind, "")


def is_migratable_in_tree_plugin(name: str) -> bool:
    return name in _DRIVER_OF_PLUGIN


def csi_name_from_in_tree_name(name: str) -> str:
    """GetCSINameFromInTreeName ("" for a plugin that is not migratable)."""
    return _DRIVER_OF_PLUGIN.get(name, "")


def is_csi_migration_on(csi_node: CSINode | None, plugin: str, *, portworx_needs_annotation: bool) -> bool:
    """NodeVolumeLimits' isCSIMigrationOn: AWS EBS, GCE PD, Azure Disk, Cinder and Portworx
    whenever the node has a CSINode, Portworx (v1.35, its gate locked on) only when the CSINode
    lists it as migrated; others never."""
    if csi_node is None or not plugin:
        return False
    if plugin in _ALWAYS_MIGRATED:
        return True
    if plugin != PORTWORX_PLUGIN:
        return False
    if not portworx_needs_annotation:
        return True
    migrated = csi_node.annotations.get(ANN_MIGRATED_PLUGINS, "")
    return plugin in (migrated.split(",") if migrated else ())


def ebs_volume_id(kubernetes_id: str) -> str | None:
    """KubernetesVolumeIDToEBSVolumeID: aws://zone/vol-x → vol-x; None when malformed."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    try:
        url = urlparse(kubernetes_id)
    except ValueError:
        return None
    aws_id = url.path.strip("/")
    return aws_id if url.scheme == "aws" and _AWS_VOLUME.match(aws_id) else None


def _gce_region(zones: list[str]) -> str | None:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            return None
        regions.add("-".join(parts[:2]))
    return regions.pop() if len(regions) == 1 else None


def pv_volume_handle(pv: PersistentVolume) -> str | None:
    """The CSI volumeHandle TranslateInTreePVToCSI gives the PV (None when it fails or the
    plugin's translation is not modelled)."""
    kind, volume_id = pv.in_tree_kind, pv.in_tree_volume_id
    if kind == GCE_PD:
        zones_label = pv.labels.get(LABEL_ZONE_BETA) or pv.labels.get(LABEL_ZONE, "")
        zones = zones_label.split("__")
        if len(zones) == 1 and zones[0]:
            return f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{volume_id}"
        if len(zones) > 1:
            region = _gce_region(zones)
            return None if region is None else f"projects/{UNSPECIFIED}/regions/{region}/disks/{volume_id}"
        return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{volume_id}"
    if kind == AWS_EBS:
        return ebs_volume_id(volume_id)
    if kind in (AZURE_DISK, CINDER, VSPHERE, PORTWORX):
        return volume_id  # diskURI, volumeID, volumePath, volumeID
    return None


def inline_volume_handle(volume: Volume) -> str | None:
    """The CSI volumeHandle TranslateInTreeInlineVolumeToCSI gives an inline volume."""
    if volume.kind == GCE_PD:
        return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{volume.source_id}"
    if volume.kind == AWS_EBS:
        return ebs_volume_id(volume.source_id)
    if volume.kind in (AZURE_DISK, CINDER, VSPHERE, PORTWORX):
        return volume.source_id  # diskURI, volumeID, volumePath, volumeID as the handle
    return None


def is_plugin_migrated_on_node(csi_node: CSINode | None, plugin: str) -> bool:
    """The binder's isCSIMigrationOnForPlugin and isPluginMigratedToCSIOnNode: the plugin's
    migration is on and the node's CSINode lists it in its migrated-plugins annotation."""
    if csi_node is None or plugin not in _ALWAYS_MIGRATED | {PORTWORX_PLUGIN}:
        return False
    migrated = csi_node.annotations.get(ANN_MIGRATED_PLUGINS, "")
    return plugin in (migrated.split(",") if migrated else ())


def _has_key(terms: tuple[NodeSelectorTerm, ...] | None, key: str) -> bool:
    return any(r.key == key for term in terms or () for r in term.match_expressions)


def _values(terms: tuple[NodeSelectorTerm, ...] | None, key: str) -> list[str]:
    return sorted(
        {v for term in terms or () for r in term.match_expressions if r.key == key for v in r.values}
    )


def _replace_key(terms: tuple[NodeSelectorTerm, ...], old: str, new: str) -> tuple[NodeSelectorTerm, ...]:
    return tuple(
        dataclasses.replace(
            term,
            match_expressions=tuple(
                dataclasses.replace(r, key=new) if r.key == old else r for r in term.match_expressions
            ),
        )
        for term in terms
    )


def _topology_labels(pv: PersistentVolume) -> tuple[str, str]:
    """getTopologyLabel: the zone and region keys the PV uses (affinity first, then labels; GA
    by default)."""
    if _has_key(pv.node_affinity, LABEL_ZONE):
        return LABEL_ZONE, LABEL_REGION
    if _has_key(pv.node_affinity, LABEL_ZONE_BETA):
        return LABEL_ZONE_BETA, LABEL_REGION_BETA
    if LABEL_ZONE in pv.labels:
        return LABEL_ZONE, LABEL_REGION
    if LABEL_ZONE_BETA in pv.labels:
        return LABEL_ZONE_BETA, LABEL_REGION_BETA
    return LABEL_ZONE, LABEL_REGION


def translate_pv_topology(pv: PersistentVolume, csi_key: str) -> PersistentVolume:
    """translateTopologyFromInTreeToCSI: the zone key in the node affinity becomes csi_key (or the
    PV's zone label is added as csi_key In zones to every term); a beta region key becomes GA."""
    zone_label, region_label = _topology_labels(pv)
    terms = pv.node_affinity
    if terms and _values(terms, zone_label):
        terms = _replace_key(terms, zone_label, csi_key)
    elif zone_label in pv.labels:
        zones = tuple(sorted({z.strip() for z in pv.labels[zone_label].split("__") if z.strip()}))
        if zones:  # addTopology's "no valid zones" error is ignored upstream
            topology = Requirement(csi_key, "In", zones)
            terms = tuple(
                dataclasses.replace(t, match_expressions=(*t.match_expressions, topology))
                for t in (terms or (NodeSelectorTerm(),))
            )
    if region_label == LABEL_REGION_BETA and terms and _values(terms, region_label):
        terms = _replace_key(terms, region_label, LABEL_REGION)
    return pv if terms is pv.node_affinity else dataclasses.replace(pv, node_affinity=terms)


def pv_for_node(pv: PersistentVolume, csi_node: CSINode | None) -> PersistentVolume | None:
    """The binder's tryTranslatePVToCSI: the PV as translated to CSI when its plugin is migrated
    on the node, else the PV itself; None when the translation fails."""
    if not is_pv_migratable(pv) or not is_plugin_migrated_on_node(
        csi_node, in_tree_plugin_name(pv.in_tree_kind)
    ):
        return pv
    return translate_pv_to_csi(pv)


def translate_pv_to_csi(pv: PersistentVolume) -> PersistentVolume | None:
    """TranslateInTreePVToCSI as far as scheduling sees it: the node affinity (None when the
    translation fails)."""
    if pv_volume_handle(pv) is None:
        return None
    csi_key = _TOPOLOGY_KEY_OF_SOURCE.get(pv.in_tree_kind)
    return pv if csi_key is None else translate_pv_topology(pv, csi_key)
