"""The API adapters against a real API server: informer, binder, status patches, events."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import pytest_asyncio

from policy_scheduler.apiobjects import convert, convert_cluster, structs
from policy_scheduler.apiobjects.cluster_objects import NamespaceInfo, PriorityClassInfo
from policy_scheduler.kube import informer as inf
from policy_scheduler.kube.binder import BindError, bind
from policy_scheduler.kube.client import MERGE_PATCH, ApiError, call, make_api_client, request, request_ok
from policy_scheduler.kube.crdinstall import install_crds
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.first_lists import FirstLists, informer_first_lists
from policy_scheduler.kube.media_types import PROTOBUF_OR_JSON
from policy_scheduler.kube.paths import (
    DEVICE_TAINT_RULES,
    NAMESPACES,
    NODES,
    PDBS,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    SCHEDULING_PROFILES,
    WORKLOAD_API_PODGROUPS,
    WORKLOAD_API_WORKLOADS,
)
from policy_scheduler.kube.podstatus import set_nominated_node, set_unschedulable_condition
from policy_scheduler.kube.policy_informers import PolicyInformers
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.policy.constants import API_VERSION
from policy_scheduler.scheduler import model
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.operator import Operator
from polling import wait_until_async

NO_SCHEDULER = "kube-adapters-e2e-nobody"  # no scheduler has this name: pods stay pending


@pytest_asyncio.fixture(scope="module")
async def api(kubeconfig: Path) -> AsyncIterator[Any]:
    api_client = await make_api_client(str(kubeconfig))
    async with api_client:
        yield api_client


@pytest_asyncio.fixture(scope="module")
async def namespace(api: Any) -> AsyncIterator[str]:
    name = f"kube-adapters-{uuid.uuid4().hex[:6]}"
    await request_ok(api, "POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    yield name
    await request(api, "DELETE", f"/api/v1/namespaces/{name}")


def pod_body(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "250m"}},
                }
            ],
        },
    }


async def create_pod(api: Any, namespace: str, name: str, **labels: str) -> structs.Pod:
    data = await request_ok(
        api, "POST", f"/api/v1/namespaces/{namespace}/pods", body=pod_body(name, **labels)
    )
    return msgspec.json.decode(data, type=structs.Pod)


async def get_pod(api: Any, namespace: str, name: str) -> structs.Pod:
    data = await request_ok(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return msgspec.json.decode(data, type=structs.Pod)


async def kwok_node(api: Any) -> str:
    data = await request_ok(api, "GET", "/api/v1/nodes", query={"labelSelector": "type=kwok", "limit": 1})
    listed = msgspec.json.decode(data, type=structs.ObjectList[structs.Node])
    assert listed.items
    return listed.items[0].metadata.name


class Seen:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def add(self, obj: model.Pod | model.Node) -> None:
        self.events.append(("add", obj.name, obj.resource_version))

    def update(self, old: model.Pod | model.Node, new: model.Pod | model.Node) -> None:
        self.events.append(("update", new.name, new.resource_version))

    def delete(self, obj: model.Pod | model.Node) -> None:
        self.events.append(("delete", obj.name, obj.resource_version))

    def saw(self, kind: str, name: str) -> bool:
        return any(k == kind and n == name for k, n, _ in self.events)


async def test_pod_informer_lists_and_watches(api: Any, namespace: str) -> None:
    await create_pod(api, namespace, "before-list")
    seen = Seen()
    pods: inf.Informer[structs.Pod, model.Pod] = inf.Informer(
        api,
        PODS,
        structs.Pod,
        convert.pod_from_api_or_malformed,
        on_add=seen.add,
        on_update=seen.update,
        on_delete=seen.delete,
        on_decode_failure=convert.pod_from_decode_failure,
        field_selector=f"metadata.namespace={namespace}",
        page_size=1,  # ignored by the first list (watch cache); relists page (test below)
    )
    pods.start()
    try:
        await asyncio.wait_for(pods.has_synced.wait(), 20)
        assert f"{namespace}/before-list" in pods.store
        assert pods.store[f"{namespace}/before-list"].requests == {"cpu": 250}

        await create_pod(api, namespace, "watched")
        await wait_until_async("watched pod added", lambda: seen.saw("add", "watched"))
        await request_ok(
            api,
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/watched",
            body={"metadata": {"labels": {"touched": "yes"}}},
            content_type="application/merge-patch+json",
        )
        await wait_until_async("watched pod updated", lambda: seen.saw("update", "watched"))
        assert pods.store[f"{namespace}/watched"].labels == {"touched": "yes"}

        await request_ok(
            api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/watched", query={"gracePeriodSeconds": 0}
        )
        await wait_until_async("watched pod deleted", lambda: seen.saw("delete", "watched"))
        assert f"{namespace}/watched" not in pods.store
    finally:
        await pods.stop()


async def test_node_informer_sees_node_lifecycle(api: Any) -> None:
    seen = Seen()
    nodes: inf.Informer[structs.Node, model.Node] = inf.Informer(
        api,
        NODES,
        structs.Node,
        convert_cluster.node_from_api,
        on_add=seen.add,
        on_update=seen.update,
        on_delete=seen.delete,
    )
    nodes.start()
    name = f"adapter-node-{uuid.uuid4().hex[:6]}"
    try:
        await asyncio.wait_for(nodes.has_synced.wait(), 20)
        assert any(n.allocatable.get("cpu") for n in nodes.store.values())
        await request_ok(
            api, "POST", "/api/v1/nodes", body={"metadata": {"name": name, "labels": {"e2e": "1"}}}
        )
        await wait_until_async("node added", lambda: seen.saw("add", name))
        await request_ok(
            api,
            "PATCH",
            f"/api/v1/nodes/{name}",
            body={"spec": {"unschedulable": True}},
            content_type="application/merge-patch+json",
        )
        await wait_until_async(
            "cordon", lambda: nodes.store.get(name) is not None and nodes.store[name].unschedulable
        )
        await request_ok(api, "DELETE", f"/api/v1/nodes/{name}")
        await wait_until_async("node deleted", lambda: seen.saw("delete", name))
    finally:
        await nodes.stop()
        await request(api, "DELETE", f"/api/v1/nodes/{name}")


async def test_cluster_object_informers_sync(api: Any, namespace: str) -> None:
    namespaces: inf.Informer[structs.Namespace, NamespaceInfo] = inf.Informer(
        api, NAMESPACES, structs.Namespace, convert_cluster.namespace_from_api
    )
    classes: inf.Informer[structs.PriorityClass, PriorityClassInfo] = inf.Informer(
        api, PRIORITY_CLASSES, structs.PriorityClass, convert_cluster.priority_class_from_api
    )
    pdbs = inf.Informer(api, PDBS, structs.PodDisruptionBudget, convert_cluster.pdb_from_api)
    informers: list[Any] = [namespaces, classes, pdbs]
    for i in informers:
        i.start()
    try:
        await asyncio.wait_for(asyncio.gather(*(i.has_synced.wait() for i in informers)), 20)
        assert namespaces.store[namespace].labels["kubernetes.io/metadata.name"] == namespace
        assert classes.store["system-node-critical"].value == 2000001000
    finally:
        for i in informers:
            await i.stop()


async def test_bind(api: Any, namespace: str) -> None:
    pod = await create_pod(api, namespace, "to-bind")
    node = await kwok_node(api)
    await bind(api, namespace, "to-bind", pod.metadata.uid, node)
    assert (await get_pod(api, namespace, "to-bind")).spec.node_name == node

    with pytest.raises(BindError) as again:
        await bind(api, namespace, "to-bind", pod.metadata.uid, node)
    assert again.value.conflict

    with pytest.raises(BindError) as missing:
        await bind(api, namespace, "no-such-pod", "", node)
    assert missing.value.not_found


async def test_bind_refuses_stale_uid(api: Any, namespace: str) -> None:
    await create_pod(api, namespace, "uid-guard")
    with pytest.raises(BindError) as stale:
        await bind(api, namespace, "uid-guard", str(uuid.uuid4()), await kwok_node(api))
    assert stale.value.conflict
    assert (await get_pod(api, namespace, "uid-guard")).spec.node_name == ""


async def test_status_patches(api: Any, namespace: str) -> None:
    created = await create_pod(api, namespace, "unschedulable")
    uid = created.metadata.uid
    assert await set_unschedulable_condition(
        api, namespace, "unschedulable", reason="Unschedulable", message="0/10 nodes are available", uid=uid
    )
    pod = await get_pod(api, namespace, "unschedulable")
    condition = convert.pod_scheduled_condition(pod)
    assert condition is not None
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "Unschedulable",
        "0/10 nodes are available",
    )
    assert condition.last_transition_time is not None

    # Same verdict again: nothing to write.
    assert not await set_unschedulable_condition(
        api,
        namespace,
        "unschedulable",
        reason="Unschedulable",
        message="0/10 nodes are available",
        current=condition,
    )
    # A new message keeps the original transition time.
    assert await set_unschedulable_condition(
        api, namespace, "unschedulable", reason="SchedulerError", message="boom", current=condition
    )
    again = convert.pod_scheduled_condition(await get_pod(api, namespace, "unschedulable"))
    assert again is not None
    assert (again.reason, again.message) == ("SchedulerError", "boom")
    assert again.last_transition_time == condition.last_transition_time

    node = await kwok_node(api)
    assert await set_nominated_node(api, namespace, "unschedulable", node)
    assert (await get_pod(api, namespace, "unschedulable")).status.nominated_node_name == node
    assert await set_nominated_node(api, namespace, "unschedulable", "")
    assert (await get_pod(api, namespace, "unschedulable")).status.nominated_node_name == ""

    assert not await set_nominated_node(api, namespace, "no-such-pod", node)


class EventItem(msgspec.Struct, rename="camel"):
    reason: str
    note: str = ""
    regarding: dict[str, Any] = {}
    series: dict[str, Any] | None = None
    reporting_controller: str = ""


async def list_events(api: Any, namespace: str) -> list[EventItem]:
    data = await request_ok(api, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    return msgspec.json.decode(data, type=structs.ObjectList[EventItem]).items or []


async def test_events_are_created_and_aggregated(api: Any, namespace: str) -> None:
    pod = convert.pod_from_api(await create_pod(api, namespace, "eventful"))
    recorder = EventRecorder(
        api, instance="e2e", timings=dataclasses.replace(DEFAULTS.events, flush_interval=0.2)
    )
    recorder.start()
    try:
        for _ in range(4):
            recorder.failed_scheduling(pod, "0/10 nodes are available: 10 Insufficient cpu.")
        recorder.scheduled(ObjectRef.for_pod(pod), "node-x")

        async def aggregated() -> bool:
            events = await list_events(api, namespace)
            failed = [e for e in events if e.reason == "FailedScheduling"]
            return (
                len(failed) == 1
                and failed[0].series is not None
                and failed[0].series.get("count") == 4
                and any(e.reason == "Scheduled" for e in events)
            )

        await wait_until_async("one FailedScheduling event with series.count 4", aggregated)
        events = await list_events(api, namespace)
        scheduled = next(e for e in events if e.reason == "Scheduled")
        assert scheduled.note == f"Successfully assigned {namespace}/eventful to node-x"
        assert scheduled.regarding["uid"] == pod.uid
        assert scheduled.reporting_controller == "policy-scheduler"
        assert recorder.dropped == 0
        assert recorder.failed == 0
    finally:
        await recorder.stop()


async def test_relist_diffs_against_store(api: Any, namespace: str) -> None:
    await create_pod(api, namespace, "survivor")
    seen = Seen()
    pods: inf.Informer[structs.Pod, model.Pod] = inf.Informer(
        api,
        PODS,
        structs.Pod,
        convert.pod_from_api_or_malformed,
        on_add=seen.add,
        on_update=seen.update,
        on_delete=seen.delete,
        field_selector=f"metadata.namespace={namespace}",
    )
    await pods._list_and_sync()
    # Pretend the informer missed a deletion while disconnected (a 410 Gone forces this relist;
    # the server only answers 410 once etcd has compacted, which a test cannot wait for).
    ghost = model.Pod("ghost", namespace, resource_version="1")
    pods.store[ghost.key] = ghost
    await pods._list_and_sync()
    assert ("delete", "ghost", "1") in seen.events
    assert f"{namespace}/survivor" in pods.store
    assert pods.relists == 1


async def test_first_list_reads_the_watch_cache_relists_page(
    api: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first list is one answer whatever the page size (resourceVersion=0, as the reflector);
    a relist is a consistent read, one page per `page_size` objects through continue tokens."""
    for name in ("paged-a", "paged-b", "paged-c"):
        await create_pod(api, namespace, name)
    queries: list[dict[str, Any]] = []
    real_call = call

    async def counting_call(*args: Any, **kwargs: Any) -> Any:
        queries.append(dict(kwargs.get("query") or {}))
        return await real_call(*args, **kwargs)

    monkeypatch.setattr(inf, "call", counting_call)
    pods: inf.Informer[structs.Pod, model.Pod] = inf.Informer(
        api,
        PODS,
        structs.Pod,
        convert.pod_from_api_or_malformed,
        field_selector=f"metadata.namespace={namespace}",
        page_size=1,
    )
    await pods._list_and_sync()
    assert [q.get("resourceVersion") for q in queries] == ["0"]
    assert {f"{namespace}/paged-{x}" for x in "abc"} <= set(pods.store)
    listed = set(pods.store)
    queries.clear()
    await pods._list_and_sync()
    assert len(queries) >= 3  # one page per pod of the namespace
    assert all("resourceVersion" not in q for q in queries)
    assert all("continue" in q for q in queries[1:])
    assert set(pods.store) == listed


async def test_every_informer_of_the_operator_lists_from_the_early_requests(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start-up asks for every informer's first list early (kube.first_lists): on the real
    API server each informer takes that answer (the node list as protobuf) and asks nothing
    itself."""
    await install_crds(api)
    asked: list[str] = []
    real_call = call

    async def counting_call(*args: Any, **kwargs: Any) -> Any:
        asked.append(str(args[2]))
        return await real_call(*args, **kwargs)

    monkeypatch.setattr(inf, "call", counting_call)
    timings = DEFAULTS.informer
    lists = FirstLists(api, informer_first_lists(timings.page_size), timings.list_timeout)
    operator = Operator(api, OperatorConfig(leader_elect=False, identity="e2e-informers"), lists)
    refused: set[tuple[str, int]] = set()
    workload_api = {*WORKLOAD_API_PODGROUPS, WORKLOAD_API_WORKLOADS}  # listed after discovery
    try:
        for informer in [*operator.informers(), *operator.policy_informers.informers()]:
            if informer.path in workload_api:
                continue
            try:
                await informer._list_and_sync()
            except ApiError as exc:
                refused.add((informer.path, exc.status))
    finally:
        await lists.close()
    # What a cluster may not serve: that CRD, DeviceTaintRules before v1.37. The operator
    # starts neither there (discovery).
    may_be_unserved = {PODGROUPS, DEVICE_TAINT_RULES}
    assert all(status == 404 and path in may_be_unserved for path, status in refused), refused
    assert asked == []
    nodes = operator.cluster.nodes
    assert nodes.list_format.accept == PROTOBUF_OR_JSON
    assert any(n.allocatable.get("cpu") for n in nodes.store.values())
    assert nodes.resource_version
    assert operator.cluster.pods.resource_version
    assert operator.cluster.namespaces.store  # the small lists too


async def test_policy_informers_deliver_every_change_to_the_handlers(api: Any) -> None:
    """SchedulingProfiles reach the handler as the API's JSON (what the stores read): added,
    modified (a spec change, a status write), deleted."""
    await install_crds(api)
    name = f"informed-{uuid.uuid4().hex[:6]}"
    profile = {
        "apiVersion": API_VERSION,
        "kind": "SchedulingProfile",
        "metadata": {"name": name, "labels": {"e2e": "informed"}},
        "spec": {"schedulerName": NO_SCHEDULER},
    }
    await request_ok(api, "POST", SCHEDULING_PROFILES, body=profile)
    seen: list[tuple[str, dict[str, Any]]] = []
    policies = PolicyInformers(
        api,
        on_profile=lambda kind, body: seen.append((kind, body)),
        on_eviction_policy=lambda _kind, _body: None,
        timings=DEFAULTS.informer,
    )
    running = asyncio.create_task(policies.run())
    try:
        await asyncio.wait_for(policies.wait_synced(), 30)
        kind, body = next((k, b) for k, b in seen if b["metadata"]["name"] == name)
        assert kind == "ADDED"
        meta = body["metadata"]
        assert (meta["generation"], meta["labels"]) == (1, {"e2e": "informed"})
        assert body["spec"]["schedulerName"] == NO_SCHEDULER  # with the CRD's defaults
        assert meta["uid"]
        assert meta["creationTimestamp"].endswith("Z")
        for subresource, patch in (
            ("", {"spec": {"percentageOfNodesToScore": 40}}),
            ("/status", {"status": {"observedGeneration": 2}}),
        ):
            path = f"{SCHEDULING_PROFILES}/{name}{subresource}"
            await request_ok(api, "PATCH", path, body=patch, content_type=MERGE_PATCH)
        await request_ok(api, "DELETE", f"{SCHEDULING_PROFILES}/{name}")

        def changes() -> list[tuple[str, int, Any]] | None:
            mine = [
                (k, b["metadata"]["generation"], (b.get("status") or {}).get("observedGeneration"))
                for k, b in seen
                if b["metadata"]["name"] == name
            ]
            return mine if mine[-1][0] == "DELETED" else None

        assert await wait_until_async("the profile's changes", changes) == [
            ("ADDED", 1, None),
            ("MODIFIED", 2, None),
            ("MODIFIED", 2, 2),  # the status write
            ("DELETED", 2, 2),
        ]
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await request(api, "DELETE", f"{SCHEDULING_PROFILES}/{name}")
