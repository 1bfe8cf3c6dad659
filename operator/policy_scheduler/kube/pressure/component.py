"""Node pressure in the operator, built in one place: usage polling and the kubelet model
(monitor), and relief under EvictionPolicies (reliever). Only the leader polls and relieves."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from policy_scheduler.kube.client import CONNECTION_ERRORS, call
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.api import EvictionApi
from policy_scheduler.kube.eviction.limiter import Limiters
from policy_scheduler.kube.fence import Fence
from policy_scheduler.kube.pressure.cluster import EngineView
from policy_scheduler.kube.pressure.monitor import PressureMonitor
from policy_scheduler.kube.pressure.options import PressureOptions
from policy_scheduler.kube.pressure.relief import ReliefPolicies, Reliever
from policy_scheduler.kube.pressure.sources import Get, UsageApi
from policy_scheduler.kube.retry import Answer, RetryPolicy, with_retries
from policy_scheduler.kube.timings import AdapterTimings
from policy_scheduler.scheduler.diagnosis_recorder import Explanation
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.pressure.placement import placement_pressure

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

# A poll is retried by the next poll: within one, a failed read is tried once more only.
POLL_RETRY = RetryPolicy(initial=0.5, cap=2.0, max_attempts=2, max_retry_after=5.0)
READ_TIMEOUT = 10.0


def polling_get(api: ApiClient) -> Get:
    async def get(path: str, query: dict[str, str | int | bool]) -> Answer:
        try:
            return await with_retries(
                lambda: call(api, "GET", path, query=query, request_timeout=READ_TIMEOUT),
                POLL_RETRY,
                connection_errors=CONNECTION_ERRORS,
                what=f"GET {path}",
            )
        except CONNECTION_ERRORS as exc:
            return Answer(0, f"{type(exc).__name__}: {exc}".encode())

    return get


class NodePressure:
    def __init__(
        self,
        api: ApiClient,
        engine: Engine,
        *,
        limiters: Limiters,
        events: EventRecorder,
        policies: ReliefPolicies,
        fence: Fence,
        options: PressureOptions,
        timings: AdapterTimings,
    ) -> None:
        services = engine.base_handle.services
        self.engine = engine
        self.fence = fence
        self.usage = UsageApi(polling_get(api), kubelet_proxy=options.kubelet_proxy)
        self.reliever = Reliever(
            EvictionApi(api, retry=timings.eviction.api_retry, fence=fence),
            limiters,
            events,
            policies,
            services.node_pressure,
            fence=fence,
            namespace_labels=lambda: engine.base_handle.namespace_labels,
            in_flight_slack=timings.eviction.in_flight_slack,
        )
        self.monitor = PressureMonitor(
            self.usage,
            EngineView(engine),
            services.node_usage,
            services.node_pressure,
            options=options,
            relief=self.reliever,
            active=fence.may_act,
        )

    def start(self) -> asyncio.Task[None]:
        return asyncio.create_task(self.monitor.run(), name="node-pressure")

    async def standing(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """explain: where the pod stands in its node's eviction order, if under pressure."""
        return await self.monitor.standing(namespace, name)

    def placement(self, explanation: Explanation) -> Mapping[str, Any] | None:
        """explain: whether the pod's placement pushes its node below an eviction threshold."""
        key = explanation.key
        pod = self.engine.unassigned.get(key) or self.engine.cache.get_pod(key)
        return placement_pressure(self.engine, explanation, pod) if pod is not None else None
