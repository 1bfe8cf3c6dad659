"""PreFilter side of the volume binder: sort a pod's claims into bound, delayed and immediate."""

from __future__ import annotations

from dataclasses import dataclass, field

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.volumebinding.assume_cache import AssumeCache
from policy_scheduler.scheduler.storage.claims import claim_names, volume_is_for_pod
from policy_scheduler.scheduler.storage.errors import pvc_not_found
from policy_scheduler.scheduler.storage.lister import StorageLister
from policy_scheduler.scheduler.storage.types import (
    CLAIM_LOST,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
)


class BinderError(Exception):
    """An error (not a rejection): the framework reports it as Status Error."""


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    # storage class → PVs of that class, for the delayed claims
    delay_pvs: dict[str, list[PersistentVolume]] = field(default_factory=dict)


def pod_has_pvcs(pod: Pod, lister: StorageLister) -> tuple[bool, str | None]:
    """VolumeBinding.podHasPVCs: (has any, rejection message)."""
    has = False
    for name, ephemeral in claim_names(pod):
        has = True
        pvc = lister.get_pvc(pod.namespace, name)
        if pvc is None:
            if ephemeral:
                return (
                    has,
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"',
                )
            return has, pvc_not_found(name)
        if pvc.phase == CLAIM_LOST:
            return (
                has,
                f'persistentvolumeclaim "{pvc.name}" bound to non-existent '
                f'persistentvolume "{pvc.volume_name}"',
            )
        if pvc.deletion_timestamp is not None:
            return has, f'persistentvolumeclaim "{pvc.name}" is being deleted'
        if ephemeral and (message := volume_is_for_pod(pod, pvc)) is not None:
            return has, message
    return has, None


def is_delay_binding_mode(pvc: PersistentVolumeClaim, lister: StorageLister) -> bool:
    """volume.IsDelayBindingMode."""
    class_name = pvc.class_name
    if not class_name:
        return False
    storage_class = lister.get_storage_class(class_name)
    if storage_class is None:
        return False
    if storage_class.volume_binding_mode is None:
        raise BinderError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
    return storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def get_pod_volume_claims(pod: Pod, cache: AssumeCache, lister: StorageLister) -> PodVolumeClaims:
    """volumeBinder.GetPodVolumeClaims (reads claims through the assume cache)."""
    claims = PodVolumeClaims()
    for name, ephemeral in claim_names(pod):
        pvc = cache.get_pvc(pod.namespace, name)
        if pvc is None:
            raise BinderError(f'error getting PVC "{pod.namespace}/{name}": not found')
        if ephemeral and (message := volume_is_for_pod(pod, pvc)) is not None:
            raise BinderError(message)
        if pvc.fully_bound:
            claims.bound.append(pvc)
        elif is_delay_binding_mode(pvc, lister) and not pvc.volume_name:
            claims.delay_binding.append(pvc)
        else:
            claims.immediate.append(pvc)
    for pvc in claims.delay_binding:
        claims.delay_pvs[pvc.class_name] = cache.list_pvs(pvc.class_name)
    return claims


def all_bound(pod: Pod, cache: AssumeCache) -> bool:
    """arePodVolumesBound: every claim fully bound (a missing claim counts as unbound)."""
    for name, _ in claim_names(pod):
        pvc = cache.get_pvc(pod.namespace, name)
        if pvc is None or not pvc.fully_bound:
            return False
    return True
