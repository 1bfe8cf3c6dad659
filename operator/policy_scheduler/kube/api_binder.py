"""The Binder the DefaultBinder plugin calls: POST pods/{name}/binding."""

from __future__ import annotations

from typing import Any

from policy_scheduler.kube.binder import UnsettledBinds, bind
from policy_scheduler.kube.fence import UNFENCED, Fence
from policy_scheduler.kube.slow_start import SlowStart
from policy_scheduler.kube.timings import DEFAULTS, ApiTimings
from policy_scheduler.scheduler.model import Pod


class ApiBinder:
    def __init__(self, api: Any, *, timings: ApiTimings = DEFAULTS.api, fence: Fence = UNFENCED) -> None:
        self.api = api
        self.fence = fence  # a binding goes out only while this replica may act as the leader
        # Bindings that may have gone through although they failed: the pod's next 409 is read back.
        self.unsettled = UnsettledBinds()
        # Binds wait here rather than each opening a connection of their own at start.
        self.in_flight = SlowStart(timings.binds_at_start, timings.request_connections)

    async def bind(self, pod: Pod, node_name: str) -> None:
        async with self.in_flight.slot():
            await bind(
                self.api,
                pod.namespace,
                pod.name,
                pod.uid,
                node_name,
                unsettled=self.unsettled,
                fence=self.fence,
            )
