"""The Workload API's informers (scheduling.k8s.io): PodGroups (v1beta1 on v1.37, v1alpha2 on
v1.36) and v1.35's Workloads (v1alpha1), feeding the gang core's second store.

One informer per version; a server serves at most one of them (and none without the
GenericWorkload gate), and API discovery starts only the served one (service/api_availability.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects.workloads import (
    PodGroupObject,
    WorkloadGroups,
    WorkloadObject,
    pod_group_from_api,
    workload_from_api,
)
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.paths import WORKLOAD_API_PODGROUPS, WORKLOAD_API_WORKLOADS
from policy_scheduler.kube.timings import InformerTimings
from policy_scheduler.scheduler.gang import PodGroup

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


class WorkloadInformers:
    def __init__(
        self,
        api: ApiClient,
        *,
        on_set: Callable[[PodGroup], None],
        on_delete: Callable[[str], None],
        timings: InformerTimings,
    ) -> None:
        self.on_set = on_set
        self.on_delete = on_delete
        self.pod_groups: list[Informer[PodGroupObject, PodGroup]] = [
            Informer(
                api,
                path,
                PodGroupObject,
                pod_group_from_api,
                on_add=on_set,
                on_update=lambda _old, new: on_set(new),
                on_delete=lambda group: on_delete(group.key),
                timings=timings,
            )
            for path in WORKLOAD_API_PODGROUPS
        ]
        self.workloads: Informer[WorkloadObject, WorkloadGroups] = Informer(
            api,
            WORKLOAD_API_WORKLOADS,
            WorkloadObject,
            workload_from_api,
            on_add=lambda new: self._workload_changed(None, new),
            on_update=self._workload_changed,
            on_delete=lambda old: self._workload_changed(old, None),
            timings=timings,
        )

    def _workload_changed(self, old: WorkloadGroups | None, new: WorkloadGroups | None) -> None:
        """A v1.35 Workload's podGroups entries are its groups: entries gone are deleted."""
        kept = {group.key for group in new.groups} if new is not None else set()
        for group in old.groups if old is not None else ():
            if group.key not in kept:
                self.on_delete(group.key)
        for group in new.groups if new is not None else ():
            self.on_set(group)

    def served_pod_group_version(self) -> str | None:
        """The scheduling.k8s.io version whose PodGroups are watched (None: none served)."""
        for informer in self.pod_groups:
            if informer.served:
                return informer.path.split("/")[3]
        return None

    def informers(self) -> list[Informer[Any, Any]]:
        return [*self.pod_groups, self.workloads]
