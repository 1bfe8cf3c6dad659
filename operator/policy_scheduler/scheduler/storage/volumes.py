"""Pod-side volume and resource-claim references (spec.volumes, spec.resourceClaims).

Imports nothing from the core so that model.Pod can use these types.
"""

from __future__ import annotations

from dataclasses import dataclass

# Volume source kinds the plugins look at; every other source decodes as OTHER.
PVC = "persistentVolumeClaim"
EPHEMERAL = "ephemeral"
CSI = "csi"
GCE_PD = "gcePersistentDisk"
AWS_EBS = "awsElasticBlockStore"
ISCSI = "iscsi"
RBD = "rbd"
# More in-tree sources a PV or an inline pod volume may have (CSI migration).
AZURE_DISK = "azureDisk"
AZURE_FILE = "azureFile"
CINDER = "cinder"
VSPHERE = "vsphereVolume"
PORTWORX = "portworxVolume"
IMAGE = "image"  # an OCI image as a volume (ImageLocality counts it)
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Volume:
    name: str
    kind: str = OTHER
    claim_name: str = ""  # persistentVolumeClaim.claimName
    read_only: bool = False
    # csi: the driver; gcePersistentDisk: pdName; awsElasticBlockStore, cinder, portworxVolume:
    # volumeID; azureDisk: diskURI; vsphereVolume: volumePath; iscsi: iqn; rbd: "pool/image";
    # image: the image reference.
    source_id: str = ""
    rbd_monitors: tuple[str, ...] = ()
    # hostPath, emptyDir not in memory, configMap or gitRepo: storage on the node's own disk,
    # which the kubelet counts in the pod's disk usage (eviction's localVolumeNames).
    local: bool = False

    def claim_for(self, pod_name: str) -> str:
        """The PVC this volume uses ("" when none): ephemeral.VolumeClaimName for ephemeral ones."""
        if self.kind == PVC:
            return self.claim_name
        if self.kind == EPHEMERAL:
            return f"{pod_name}-{self.name}"
        return ""


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    name: str
    resource_claim_name: str = ""
    resource_claim_template_name: str = ""
