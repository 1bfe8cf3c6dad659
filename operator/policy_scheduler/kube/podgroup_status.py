"""Batched PodGroup status writes: phase, counts, scheduleStartTime and why the group waits.

Like crstatus.StatusWriter, at most one merge patch per group per interval and only when the
status changed; the statuses come from the scheduler's PodGroupStore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects.podgroup_api import PLURAL
from policy_scheduler.apiobjects.podgroups import pod_group_status
from policy_scheduler.kube.crstatus import flush_every, patch_status
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.kube.paths import podgroup_status_path
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.scheduler.gang import PodGroupStore
from policy_scheduler.scheduler.nodetable import NodeTable

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


class PodGroupStatusWriter:
    def __init__(
        self,
        api: ApiClient,
        store: PodGroupStore,
        table: NodeTable,
        *,
        interval: float = DEFAULTS.status_interval,
        fence: Fence = UNFENCED,
    ) -> None:
        self.api = api
        self.store = store
        self.table = table
        self.interval = interval
        self.fence = fence  # only the leader writes status
        self._written: dict[str, dict[str, Any]] = {}
        self.writes = 0

    def desired(self) -> dict[str, dict[str, Any]]:
        statuses: dict[str, dict[str, Any]] = {}
        for key, group in list(self.store.groups.items()):
            members = [
                pod
                for pod_key, row in self.store.assigned(key).items()
                if (pod := self.table.pods[row].get(pod_key)) is not None
            ]
            statuses[key] = pod_group_status(group, self.store.state(key), members)
        return statuses

    async def flush(self) -> None:
        if not self.fence.may_act():
            return
        for key, status in self.desired().items():
            if self._written.get(key) == status:
                continue
            namespace, _, name = key.partition("/")
            path = podgroup_status_path(namespace, name)
            outcome = await patch_status(self.api, path, status, f"{PLURAL}/{key}", self.fence)
            if outcome == "gone":
                self._written.pop(key, None)
            elif outcome == "written":
                self.writes += 1
                self._written[key] = status

    async def run(self) -> None:
        await flush_every(self.interval, self.flush)
