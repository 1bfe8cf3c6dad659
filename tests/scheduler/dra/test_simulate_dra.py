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


PARTITIONS = str(TESTS / "fixtures" / "simulate" / "dra_partitions.yaml")


@pytest.mark.parametrize(
    ("version", "partitions", "plain_fpga"),
    [
        # v1.35: partitionable devices and device taints are off (alpha).
        ("v1.35", 0, "fpga-0"),
        # v1.36: both beta and on; DeviceTaintRules still off, so fpga-1 is untainted.
        ("v1.36", 2, "fpga-1"),
        # v1.37: the DeviceTaintRule taints fpga-1 too; the claim without toleration waits.
        ("v1.37", 2, None),
    ],
)
def test_partitions_and_taints_follow_the_release(
    capsys: pytest.CaptureFixture[str], version: str, partitions: int, plain_fpga: str | None
) -> None:
    code = main(["simulate", PARTITIONS, "-o", "json", "--kubernetes-version", version])
    out, err = capsys.readouterr()
    assert code == 0, err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    placed = [pods[f"part-{k}"] for k in (1, 2, 3) if pods[f"part-{k}"]["node"]]
    assert len(placed) == partitions
    assert len({p["devices"][0]["device"] for p in placed}) == partitions  # distinct partitions
    waiting = [pods[f"part-{k}"] for k in (1, 2, 3) if not pods[f"part-{k}"]["node"]]
    assert all("cannot allocate all claims" in p["message"] for p in waiting)
    plain = pods["fpga-plain"]
    if plain_fpga is None:
        assert plain["node"] is None
        assert "cannot allocate all claims" in plain["message"]
    else:
        assert plain["devices"][0]["device"] == plain_fpga
    # The claim tolerating the NoSchedule taint may get the tainted fpga-0 (from v1.36).
    assert pods["fpga-tolerant"]["node"] == "node-b"


UNSUPPORTED = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dev}
spec:
  selectors: [{cel: {expression: 'device.driver == "d.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-devices}
spec:
  driver: d.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: attached-later
    bindingConditions: [example.com/attached]
    bindingFailureConditions: [example.com/failed]
  - name: plain
    capacity: {memory: {value: 8Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: capacity, namespace: default}
spec:
  devices:
    requests:
    - name: r
      exactly: {deviceClassName: dev, capacity: {requests: {memory: 4Gi}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two, namespace: default}
spec:
  devices:
    requests:
    - name: r
      exactly: {deviceClassName: dev, count: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: capacity, namespace: default}
spec:
  resourceClaims: [{name: c, resourceClaimName: capacity}]
  containers: [{name: c, image: busybox, resources: {claims: [{name: c}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: two, namespace: default}
spec:
  resourceClaims: [{name: c, resourceClaimName: two}]
  containers: [{name: c, image: busybox, resources: {claims: [{name: c}]}}]
"""


@pytest.mark.parametrize("version", ["v1.35", "v1.37"])
def test_claims_with_capacity_requests_and_binding_conditions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, version: str
) -> None:
    scenario = tmp_path / "unsupported.yaml"
    scenario.write_text(UNSUPPORTED)
    code = main(["simulate", str(scenario), "-o", "json", "--kubernetes-version", version])
    out, err = capsys.readouterr()
    assert code == 0, err
    pods = {p["name"]: p for p in json.loads(out)["pods"]}
    capacity, two = pods["capacity"], pods["two"]
    if version == "v1.35":
        # The gates are off: the API server would have dropped the fields, upstream ignores them.
        assert capacity["node"] == "node-a"
        assert "DRA" not in two["message"]
        assert "cannot allocate all claims" in two["message"]
        return
    # 4Gi of the 8Gi device (not shareable: the whole device); binding conditions are not ours.
    assert capacity["node"] == "node-a"
    assert capacity["devices"][0]["device"] == "plain"
    assert two["node"] is None
    assert "devices with binding conditions need DRADeviceBindingConditions" in two["message"]


SHARED = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec:
  selectors: [{cel: {expression: 'device.driver == "nic.example.com" && device.allowMultipleAllocations'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-nics}
spec:
  driver: nic.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic-0
    allowMultipleAllocations: true
    capacity:
      bandwidth:
        value: 10G
        requestPolicy: {default: 1G, validRange: {min: 1G, step: 1G}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: bandwidth, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: nic, capacity: {requests: {bandwidth: 3500M}}}
"""


@pytest.mark.parametrize(("version", "sharing"), [("v1.35", 1), ("v1.36", 2), ("v1.37", 2)])
def test_a_device_allowing_multiple_allocations_is_shared_by_capacity(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, version: str, sharing: int
) -> None:
    """3.5G rounds up to 4G of the NIC's 10G: two pods share it, the third waits (from v1.36,
    DRAConsumableCapacity on). v1.35 does not share: one pod gets the whole device."""
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\nspec:\n"
        "  resourceClaims: [{name: nic, resourceClaimTemplateName: bandwidth}]\n"
        "  containers: [{name: c, image: busybox, resources: {claims: [{name: nic}]}}]\n"
        for i in range(3)
    )
    scenario = tmp_path / "shared.yaml"
    scenario.write_text(SHARED + pods)
    code = main(["simulate", str(scenario), "-o", "json", "--kubernetes-version", version])
    out, err = capsys.readouterr()
    assert code == 0, err
    placed = [p for p in json.loads(out)["pods"] if p["node"]]
    assert len(placed) == sharing
    assert {p["devices"][0]["device"] for p in placed} == {"nic-0"}


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
