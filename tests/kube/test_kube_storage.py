"""The operator's storage adapters without a server: informer conversion and callbacks, the
VolumeBindingAPI's conditional patches, 409 handling and the informer-driven wait."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest

from policy_scheduler.apiobjects import storage_structs as st
from policy_scheduler.apiobjects.storage_convert import volume_attachment_from_api
from policy_scheduler.kube import volume_api
from policy_scheduler.kube.client import MERGE_PATCH, ApiError
from policy_scheduler.kube.retry import Answer, RetryPolicy
from policy_scheduler.kube.storage_informers import STORAGE_RESOURCES, StorageChanges, storage_informers
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.kube.volume_api import KubeVolumeAPI
from policy_scheduler.scheduler.storage.lister import StorageObject
from policy_scheduler.scheduler.storage.types import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    VolumeAttachment,
)
from policy_scheduler.simulate.live_snapshot import collections
from policy_scheduler.simulate.scenario import Scenario
from tests.no_api import NO_API

PV_JSON = {
    "metadata": {"name": "pv1", "resourceVersion": "12", "annotations": {ANN_BOUND_BY_CONTROLLER: "yes"}},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "claimRef": {"namespace": "ns", "name": "c1", "uid": "u1"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                        ]
                    }
                ]
            }
        },
    },
    "status": {"phase": "Available"},
}


class Sink:
    def __init__(self) -> None:
        self.changes: list[tuple[StorageObject | None, StorageObject | None]] = []

    def storage_changed(self, old: StorageObject | None, new: StorageObject | None) -> None:
        self.changes.append((old, new))


def test_informers_cover_every_kind_and_report_changes() -> None:
    kinds = {item.__name__ for _, item, _ in STORAGE_RESOURCES}
    assert kinds == {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
    }

    async def go() -> None:
        sink, changes = Sink(), StorageChanges()
        informers = storage_informers(NO_API, sink, changes, DEFAULTS.informer)
        csinodes = next(i for i in informers if i.path.endswith("/csinodes"))
        waiter = asyncio.create_task(changes.wait(5.0))
        await asyncio.sleep(0)
        node = {
            "metadata": {"name": "n1", "resourceVersion": "3"},
            "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 2}}]},
        }
        csinodes._handle_line(json.dumps({"type": "ADDED", "object": node}).encode())
        await asyncio.wait_for(waiter, 1.0)  # woken by the change, not the 5 s bound
        csinodes._handle_line(json.dumps({"type": "DELETED", "object": node}).encode())
        (old, new), (gone, none) = sink.changes
        assert old is None
        assert isinstance(new, CSINode)
        assert new.drivers[0].allocatable_count == 2
        assert gone == new
        assert none is None

    asyncio.run(go())


def test_volume_attachment_keeps_attacher_node_and_pv() -> None:
    path, item_type, _ = next(r for r in STORAGE_RESOURCES if r[0].endswith("/volumeattachments"))
    assert path == "/apis/storage.k8s.io/v1/volumeattachments"
    assert item_type is st.VolumeAttachment

    def convert(raw: dict[str, Any]) -> VolumeAttachment:
        return volume_attachment_from_api(msgspec.convert(raw, st.VolumeAttachment, strict=False))

    spec = {"attacher": "ebs.csi.aws.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}
    raw = {"metadata": {"name": "va1", "resourceVersion": "4"}, "spec": spec}
    va = convert(raw)
    assert va == VolumeAttachment("va1", "ebs.csi.aws.com", "n1", "pv1", "4")
    inline = {"metadata": {"name": "va2"}, "spec": {**spec, "source": {"inlineVolumeSpec": {}}}}
    assert convert(inline).pv_name == ""


def test_wait_returns_after_its_bound_without_a_change() -> None:
    async def go() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await StorageChanges().wait(0.01)
        return loop.time() - start

    assert asyncio.run(go()) < 1.0


Calls = list[tuple[str, str, dict[str, Any], str | None]]


def fake_call(answers: list[Answer], calls: Calls) -> Any:
    async def call(
        _api: Any, method: str, path: str, *, body: Any = None, content_type: str | None = None, **_: Any
    ) -> Answer:
        calls.append((method, path, body, content_type))
        return answers.pop(0)

    return call


def test_update_pv_is_a_conditional_merge_patch_of_claim_ref(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Calls = []
    monkeypatch.setattr(volume_api, "call", fake_call([Answer(200, json.dumps(PV_JSON).encode())], calls))
    api = KubeVolumeAPI(NO_API, StorageChanges())
    pv = PersistentVolume(
        "pv1",
        claim_ref=ClaimRef("ns", "c1", "u1"),
        annotations={ANN_BOUND_BY_CONTROLLER: "yes"},
        resource_version="11",
    )
    stored = asyncio.run(api.update_pv(pv))
    method, path, body, content_type = calls[0]
    assert (method, path, content_type) == ("PATCH", "/api/v1/persistentvolumes/pv1", MERGE_PATCH)
    assert body["metadata"] == {"resourceVersion": "11", "annotations": {ANN_BOUND_BY_CONTROLLER: "yes"}}
    assert body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "ns",
        "name": "c1",
        "uid": "u1",
    }
    assert stored.resource_version == "12"
    assert stored.capacity == 10 * 1024**3
    assert stored.claim_ref == ClaimRef("ns", "c1", "u1")
    assert stored.node_affinity is not None


def test_conflict_fails_at_once_and_transient_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    conflict = {
        "kind": "Status",
        "code": 409,
        "reason": "Conflict",
        "message": 'Operation cannot be fulfilled on persistentvolumeclaims "c1": the object has been modified',
    }
    claim_json = {"metadata": {"name": "c1", "namespace": "ns", "resourceVersion": "8"}}
    calls: Calls = []
    answers = [
        Answer(409, json.dumps(conflict).encode()),
        Answer(503, b""),
        Answer(200, json.dumps(claim_json).encode()),
    ]
    monkeypatch.setattr(volume_api, "call", fake_call(answers, calls))
    api = KubeVolumeAPI(NO_API, StorageChanges(), retry=RetryPolicy(initial=0.0, max_attempts=3))
    claim = PersistentVolumeClaim("c1", "ns", annotations={ANN_SELECTED_NODE: "n1"}, resource_version="7")
    with pytest.raises(ApiError) as err:
        asyncio.run(api.update_pvc(claim))
    assert err.value.status == 409
    assert "the object has been modified" in str(err.value)
    assert len(calls) == 1  # a conflict is not retried: PreBind fails and the pod is retried
    stored = asyncio.run(api.update_pvc(claim))
    assert len(calls) == 3
    assert stored.resource_version == "8"
    assert calls[-1][1] == "/api/v1/namespaces/ns/persistentvolumeclaims/c1"
    assert calls[-1][2] == {"metadata": {"resourceVersion": "7", "annotations": {ANN_SELECTED_NODE: "n1"}}}


def test_from_cluster_snapshot_reads_every_storage_kind() -> None:
    by_path = {c.path: c for c in collections()}
    scenario = Scenario()
    for path, item_type, convert in STORAGE_RESOURCES:
        col = by_path[path]
        assert col.item_type is item_type
        assert col.convert is convert
        col.add(scenario, convert(item_type()))
    assert len(scenario.storage) == len(STORAGE_RESOURCES)
