"""Pod → PVC helpers shared by the volume plugins (component-helpers storage/ephemeral, volume)."""

from __future__ import annotations

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.storage.types import PersistentVolumeClaim
from policy_scheduler.scheduler.storage.volumes import EPHEMERAL, PVC


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: an error message when the PVC is not the pod's ephemeral claim."""
    controller = next((r for r in pvc.owner_references if r.controller), None)
    if pvc.namespace != pod.namespace or controller is None or controller.uid != pod.uid:
        return (
            f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} "
            "(pod is not owner)"
        )
    return None


def claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """(claim name, is ephemeral) of every PVC-backed volume, in spec order."""
    out: list[tuple[str, bool]] = []
    for volume in pod.volumes:
        name = volume.claim_for(pod.name)
        if volume.kind in (PVC, EPHEMERAL):
            out.append((name, volume.kind == EPHEMERAL))
    return out
