"""What the operator does when the cluster does not serve an API it watches.

kube/discovery.py says which collections are served. For each API that is not: its informers are
not started (they would retry a 404 for ever and keep /readyz at 503), the plugins that read it
are off (scheduler/framework/unserved.py: the pods that need it wait with a reason naming the
API), a warning is logged once, and every SchedulingProfile using one of those plugins gets an
Event and an APIsServed condition naming the API. Discovery runs again every `interval`, so an
API that appears later (a CRD installed, an upgraded API server) is picked up without a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from policy_scheduler.controllers.profile_store import ProfileRecord
from policy_scheduler.kube import paths
from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiClient, ApiError
from policy_scheduler.kube.discovery import ServedApis, discover
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.retry import Backoff, RetryPolicy
from policy_scheduler.policy.conditions import condition_dict
from policy_scheduler.scheduler.framework import unserved
from policy_scheduler.scheduler.framework.unserved import UnservedApis

log = logging.getLogger(__name__)

CONDITION_APIS_SERVED = "APIsServed"
REASON_NOT_SERVED = "APINotServed"
REDISCOVERY_INTERVAL = 60.0
# What a discovery may fail with and try again later: an API answer, no answer, an odd body.
DISCOVERY_ERRORS: tuple[type[BaseException], ...] = (ApiError, ValueError, *CONNECTION_ERRORS)
PODGROUP_INSTALL = "install it with `kubectl apply -k manifests/` or the Helm chart (charts/policy-scheduler)"


@dataclass(frozen=True, slots=True)
class WatchedApi:
    api: str  # as a user names it (scheduler/framework/unserved.py)
    collections: tuple[str, ...]
    plugins: tuple[str, ...]  # off while the API is missing
    consequence: str
    # The API is there when any one collection is served (versions of which a server has one).
    any_collection: bool = False

    def missing_from(self, served: ServedApis) -> bool:
        missing = served.missing(self.collections)
        return len(missing) == len(self.collections) if self.any_collection else bool(missing)

    def reason(self) -> str:
        return f"{self.api} is not served by the API server: {self.consequence}"


WATCHED_APIS = (
    WatchedApi(
        unserved.DRA,
        (paths.DEVICE_CLASSES, paths.RESOURCE_SLICES, paths.RESOURCE_CLAIMS),
        ("DynamicResources",),
        "DynamicResources is off; pods with resource claims wait until it is served",
    ),
    WatchedApi(
        unserved.CSI_STORAGE_CAPACITIES,
        (paths.CSI_STORAGE_CAPACITIES,),
        ("VolumeBinding",),
        "VolumeBinding cannot check storage capacity; claims whose CSI driver asks for it "
        "(storageCapacity: true) wait until it is served",
    ),
    WatchedApi(
        unserved.VOLUME_ATTACHMENTS,
        (paths.VOLUME_ATTACHMENTS,),
        (),
        "NodeVolumeLimits counts the volumes of pods only (without the API no attachment exists)",
    ),
    WatchedApi(
        unserved.PODGROUPS,
        (paths.PODGROUPS,),
        ("Coscheduling",),
        f"the PodGroup CRD is not installed; gang pods wait for it: {PODGROUP_INSTALL}",
    ),
    WatchedApi(
        unserved.WORKLOAD_API,
        (*paths.WORKLOAD_API_PODGROUPS, paths.WORKLOAD_API_WORKLOADS),
        ("GangScheduling",),
        "GangScheduling is off; pods of a pod group (spec.schedulingGroup, or v1.35's workloadRef) wait "
        "until it is served (the API server needs --feature-gates=GenericWorkload=true and "
        "--runtime-config=scheduling.k8s.io/v1beta1=true on v1.37, v1alpha2 on v1.36, v1alpha1 on v1.35)",
        any_collection=True,
    ),
)


class ApiAvailability:
    """Applies discovery's answer to the informers and the plugins, and reports it."""

    def __init__(
        self,
        api: ApiClient,
        informers: Callable[[], Sequence[Informer[Any, Any]]],
        unserved_apis: UnservedApis,
        *,
        on_served: Callable[[], None],
        adopt: Callable[[list[asyncio.Task[None]]], None],
        interval: float = REDISCOVERY_INTERVAL,
    ) -> None:
        self.api = api
        self.informers = informers
        self.unserved = unserved_apis
        self.on_served = on_served  # an API came back: pods that waited for it may go on
        self.adopt = adopt  # the tasks of informers started later (the owner stops them)
        self.interval = interval
        self.missing: list[WatchedApi] = []
        self._reported: set[tuple[str, str]] = set()  # (profile uid, api) told in an Event

    async def discover(self) -> ServedApis:
        return await discover(self.api, [informer.path for informer in self.informers()])

    async def first_discovery(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> ServedApis:
        """Discovery at start, retried with backoff until the API server answers (as the
        informers would retry their lists)."""
        backoff = Backoff(RetryPolicy())
        while True:
            try:
                return await self.discover()
            except DISCOVERY_ERRORS as exc:
                delay = backoff.next(exc.retry_after if isinstance(exc, ApiError) else None)
                log.warning(
                    "API discovery failed; retrying", extra={"error": repr(exc), "retry_in": round(delay, 2)}
                )
                await sleep(delay)

    def apply(self, served: ServedApis) -> list[asyncio.Task[None]]:
        """Informers of unserved collections off, those served again started (their tasks are
        returned), the plugins told; a warning for each API newly missing."""
        missing = [w for w in WATCHED_APIS if w.missing_from(served)]
        started: list[asyncio.Task[None]] = []
        for informer in self.informers():
            if not served.serves(informer.path):
                if informer.served:
                    informer.not_served()
            elif not informer.served:
                informer.served = True
                started.append(informer.start())
        for watched in missing:
            if watched not in self.missing:
                log.warning(
                    "API not served; the plugins that need it are off",
                    extra={"api": watched.api, "plugins": list(watched.plugins), "reason": watched.reason()},
                )
        for watched in self.missing:
            if watched not in missing:
                log.info("API served again", extra={"api": watched.api})
                self._reported = {key for key in self._reported if key[1] != watched.api}
        came_back = any(w not in missing for w in self.missing)
        self.missing = missing
        self.unserved.set({w.api: w.reason() for w in missing})
        if came_back:
            self.on_served()
        return started

    async def run(self) -> None:
        """Discovery again every `interval`: what was missing may be served now (and the other way
        round, for what was not started yet)."""
        while True:
            await asyncio.sleep(self.interval)
            try:
                served = await self.discover()
            except DISCOVERY_ERRORS as exc:
                log.warning("API discovery failed; retrying", extra={"error": repr(exc)})
                continue
            self.adopt(self.apply(served))

    def report(
        self, record: ProfileRecord, status: dict[str, Any], event: Callable[[ProfileRecord, str], None]
    ) -> None:
        """Add the APIsServed condition to an accepted profile's `status`, and call `event` the
        first time one of its plugins' APIs is found missing."""
        if record.accepted is None:
            return
        plugins = {ref.name for refs in record.accepted.points.values() for ref in refs}
        missing = self.affecting(plugins)
        ok, reason, message = condition_fields(missing)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status["conditions"].append(
            condition_dict(
                record.transitions, CONDITION_APIS_SERVED, str(ok), reason, message, record.generation, now
            )
        )
        for watched in missing:
            if (record.uid, watched.api) not in self._reported:
                self._reported.add((record.uid, watched.api))
                event(record, watched.reason())

    def affecting(self, plugins: Iterable[str]) -> list[WatchedApi]:
        """The missing APIs that turn off one of `plugins` (a profile's)."""
        enabled = set(plugins)
        return [w for w in self.missing if enabled & set(w.plugins)]


def condition_fields(missing: Sequence[WatchedApi]) -> tuple[bool, str, str]:
    """(ok, reason, message) of a profile's APIsServed condition."""
    if not missing:
        return True, "AllServed", "every API the profile's plugins read is served"
    return False, REASON_NOT_SERVED, "; ".join(w.reason() for w in missing)
