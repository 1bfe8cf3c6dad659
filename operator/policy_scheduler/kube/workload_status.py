"""The Workload API PodGroups' scheduling condition, as kube-scheduler writes it from v1.36:
`PodGroupScheduled` (v1alpha2) or `PodGroupInitiallyScheduled` (v1beta1), True with reason
Scheduled once the gang's quorum is met, False with reason Unschedulable and the verdict
(`minCount (3) cannot be satisfied: ...`) when it cannot be met. A True condition is never
turned back to False. Batched and written only on change, as PodGroupStatusWriter does for
scheduler-plugins' PodGroups; a strategic merge patch keyed by condition type leaves the other
conditions (DisruptionTarget, other controllers') alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from policy_scheduler.apiobjects import workload_api
from policy_scheduler.kube.client import STRATEGIC_MERGE_PATCH
from policy_scheduler.kube.crstatus import flush_every, patch_status
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.scheduler.gang import PodGroupStore

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

# The condition's type by the served version.
CONDITION_TYPES: Mapping[str, str] = MappingProxyType(
    {"v1beta1": "PodGroupInitiallyScheduled", "v1alpha2": "PodGroupScheduled"}
)
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"


def pod_group_status_path(version: str, namespace: str, name: str) -> str:
    return (
        f"/apis/{workload_api.GROUP}/{version}/namespaces/{quote(namespace, safe='')}"
        f"/{workload_api.PODGROUPS}/{quote(name, safe='')}/status"
    )


class WorkloadGroupStatusWriter:
    def __init__(
        self,
        api: ApiClient,
        store: PodGroupStore,
        served_version: Callable[[], str | None],
        *,
        interval: float = DEFAULTS.status_interval,
        fence: Fence = UNFENCED,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.api = api
        self.store = store
        self.served_version = served_version  # "v1beta1", "v1alpha2" or None (no PodGroups)
        self.interval = interval
        self.fence = fence  # only the leader writes status
        self.clock = clock
        # key -> (PodGroup uid, (status, reason, message)): a PodGroup created again starts afresh.
        self._written: dict[str, tuple[str, tuple[str, str, str]]] = {}
        self.writes = 0

    def desired(self) -> dict[str, tuple[str, str, str]]:
        """(status, reason, message) per PodGroup with a verdict (v1.35's Workload groups, keyed
        workload/podGroup, have no PodGroup object to write to)."""
        found: dict[str, tuple[str, str, str]] = {}
        for key, group in list(self.store.groups.items()):
            state = self.store.states.get(key)
            if key.count("/") != 1 or state is None:
                continue
            if self._last(key, group.uid)[0] == "True":
                continue  # terminal: never back to False
            if state.message:
                found[key] = ("False", REASON_UNSCHEDULABLE, state.message)
            elif state.scheduled:
                found[key] = ("True", REASON_SCHEDULED, "")
        return found

    def _last(self, key: str, uid: str) -> tuple[str, str, str]:
        written = self._written.get(key)
        return written[1] if written is not None and written[0] == uid else ("", "", "")

    async def flush(self) -> None:
        version = self.served_version()
        condition_type = CONDITION_TYPES.get(version or "")
        if version is None or condition_type is None or not self.fence.may_act():
            return
        for key, verdict in self.desired().items():
            group = self.store.groups.get(key)
            uid = group.uid if group is not None else ""
            if self._last(key, uid) == verdict:
                continue
            namespace, _, name = key.partition("/")
            status, reason, message = verdict
            condition: dict[str, Any] = {
                "type": condition_type,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            if group is not None and group.generation:
                condition["observedGeneration"] = group.generation
            body: Any = {"conditions": [condition]}
            path = pod_group_status_path(version, namespace, name)
            outcome = await patch_status(
                self.api, path, body, f"podgroups/{key}", self.fence, content_type=STRATEGIC_MERGE_PATCH
            )
            if outcome == "gone":
                self._written.pop(key, None)
            elif outcome == "written":
                self.writes += 1
                self._written[key] = (uid, verdict)

    async def run(self) -> None:
        await flush_every(self.interval, self.flush)
