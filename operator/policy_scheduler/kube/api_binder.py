"""The Binder the DefaultBinder plugin calls: POST pods/{name}/binding."""

from __future__ import annotations

from typing import Any

from policy_scheduler.config import DEFAULTS
from policy_scheduler.kube.binder import UnsettledBinds, bind
from policy_scheduler.kube.slow_start import SlowStart
from policy_scheduler.scheduler.model import Pod


class ApiBinder:
    def __init__(
        self,
        api: Any,
        binds_at_start: int = DEFAULTS.api.binds_at_start,
        binds_in_flight: int = DEFAULTS.api.request_connections,
    ) -> None:
        self.api = api
        # Bindings that may have gone through although they failed: the pod's next 409 is read back.
        self.unsettled = UnsettledBinds()
        # Binds wait here rather than each opening a connection of their own at start.
        self.in_flight = SlowStart(binds_at_start, binds_in_flight)

    async def bind(self, pod: Pod, node_name: str) -> None:
        async with self.in_flight.slot():
            await bind(self.api, pod.namespace, pod.name, pod.uid, node_name, unsettled=self.unsettled)
