"""Reserve/Unreserve/PreBind side of the volume binder: assume, revert, write and wait.

The API writes go through the handle's `VolumeBindingAPI` (storage/api.py). The wait for the
PV controller re-checks the lister whenever `wait_for_change` returns, until everything is bound
or `bindTimeoutSeconds` pass.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.volumebinding.assume_cache import AssumeCache
from policy_scheduler.scheduler.plugins.volumebinding.claims import BinderError, all_bound
from policy_scheduler.scheduler.plugins.volumebinding.matching import (
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    pv_affinity_matches,
)
from policy_scheduler.scheduler.storage.api import VolumeBindingAPI
from policy_scheduler.scheduler.storage.csi_translation import pv_for_node
from policy_scheduler.scheduler.storage.lister import StorageLister
from policy_scheduler.scheduler.storage.types import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    version_int,
)


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """volume.GetBindVolumeToClaim: (the PV with claimRef and bound-by-controller set, dirty)."""
    ref = pv.claim_ref
    bound = (
        ref is not None
        and ref.name == pvc.name
        and ref.namespace == pvc.namespace
        and (not ref.uid or ref.uid == pvc.uid)
    )
    new, dirty = pv, False
    if ref is None or (ref.name, ref.namespace, ref.uid) != (pvc.name, pvc.namespace, pvc.uid):
        new = dataclasses.replace(new, claim_ref=ClaimRef(pvc.namespace, pvc.name, pvc.uid))
        dirty = True
    if not bound and ANN_BOUND_BY_CONTROLLER not in new.annotations:
        new = dataclasses.replace(new, annotations={**new.annotations, ANN_BOUND_BY_CONTROLLER: "yes"})
        dirty = True
    return new, dirty


def _check_pv_fits(
    pv: PersistentVolume,
    csi_node: CSINode | None,
    labels: dict[str, str],
    node_name: str,
    translate_context: str = "",
) -> None:
    """checkBindings' test of a PV against the node: translated to CSI where migrated, its node
    affinity must match. `translate_context` prefixes the translation error as upstream does."""
    translated = pv_for_node(pv, csi_node)
    if translated is None:
        raise BinderError(f'{translate_context}could not translate pv "{pv.name}"')
    if not pv_affinity_matches(translated, labels):
        raise BinderError(f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}"')


class VolumeBinder:
    def __init__(
        self,
        cache: AssumeCache,
        lister: StorageLister,
        api: VolumeBindingAPI | None,
        bind_timeout: float,
        node_labels: Callable[[str], dict[str, str] | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache = cache
        self.lister = lister
        self.api = api
        self.bind_timeout = bind_timeout
        self.node_labels = node_labels
        self.clock = clock

    def assume(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """AssumePodVolumes: record the bindings in the assume cache; True when all were bound."""
        if all_bound(pod, self.cache):
            return True
        bindings: list[BindingInfo] = []
        provisions: list[DynamicProvision] = []
        try:
            for binding in volumes.static_bindings:
                new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
                if dirty:
                    self.cache.assume_pv(new_pv)
                bindings.append(BindingInfo(binding.pvc, new_pv))
            for provision in volumes.dynamic_provisions:
                claim = dataclasses.replace(
                    provision.pvc, annotations={**provision.pvc.annotations, ANN_SELECTED_NODE: node_name}
                )
                self.cache.assume_pvc(claim)
                provisions.append(DynamicProvision(claim))
        except Exception:
            self.revert(PodVolumes(bindings, provisions))
            raise
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert(self, volumes: PodVolumes) -> None:
        """RevertAssumedPodVolumes."""
        for binding in volumes.static_bindings:
            self.cache.restore_pv(binding.pv.name)
        for provision in volumes.dynamic_provisions:
            self.cache.restore_pvc(provision.pvc.key)

    async def bind(self, pod: Pod, node_name: str, volumes: PodVolumes) -> None:
        """BindPodVolumes: write the PVs and claims, then wait for the PV controller."""
        if self.api is None:
            raise BinderError("no volume binding API configured")
        bindings = list(volumes.static_bindings)
        claims = [p.pvc for p in volumes.dynamic_provisions]
        done_pvs = done_pvcs = 0
        try:
            for i, binding in enumerate(bindings):
                bindings[i] = BindingInfo(binding.pvc, await self.api.update_pv(binding.pv))
                done_pvs += 1
            for i, claim in enumerate(claims):
                claims[i] = await self.api.update_pvc(claim)
                done_pvcs += 1
        finally:
            for binding in bindings[done_pvs:]:
                self.cache.restore_pv(binding.pv.name)
            for claim in claims[done_pvcs:]:
                self.cache.restore_pvc(claim.key)
        deadline = self.clock() + self.bind_timeout
        while True:
            remaining = deadline - self.clock()
            await self.api.wait_for_change(max_seconds=max(remaining, 0.0))
            if self.check_bindings(pod, node_name, bindings, claims):
                return
            if self.clock() >= deadline:
                raise BinderError("binding volumes: context deadline exceeded")

    def check_bindings(
        self, pod: Pod, node_name: str, bindings: list[BindingInfo], claims: list[PersistentVolumeClaim]
    ) -> bool:
        """volumeBinder.checkBindings against the API objects (not the assumed ones)."""
        labels = self.node_labels(node_name)
        if labels is None:
            raise BinderError(f'failed to get node "{node_name}": not found')
        csi_node = self.lister.get_csi_node(node_name)
        for binding in bindings:
            pv = self.lister.get_pv(binding.pv.name)
            pvc = self.lister.get_pvc(binding.pvc.namespace, binding.pvc.name)
            if pv is None or pvc is None:
                raise BinderError("failed to check binding: not found")
            if version_int(binding.pv.resource_version) > version_int(pv.resource_version):
                return False
            _check_pv_fits(pv, csi_node, labels, node_name, "failed to translate pv to csi: ")
            if pv.claim_ref is None or not pv.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not pvc.fully_bound:
                return False
        for claim in claims:
            pvc = self.lister.get_pvc(claim.namespace, claim.name)
            if pvc is None:
                raise BinderError("failed to check provisioning pvc: not found")
            if version_int(claim.resource_version) > version_int(pvc.resource_version):
                return False
            if pvc.annotations.get(ANN_SELECTED_NODE) != node_name:
                raise BinderError(f'provisioning failed for PVC "{pvc.name}"')
            if pvc.volume_name:
                pv = self.lister.get_pv(pvc.volume_name)
                if pv is None:
                    return False
                _check_pv_fits(pv, csi_node, labels, node_name)
            if not pvc.fully_bound:
                return False
        return True
