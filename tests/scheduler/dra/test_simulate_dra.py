"""`simulate` with DRA: classes, slices, claims and templates from YAML, allocations in memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from policy_scheduler.app.cli import main
from policy_scheduler.kube.paths import DRA_API, NODES, PODS
from policy_scheduler.kube.retry import Answer
from policy_scheduler.simulate.dra import generate_name, generated_claim_name
from policy_scheduler.simulate.live_snapshot import read_snapshot
from policy_scheduler.simulate.profiles import resolve_scenario_profiles
from policy_scheduler.simulate.run import simulate
from policy_scheduler.simulate.scenario import ScenarioError, load_scenario
from tests.paths import TESTS

FIXTURE = str(TESTS / "fixtures" / "simulate" / "dra.yaml")


def _pods(capsys: pytest.CaptureFixture[str], *files: str) -> dict[str, dict[str, Any]]:
    code = main(["simulate", *files, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {p["name"]: p for p in json.loads(out)["pods"]}


def test_template_claims_are_created_and_allocated_in_memory(capsys: pytest.CaptureFixture[str]) -> None:
    pods = _pods(capsys, FIXTURE)
    trainer = pods["trainer"]
    assert trainer["node"] == "node-b"  # the only node with h100s
    [device] = trainer["devices"]
    assert device["claim"] == generated_claim_name("default", "trainer", "gpu")
    assert device["claim"].startswith("trainer-gpu-")
    assert len(device["claim"]) == len("trainer-gpu-") + 5
    assert (device["driver"], device["pool"], device["request"]) == ("gpu.example.com", "node-b", "gpu")


def test_a_shared_claim_gives_both_pods_the_same_device(capsys: pytest.CaptureFixture[str]) -> None:
    pods = _pods(capsys, FIXTURE)
    one, two = pods["reader-1"], pods["reader-2"]
    assert one["node"] == two["node"] == "node-b"
    assert one["devices"] == two["devices"]
    taken = {pods["trainer"]["devices"][0]["device"], one["devices"][0]["device"]}
    assert len(taken) == 2  # the a100 matches no class: both h100s are now allocated


def test_devices_run_out_and_a_missing_template_waits(capsys: pytest.CaptureFixture[str]) -> None:
    pods = _pods(capsys, FIXTURE)
    assert pods["one-too-many"]["node"] is None
    assert "cannot allocate all claims" in pods["one-too-many"]["message"]
    assert "devices" not in pods["one-too-many"]
    assert pods["no-template"]["node"] is None
    # never attempted (PreEnqueue): the reason is DynamicResources' own
    assert pods["no-template"]["message"] == 'pod "default/no-template": ResourceClaim not created yet'


def test_generate_name_truncates_as_the_controller_does() -> None:
    assert generate_name("web", "gpu") == "web-gpu-"
    long_pod, long_claim = "p" * 50, "c" * 30
    name = generate_name(long_pod, long_claim)
    # proportional truncation of both parts, and no trailing hyphen (upstream quirk)
    assert name == "p" * (50 * 57 // 82) + "-" + "c" * (30 * 57 // 82)
    assert generated_claim_name("ns", "web", "gpu") == generated_claim_name("ns", "web", "gpu")


def test_a_bad_dra_object_names_the_document(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: d, pool: {name: p, generation: x, resourceSliceCount: 1}}\n"
    )
    with pytest.raises(ScenarioError, match="document 1: ResourceSlice"):
        load_scenario([str(bad)])


def test_from_cluster_reads_dra_collections_and_allocates() -> None:
    """The snapshot lists the four resource.k8s.io collections (items carry no kind there)."""
    docs = list(yaml.safe_load_all(Path(FIXTURE).read_text()))
    by_path: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        kind = doc.pop("kind")
        path = {
            "Node": NODES,
            "Pod": PODS,
            "DeviceClass": f"{DRA_API}/deviceclasses",
            "ResourceSlice": f"{DRA_API}/resourceslices",
            "ResourceClaim": f"{DRA_API}/resourceclaims",
            "ResourceClaimTemplate": f"{DRA_API}/resourceclaimtemplates",
        }[kind]
        if kind == "Pod":
            doc["metadata"]["uid"] = "uid-" + doc["metadata"]["name"]
        by_path.setdefault(path, []).append(doc)

    async def get(path: str, query: dict[str, str | int | bool]) -> Answer:
        body = {"kind": "List", "metadata": {"resourceVersion": "1"}, "items": by_path.get(path, [])}
        return Answer(200, msgspec.json.encode(body))

    scenario, _ = asyncio.run(read_snapshot(get))
    assert sorted(o["kind"] for o in scenario.dra) == [
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
    ]
    outcomes = {o.name: o for o in simulate(scenario, resolve_scenario_profiles(scenario))}
    # the snapshot queues pods by creation time (all equal here): which template pod wins varies
    [winner] = [o for o in outcomes.values() if o.node and o.name in ("trainer", "one-too-many")]
    [device] = winner.devices
    assert device["claim"] == generated_claim_name("default", winner.name, "gpu")
    assert outcomes["reader-1"].node == outcomes["reader-2"].node == winner.node == "node-b"
    assert outcomes["reader-2"].devices == outcomes["reader-1"].devices != winner.devices


EXTENDED = str(TESTS / "fixtures" / "simulate" / "dra-extended.yaml")


def test_extended_resources_get_the_claim_kube_scheduler_would_create(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods = _pods(capsys, EXTENDED)
    placed = pods["two-gpus"]
    assert placed["node"] == "node-b"  # no node lists example.com/gpu: DRA serves it on node-b
    claim = placed["extendedResourceClaim"]
    assert claim["name"].startswith("two-gpus-extended-resources-")
    assert len(claim["name"]) == len("two-gpus-extended-resources-") + 5
    assert claim["requests"] == [{"name": "container-0-request-0", "deviceClassName": "gpu", "count": 2}]
    assert claim["requestMappings"] == [
        {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    assert sorted(d["device"] for d in placed["devices"]) == ["gpu-0", "gpu-1"]
    assert {d["claim"] for d in placed["devices"]} == {claim["name"]}
    # Both devices are taken: the next pod waits with upstream's reason and gets no claim.
    waiting = pods["one-more"]
    assert waiting["node"] is None
    assert waiting["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert "extendedResourceClaim" not in waiting
