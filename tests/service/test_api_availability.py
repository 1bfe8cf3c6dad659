"""API discovery's answer applied: informers of unserved collections off (synced, empty), the
plugins told why, an API served again started and its pods retried."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from policy_scheduler.controllers.profile_store import ProfileRecord
from policy_scheduler.kube import paths
from policy_scheduler.kube.client import ApiError
from policy_scheduler.kube.discovery import ServedApis
from policy_scheduler.kube.informer import Informer
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.framework import unserved
from policy_scheduler.scheduler.framework.unserved import UnservedApis
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.service.api_availability import ApiAvailability, condition_fields
from tests.no_api import NO_API

WATCHED = [paths.PODS, paths.CSI_NODES, paths.RESOURCE_SLICES, paths.RESOURCE_CLAIMS, paths.PODGROUPS]


class Started(Informer[Any, Any]):
    def start(self) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(asyncio.sleep(0))


def make() -> tuple[ApiAvailability, list[Informer[Any, Any]], UnservedApis, list[str]]:
    informers: list[Informer[Any, Any]] = [Started(NO_API, path, object, lambda x: x) for path in WATCHED]
    apis = UnservedApis()
    retried: list[str] = []
    availability = ApiAvailability(
        NO_API, lambda: informers, apis, on_served=lambda: retried.append("retry"), adopt=lambda _tasks: None
    )
    return availability, informers, apis, retried


async def test_unserved_collections_are_off_and_the_plugins_know_why() -> None:
    availability, informers, apis, retried = make()
    started = availability.apply(ServedApis(frozenset({paths.CSI_NODES})))
    assert started == []
    off = {i.path for i in informers if not i.served}
    assert off == {paths.RESOURCE_SLICES, paths.RESOURCE_CLAIMS, paths.PODGROUPS}
    for informer in informers:
        if not informer.served:
            assert informer.has_synced.is_set()
            assert informer.current.is_set()
            assert informer.reached(10**9)  # a new leader's catch-up does not wait for it
    dra = apis.reason(unserved.DRA)
    assert dra is not None
    assert dra.startswith("resource.k8s.io/v1 is not served by the API server: DynamicResources is off")
    assert "kubectl apply -k manifests/" in (apis.reason(unserved.PODGROUPS) or "")
    assert apis.reason(unserved.CSI_STORAGE_CAPACITIES) is not None  # not watched here, not discovered
    assert [w.api for w in availability.affecting({"DynamicResources", "NodeResourcesFit"})] == [unserved.DRA]
    assert availability.affecting({"NodeResourcesFit"}) == []
    assert retried == []


async def test_an_api_served_later_is_started_and_its_pods_retried() -> None:
    availability, informers, apis, retried = make()
    availability.apply(ServedApis(frozenset({paths.CSI_NODES, paths.RESOURCE_SLICES, paths.RESOURCE_CLAIMS})))
    assert apis.reason(unserved.PODGROUPS) is not None
    started = availability.apply(ServedApis(frozenset({paths.CSI_NODES, *WATCHED[2:]})))
    assert len(started) == 1
    await asyncio.gather(*started)
    assert all(i.served for i in informers)
    assert apis.reason(unserved.PODGROUPS) is None
    assert retried == ["retry"]


def test_the_condition_names_every_missing_api() -> None:
    availability, _, _, _ = make()
    availability.apply(ServedApis(frozenset()))
    ok, reason, message = condition_fields(availability.affecting({"DynamicResources", "VolumeBinding"}))
    assert (ok, reason) == (False, "APINotServed")
    assert "resource.k8s.io/v1 is not served" in message
    assert "storage.k8s.io/v1 csistoragecapacities is not served" in message
    assert condition_fields([])[0] is True


async def test_the_first_discovery_retries_until_the_api_server_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    availability, _, _, _ = make()
    answers: list[ServedApis | Exception] = [
        ConnectionError("refused"),
        ApiError(503, "", "", 3.0),
        ServedApis(frozenset()),
    ]
    slept: list[float] = []

    async def discover() -> ServedApis:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(availability, "discover", discover)
    assert await availability.first_discovery(sleep) == ServedApis(frozenset())
    assert len(slept) == 2
    assert slept[1] >= 3.0  # the server's Retry-After


async def test_an_api_that_goes_away_stops_its_informer_and_empties_its_store() -> None:
    availability, informers, apis, _ = make()
    availability.apply(ServedApis(frozenset(WATCHED[1:])))
    slices = next(i for i in informers if i.path == paths.RESOURCE_SLICES)
    gone: list[object] = []
    slices.on_delete = gone.append
    slices.store["s1"] = "slice"
    availability.apply(ServedApis(frozenset({paths.CSI_NODES})))
    assert not slices.served
    assert slices.store == {}
    assert gone == ["slice"]
    assert apis.reason(unserved.DRA) is not None


def test_an_affected_profile_gets_the_condition_and_one_event_per_api() -> None:
    availability, _, _, _ = make()
    availability.apply(ServedApis(frozenset({paths.CSI_NODES})))
    record = ProfileRecord("gpu", "uid-1", 3, "")
    resolved = resolve_profile(ProfileConfig(scheduler_name="gpu"), implemented_plugin_names())
    record.last.accept(3, {}, resolved)
    told: list[str] = []
    for _ in range(2):  # the status loop runs again and again
        status: dict[str, Any] = {"conditions": []}
        availability.report(record, status, lambda _record, note: told.append(note))
    (found,) = status["conditions"]
    assert (found["type"], found["status"], found["reason"]) == ("APIsServed", "False", "APINotServed")
    assert found["observedGeneration"] == 3
    assert "resource.k8s.io/v1 is not served" in found["message"]
    assert len(told) == 2  # DRA and CSIStorageCapacity (default plugins), once each
    assert any(note.startswith("resource.k8s.io/v1 is not served") for note in told)


async def test_the_workload_api_is_served_when_one_of_its_versions_is() -> None:
    """A server serves one version of scheduling.k8s.io's pod groups at most: that one informer
    starts, the others stay off, and GangScheduling is on; with none, its pods are told why."""
    workload_paths = [*paths.WORKLOAD_API_PODGROUPS, paths.WORKLOAD_API_WORKLOADS]
    informers: list[Informer[Any, Any]] = [
        Started(NO_API, path, object, lambda x: x) for path in workload_paths
    ]
    apis = UnservedApis()
    availability = ApiAvailability(
        NO_API, lambda: informers, apis, on_served=lambda: None, adopt=lambda _t: None
    )
    availability.apply(ServedApis(frozenset()))
    reason = apis.reason(unserved.WORKLOAD_API) or ""
    assert reason.startswith(
        "scheduling.k8s.io Workload API is not served by the API server: GangScheduling is off"
    )
    assert "--feature-gates=GenericWorkload=true" in reason
    assert [w.api for w in availability.affecting({"GangScheduling"})] == [unserved.WORKLOAD_API]
    v1beta1 = "/apis/scheduling.k8s.io/v1beta1/podgroups"
    started = availability.apply(ServedApis(frozenset({v1beta1})))
    await asyncio.gather(*started)
    assert apis.reason(unserved.WORKLOAD_API) is None
    assert [i.path for i in informers if i.served] == [v1beta1]
