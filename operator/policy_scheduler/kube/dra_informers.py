"""Informers for ResourceSlices, DeviceClasses, ResourceClaims and DeviceTaintRules (resource.k8s.io/v1).

They keep the DraStore the DynamicResources plugin reads up to date and tell the Engine, whose
queue then runs the plugin's hints (a new slice or a deallocated claim may make pods schedulable).
DeviceTaintRules are served from v1.37 only; where they are not, discovery leaves their informer
off. A rule's change reaches the queue as a ResourceSlice update, as upstream's slice tracker
reports the slices it patches.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects import dra as api_dra
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.paths import DEVICE_CLASSES, DEVICE_TAINT_RULES, RESOURCE_CLAIMS, RESOURCE_SLICES
from policy_scheduler.kube.timings import InformerTimings
from policy_scheduler.scheduler.dra.model import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.event_sinks import DraSink
from policy_scheduler.scheduler.framework.events import Resource

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


class DraInformers:
    def __init__(self, api: ApiClient, store: DraStore, sink: DraSink, timings: InformerTimings) -> None:
        self.store = store
        self.sink = sink
        self.slices: Informer[api_dra.ResourceSlice, ResourceSlice] = Informer(
            api,
            RESOURCE_SLICES,
            api_dra.ResourceSlice,
            api_dra.slice_from_api,
            on_add=lambda s: self._slice(None, s),
            on_update=self._slice,
            on_delete=lambda s: self._slice(s, None),
            timings=timings,
        )
        self.classes: Informer[api_dra.DeviceClass, DeviceClass] = Informer(
            api,
            DEVICE_CLASSES,
            api_dra.DeviceClass,
            api_dra.class_from_api,
            on_add=lambda c: self._class(None, c),
            on_update=self._class,
            on_delete=lambda c: self._class(c, None),
            timings=timings,
        )
        self.claims: Informer[api_dra.ResourceClaim, ResourceClaim] = Informer(
            api,
            RESOURCE_CLAIMS,
            api_dra.ResourceClaim,
            api_dra.claim_from_api,
            on_add=lambda c: self._claim(None, c),
            on_update=self._claim,
            on_delete=lambda c: self._claim(c, None),
            timings=timings,
        )

        self.taint_rules: Informer[api_dra.DeviceTaintRule, DeviceTaintRule] = Informer(
            api,
            DEVICE_TAINT_RULES,
            api_dra.DeviceTaintRule,
            api_dra.taint_rule_from_api,
            on_add=lambda r: self._taint_rule(None, r),
            on_update=self._taint_rule,
            on_delete=lambda r: self._taint_rule(r, None),
            timings=timings,
        )

    def _taint_rule(self, old: DeviceTaintRule | None, new: DeviceTaintRule | None) -> None:
        if new is not None:
            self.store.upsert_taint_rule(new)
        elif old is not None:
            self.store.delete_taint_rule(old.name)
        rule = new or old
        self.sink.dra_changed(Resource.RESOURCE_SLICE, rule, rule)

    def _slice(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        if new is not None:
            self.store.upsert_slice(new)
        elif old is not None:
            self.store.delete_slice(old.name)
        self.sink.dra_changed(Resource.RESOURCE_SLICE, old, new)

    def _class(self, old: DeviceClass | None, new: DeviceClass | None) -> None:
        if new is not None:
            self.store.upsert_class(new)
        elif old is not None:
            self.store.delete_class(old.name)
        self.sink.dra_changed(Resource.DEVICE_CLASS, old, new)

    def _claim(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        if new is not None:
            self.store.upsert_claim(new)
        elif old is not None:
            self.store.delete_claim(old.namespace, old.name)
        self.sink.dra_changed(Resource.RESOURCE_CLAIM, old, new)

    def all(self) -> list[Informer[Any, Any]]:
        return [self.classes, self.slices, self.claims, self.taint_rules]

    def start(self) -> list[asyncio.Task[None]]:
        return [i.start() for i in self.all()]
