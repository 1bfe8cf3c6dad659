"""The Binder the DefaultBinder plugin calls: POST pods/{name}/binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy_scheduler.kube.binder import UnsettledBinds, bind
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient


class ApiBinder:
    def __init__(self, api: ApiClient, *, fence: Fence = UNFENCED) -> None:
        self.api = api
        self.fence = fence  # a binding goes out only while this replica may act as the leader
        # Bindings that may have gone through although they failed: the pod's next 409 is read back.
        self.unsettled = UnsettledBinds()

    async def bind(self, pod: Pod, node_name: str) -> None:
        await bind(
            self.api,
            pod.namespace,
            pod.name,
            pod.uid,
            node_name,
            unsettled=self.unsettled,
            fence=self.fence,
        )
