"""The informers that feed the scheduler: Pods, Nodes, Namespaces, PodDisruptionBudgets, the
owners PodTopologySpread's default selectors need (Services and controllers), the storage
objects the volume plugins read and, when given, DRA's ResourceSlices, DeviceClasses and
ResourceClaims."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import pod_from_api_or_malformed, pod_from_decode_failure
from policy_scheduler.apiobjects.convert_cluster import namespace_from_api, node_from_api, pdb_from_api
from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.apiobjects.node_protobuf import decode_node_list
from policy_scheduler.kube.dra_informers import DraInformers
from policy_scheduler.kube.first_lists import NODE_LIST_ACCEPT
from policy_scheduler.kube.informer import OWNER_RESOURCES, Informer, ListFormat
from policy_scheduler.kube.paths import NAMESPACES, NODES, PDBS, POD_FIELD_SELECTOR, PODS
from policy_scheduler.kube.storage_informers import StorageChanges, storage_informers
from policy_scheduler.kube.timings import InformerTimings
from policy_scheduler.scheduler.event_sinks import ClusterSink
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


class ClusterInformers:
    def __init__(
        self,
        api: ApiClient,
        sink: ClusterSink,
        *,
        on_pod_deleted: Callable[[Pod], None],
        owners: DefaultSelectorIndex,
        pdbs: Informer[structs.PodDisruptionBudget, Any],
        timings: InformerTimings,
        storage_changes: StorageChanges | None = None,
        dra: DraInformers | None = None,
    ) -> None:
        self.sink = sink
        self.dra = dra
        # StorageChanges wakes VolumeBinding's PreBind waits (kube/volume_api.py).
        self.storage_changes = storage_changes or StorageChanges()
        self.storage = storage_informers(api, sink, self.storage_changes, timings)
        self.pdbs = pdbs
        self.owners: list[Informer[Any, Any]] = [
            Informer(
                api,
                path,
                item_type,
                convert,
                on_add=owners.add,
                on_update=owners.update,
                on_delete=owners.delete,
                timings=timings,
            )
            for path, item_type, convert in OWNER_RESOURCES
        ]
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.pods: Informer[structs.Pod, Pod] = Informer(
            api,
            PODS,
            structs.Pod,
            pod_from_api_or_malformed,
            on_add=sink.pod_added,
            on_update=sink.pod_updated,
            on_delete=on_pod_deleted,
            on_decode_failure=pod_from_decode_failure,
            field_selector=POD_FIELD_SELECTOR,
            timings=timings,
        )
        self.nodes = Informer(
            api,
            NODES,
            structs.Node,
            node_from_api,
            on_add=sink.node_added,
            on_update=sink.node_updated,
            on_delete=sink.node_deleted,
            timings=timings,
            list_format=ListFormat(NODE_LIST_ACCEPT, decode_node_list),
        )
        self.namespaces = Informer(
            api,
            NAMESPACES,
            structs.Namespace,
            namespace_from_api,
            on_add=self._namespace_changed,
            on_update=lambda _o, n: self._namespace_changed(n),
            on_delete=self._namespace_deleted,
            timings=timings,
        )

    @staticmethod
    def pdb_informer(api: ApiClient, timings: InformerTimings) -> Informer[structs.PodDisruptionBudget, Any]:
        """Built first: preemption's PDB lister reads it before the scheduler exists."""
        return Informer(api, PDBS, structs.PodDisruptionBudget, pdb_from_api, timings=timings)

    def _namespace_changed(self, ns: Any) -> None:
        self.namespace_labels[ns.name] = dict(ns.labels)
        self.sink.set_namespace_labels(self.namespace_labels)

    def _namespace_deleted(self, ns: Any) -> None:
        self.namespace_labels.pop(ns.name, None)
        self.sink.set_namespace_labels(self.namespace_labels)

    def informers(self, *, pdbs: bool = True) -> list[Informer[Any, Any]]:
        core: list[Informer[Any, Any]] = [self.namespaces, self.nodes, self.pods]
        dra = self.dra.all() if self.dra is not None else []
        return [*core, *([self.pdbs] if pdbs else []), *self.owners, *self.storage, *dra]

    def synced(self) -> bool:
        """What /readyz and profile status report (PDBs only matter to preemption)."""
        return all(i.has_synced.is_set() for i in self.informers(pdbs=False))

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.has_synced.wait() for i in self.informers()))

    def essential(self) -> list[Informer[Any, Any]]:
        """The informers a new leader must not be behind on: pods (where the previous leader bound
        and evicted), nodes (their capacity) and, with DRA, claims (the devices it allocated)."""
        return [self.pods, self.nodes, *([self.dra.claims] if self.dra is not None else [])]

    async def catch_up(self, version: int) -> None:
        """Until every watch is open and each essential informer holds every change up to revision
        `version` (0: only the former)."""
        await self.wait_current()
        if version:
            await asyncio.gather(*(informer.catch_up(version) for informer in self.essential()))
            await self.wait_current()  # a catch-up may have reopened a watch

    async def wait_current(self) -> None:
        """Until every informer follows the server again (listed, or its watch open)."""
        behind = [i.path for i in self.informers() if not i.current.is_set()]
        if behind:
            log.info("waiting for watches to reconnect", extra={"resources": behind})
        await asyncio.gather(*(i.current.wait() for i in self.informers()))
