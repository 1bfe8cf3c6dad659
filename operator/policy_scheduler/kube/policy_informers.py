"""SchedulingProfiles and EvictionPolicies: the one way they reach the operator's stores.

An informer per kind calls its handler with (event type, object body) on every change: ADDED and
MODIFIED with the object, DELETED with the last one seen. Its first list holds exactly what
exists, so a profile deleted while the operator was down is never applied, and a relist tells
the handler what went away in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from policy_scheduler.apiobjects.policy_objects import PolicyObject, policy_body
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.paths import EVICTION_POLICIES, SCHEDULING_PROFILES
from policy_scheduler.kube.timings import InformerTimings

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

# fn(event type, the object's body)
EventHandler = Callable[[str, dict[str, Any]], None]


def policy_informer(
    api: ApiClient, path: str, handler: EventHandler, timings: InformerTimings
) -> Informer[PolicyObject, dict[str, Any]]:
    return Informer(
        api,
        path,
        PolicyObject,
        policy_body,
        on_add=lambda body: handler("ADDED", body),
        on_update=lambda _old, body: handler("MODIFIED", body),
        on_delete=lambda body: handler("DELETED", body),
        timings=timings,
    )


class PolicyInformers:
    """Both informers list at once; what the profile informer brings before the EvictionPolicies
    are listed is held back until then, because a profile applied before its policy would report
    preemption off, and on again a moment later."""

    def __init__(
        self,
        api: ApiClient,
        *,
        on_profile: EventHandler,
        on_eviction_policy: EventHandler,
        timings: InformerTimings,
    ) -> None:
        self.on_profile = on_profile
        self._held: list[tuple[str, dict[str, Any]]] | None = []  # None once delivered
        self.eviction_policies = policy_informer(api, EVICTION_POLICIES, on_eviction_policy, timings)
        self.profiles = policy_informer(api, SCHEDULING_PROFILES, self._profile_event, timings)
        self.delivered = asyncio.Event()  # both listed, and every event delivered

    def informers(self) -> list[Informer[PolicyObject, dict[str, Any]]]:
        return [self.eviction_policies, self.profiles]

    def _profile_event(self, kind: str, body: dict[str, Any]) -> None:
        if self._held is not None and not self.eviction_policies.has_synced.is_set():
            self._held.append((kind, body))
            return
        self._release()
        self.on_profile(kind, body)

    def _release(self) -> None:
        held, self._held = self._held or [], None
        for kind, body in held:
            self.on_profile(kind, body)

    async def run(self) -> None:
        tasks = [informer.start() for informer in self.informers()]
        try:
            await self.eviction_policies.has_synced.wait()
            self._release()
            await self.profiles.has_synced.wait()
            self.delivered.set()
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def wait_synced(self) -> None:
        await self.delivered.wait()
