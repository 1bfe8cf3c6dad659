"""`simulate` with storage objects in its YAML: VolumeBinding decides, PreBind writes nothing."""

from __future__ import annotations

import asyncio
import json

import pytest

from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.storage_convert import storage_object_from_dict
from policy_scheduler.app.cli import main
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.scheduler.storage.types import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    IMMEDIATE,
    VOLUME_AVAILABLE,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from policy_scheduler.simulate.scenario import load_scenario
from policy_scheduler.simulate.volumes import MemoryVolumeAPI
from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "simulate"
GI = 1024**3


def test_storage_objects_are_read_with_the_servers_defaults() -> None:
    scenario = load_scenario([FIXTURES / "cluster.yaml", FIXTURES / "storage.yaml"])
    assert "PersistentVolume" not in scenario.skipped_kinds
    by_name = {(type(o).__name__, o.name): o for o in scenario.storage}
    pv = by_name[("PersistentVolume", "local-b")]
    assert isinstance(pv, PersistentVolume)
    assert pv.phase == VOLUME_AVAILABLE
    assert pv.capacity == 10 * GI
    assert pv.node_affinity is not None
    assert pv.node_affinity[0].match_expressions[0].values == ("node-b",)
    claim = by_name[("PersistentVolumeClaim", "data-0")]
    assert isinstance(claim, PersistentVolumeClaim)
    assert claim.namespace == "apps"
    assert claim.request == 5 * GI
    assert claim.class_name == "local"
    sc = storage_object_from_dict("StorageClass", {"metadata": {"name": "x"}, "provisioner": "p"})
    assert isinstance(sc, StorageClass)
    assert sc.volume_binding_mode == IMMEDIATE
    bound = storage_object_from_dict(
        "PersistentVolumeClaim", {"metadata": {"name": "c"}, "spec": {"volumeName": "pv"}}
    )
    assert isinstance(bound, PersistentVolumeClaim)
    assert bound.fully_bound


def test_bad_storage_quantity_names_the_object_and_field() -> None:
    with pytest.raises(ConversionError, match=r"PersistentVolume v: spec.capacity.storage: invalid quantity"):
        storage_object_from_dict(
            "PersistentVolume", {"metadata": {"name": "v"}, "spec": {"capacity": {"storage": "lots"}}}
        )


def test_simulate_places_pods_by_their_volumes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", str(FIXTURES / "cluster.yaml"), str(FIXTURES / "storage.yaml"), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    # The only local PV is on node-b: the first claimant gets it, the second has none left.
    assert pods["db-0"]["node"] == "node-b"
    assert pods["db-1"]["node"] is None
    assert "didn't find available persistent volumes to bind" in pods["db-1"]["message"]
    # A provisioning class fits anywhere; the simulated provisioner completes the claim.
    assert pods["builder"]["node"] is not None
    assert pods["orphan"]["node"] is None
    assert 'persistentvolumeclaim "nowhere" not found' in pods["orphan"]["message"]


def test_memory_api_completes_bindings_as_the_pv_controller_would() -> None:
    storage = StorageObjects()
    claim = PersistentVolumeClaim("c", "ns", uid="u1", storage_class_name="fast", request=GI)
    storage.upsert(claim)
    api = MemoryVolumeAPI(storage, lambda _old, new: storage.upsert(new))
    selected = PersistentVolumeClaim(
        "c", "ns", uid="u1", storage_class_name="fast", request=GI, annotations={ANN_SELECTED_NODE: "n1"}
    )
    asyncio.run(api.update_pvc(selected))
    stored = storage.get_pvc("ns", "c")
    assert stored is not None
    assert stored.fully_bound
    assert stored.annotations[ANN_BIND_COMPLETED] == "yes"
    pv = storage.get_pv(stored.volume_name)
    assert pv is not None
    assert pv.claim_ref is not None
    assert pv.claim_ref.uid == "u1"
    assert api.provisions == [("ns/c", "n1")]
