"""Decoding pod spec.volumes and spec.resourceClaims into the model."""

from __future__ import annotations

from policy_scheduler.apiobjects.convert import pod_from_dict
from policy_scheduler.scheduler.storage import volumes
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim, Volume


def test_volume_sources_and_resource_claims_decode() -> None:
    pod = pod_from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim-a", "readOnly": True}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "inline", "csi": {"driver": "ebs.csi.aws.com"}},
                    {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}},
                    {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1"}},
                    {"name": "iscsi", "iscsi": {"iqn": "iqn.x", "targetPortal": "t", "lun": 0}},
                    {"name": "rbd", "rbd": {"monitors": ["m1"], "pool": "p", "image": "i"}},
                    {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "/subs/d", "readOnly": True}},
                    {"name": "cinder", "cinder": {"volumeID": "c-1"}},
                    {"name": "vsphere", "vsphereVolume": {"volumePath": "[ds] v.vmdk"}},
                    {"name": "px", "portworxVolume": {"volumeID": "px-1"}},
                    {"name": "cfg", "configMap": {"name": "c"}},
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
            },
        }
    )
    assert pod.volumes == (
        Volume("data", volumes.PVC, claim_name="claim-a", read_only=True),
        Volume("scratch", volumes.EPHEMERAL),
        Volume("inline", volumes.CSI, source_id="ebs.csi.aws.com"),
        Volume("pd", volumes.GCE_PD, source_id="disk-1", read_only=True),
        Volume("ebs", volumes.AWS_EBS, source_id="vol-1"),
        Volume("iscsi", volumes.ISCSI, source_id="iqn.x"),
        Volume("rbd", volumes.RBD, source_id="p/i", rbd_monitors=("m1",)),
        Volume("az", volumes.AZURE_DISK, source_id="/subs/d", read_only=True),
        Volume("cinder", volumes.CINDER, source_id="c-1"),
        Volume("vsphere", volumes.VSPHERE, source_id="[ds] v.vmdk"),
        Volume("px", volumes.PORTWORX, source_id="px-1"),
        Volume("cfg", local=True),  # counts as the pod's local storage for the kubelet
    )
    assert pod.volumes[1].claim_for(pod.name) == "p-scratch"
    assert pod.resource_claims == (PodResourceClaim("gpu", "", "gpu-template"),)


def test_pod_without_volumes_has_none() -> None:
    pod = pod_from_dict({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert pod.volumes == ()
    assert pod.resource_claims == ()
