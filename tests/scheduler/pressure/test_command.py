"""`policy-scheduler pressure` on the example files (examples/pressure, docs/pressure.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import main
from tests.paths import REPO

EXAMPLES = REPO / "examples" / "pressure"
CLUSTER = str(EXAMPLES / "cluster.yaml")
KUBELET = str(EXAMPLES / "kubelet-config.yaml")
SUMMARY = str(EXAMPLES / "summary-worker-b.json")
MI, GI = 1024**2, 1024**3


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["pressure", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def nodes(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, dict[str, Any]]:
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == 0, err
    return {n["name"]: n for n in json.loads(out)["nodes"]}


def order(node: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(f"{p['namespace']}/{p['name']}", p["victim"]) for p in node["evictionOrder"]]


def test_memory_pressure_from_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    a = nodes(capsys, CLUSTER, KUBELET, "--summary", SUMMARY)["worker-a"]
    assert (a["thresholdSource"], a["usageSource"]) == ("kubelet config file", "metrics.k8s.io")
    assert a["conditions"] == ["MemoryPressure"]
    assert a["underPressure"] == ["memory.available"]
    # NodeMetrics carry memory only: the other signals with a threshold are "no data", not healthy
    assert a["noData"] == ["allocatableMemory.available", "nodefs.available", "imagefs.available"]
    memory = next(s for s in a["signals"] if s["signal"] == "memory.available")
    assert (memory["available"], memory["capacity"], memory["status"]) == (410 * MI, 10 * GI, "threshold met")
    assert (a["evictionSignal"], a["evictionStartsInSeconds"], a["killGracePeriodSeconds"]) == (
        "memory.available",
        0.0,
        1,
    )
    assert (a["reclaimTarget"], a["reclaimNeeded"], a["reclaimable"]) == (500 * MI, 90 * MI, True)
    assert order(a) == [
        ("default/batch-1", True),  # exceeds its request (none) by 600Mi
        ("default/web-1", False),  # exceeds by 512Mi, same priority
        ("kube-system/kube-proxy-a", False),  # exceeds, but priority 2000001000
        ("default/web-2", False),  # below its request
        ("default/cache-1", False),
    ]
    proxy = a["evictionOrder"][2]
    assert proxy["neverEvicted"] == "critical pod (priority 2000001000 >= 2000000000)"
    assert [p["qos"] for p in a["evictionOrder"]] == [
        "BestEffort",
        "Burstable",
        "BestEffort",
        "Burstable",
        "Guaranteed",
    ]
    assert all(p["name"] != "done-1" for p in a["evictionOrder"])  # terminal pods are not ranked


def test_disk_pressure_from_the_summary_api(capsys: pytest.CaptureFixture[str]) -> None:
    b = nodes(capsys, CLUSTER, KUBELET, "--summary", SUMMARY)["worker-b"]
    assert (b["usageSource"], b["conditions"], b["underPressure"]) == (
        "Summary API",
        ["DiskPressure"],
        ["nodefs.available"],
    )
    assert b["noData"] == []
    # 1Gi threshold + 500Mi minimum reclaim, 800Mi available
    assert (b["reclaimTarget"], b["reclaimNeeded"]) == (1524 * MI, 724 * MI)
    # with a dedicated imagefs, nodefs ranks on logs + local volumes (not writable layers)
    assert order(b) == [("default/logger-1", True), ("default/api-1", False), ("default/etl-1", False)]
    assert [p["frees"] for p in b["evictionOrder"]] == [800 * MI, 300 * MI, 1329 * MI]
    assert any("deletes unused containers and images" in note for note in b["notes"])


def test_node_without_usage(capsys: pytest.CaptureFixture[str]) -> None:
    c = nodes(capsys, CLUSTER, KUBELET)["worker-c"]
    assert (c["usageSource"], c["conditions"], c["underPressure"], c["evictionSignal"]) == (
        None,
        [],
        [],
        None,
    )
    assert all(s["status"] in ("no data", "no threshold") for s in c["signals"])
    assert c["evictionOrder"][0]["frees"] is None
    assert "no usage data for this node: no signal can be evaluated" in c["notes"]


def test_kubelet_defaults_without_a_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    a = nodes(capsys, CLUSTER, "--node", "worker-a")["worker-a"]
    assert a["thresholdSource"] == "kubelet defaults"
    memory = next(s for s in a["signals"] if s["signal"] == "memory.available")
    assert [t["value"] for t in memory["thresholds"]] == ["100Mi"]
    assert a["conditions"] == []  # 410Mi available is above the default 100Mi
    assert not any(p["victim"] for p in a["evictionOrder"])


def test_signal_option_ranks_for_another_signal(capsys: pytest.CaptureFixture[str]) -> None:
    found = nodes(
        capsys, CLUSTER, KUBELET, "--summary", SUMMARY, "--node", "worker-b", "--signal", "pid.available"
    )
    assert list(found) == ["worker-b"]
    b = found["worker-b"]
    assert b["orderSignal"] == "pid.available"
    # PID pressure ranks by priority, then process count
    assert [p["name"] for p in b["evictionOrder"]] == ["etl-1", "logger-1", "api-1"]


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, CLUSTER, KUBELET, "--summary", SUMMARY)
    assert code == 0
    assert (
        "NODE worker-a  thresholds: kubelet config file  usage: metrics.k8s.io  conditions: MemoryPressure"
        in out
    )
    assert (
        "evicts now for memory.available (grace period 1s), until 500Mi is available (must free 90Mi):" in out
    )
    assert (
        "evicts now for nodefs.available (grace period 1s), until 1524Mi is available (must free 724Mi):"
        in out
    )
    lines = [line.split() for line in out.splitlines()]
    assert ["1", "default/batch-1", "0", "BestEffort", "600Mi", "600Mi", "EVICT"] in lines
    assert ["allocatableMemory.available", "-", "-", "<500Mi", "no", "data"] in lines


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {memory: 1Gi}}\n"
POD = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1, containers: [{name: c}]}\n"


def metrics(kind: str, body: str) -> str:
    meta = "{name: n1}" if kind == "NodeMetrics" else "{name: p, namespace: default}"
    return f"---\napiVersion: metrics.k8s.io/v1beta1\nkind: {kind}\nmetadata: {meta}\n{body}\n"


KUBELET_CONFIG = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

BAD: dict[str, tuple[str, str]] = {
    "negative usage": (
        NODE + metrics("NodeMetrics", "usage: {memory: -5Mi}"),
        'document 2: NodeMetrics n1: usage.memory: "-5Mi": must not be negative',
    ),
    "usage beyond capacity": (
        NODE + metrics("NodeMetrics", "usage: {memory: 5Gi}"),
        "NodeMetrics n1: usage.memory: 5368709120 is more than the node's memory capacity (1073741824)",
    ),
    "pod using more than its node has": (
        NODE
        + POD
        + metrics("NodeMetrics", "usage: {memory: 100Mi}")
        + metrics("PodMetrics", "containers: [{name: c, usage: {memory: 2Gi}}]"),
        "PodMetrics default/p: containers[*].usage.memory: 2147483648 is more than its node's memory capacity",
    ),
    "malformed quantity": (
        NODE + POD + metrics("PodMetrics", "containers: [{name: c, usage: {memory: 1x}}]"),
        'PodMetrics default/p: containers[0].usage.memory: invalid quantity "1x"',
    ),
    "unknown signal": (
        NODE + "---\n" + KUBELET_CONFIG + "evictionHard: {mem.available: 1Gi}\n",
        "KubeletConfiguration: evictionHard[mem.available]: unsupported eviction signal mem.available",
    ),
    "literal and percentage in one value": (
        NODE + "---\n" + KUBELET_CONFIG + "evictionHard: {memory.available: 1Gi%}\n",
        'evictionHard[memory.available]: "1Gi%" is both a quantity and a percentage',
    ),
    "literal and percentage for one signal": (
        NODE + "---\n" + KUBELET_CONFIG + "evictionHard:\n  memory.available: 1Gi\n  memory.available: 10%\n",
        "found duplicate key 'memory.available'",
    ),
    "two kubelet configurations": (
        NODE + "---\n" + KUBELET_CONFIG + "---\n" + KUBELET_CONFIG,
        "document 3: KubeletConfiguration: a second KubeletConfiguration",
    ),
    "soft threshold without grace period": (
        NODE + "---\n" + KUBELET_CONFIG + "evictionSoft: {memory.available: 1Gi}\n",
        "evictionSoftGracePeriod[memory.available]: grace period must be specified",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_exits_2_naming_file_object_and_field(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text, expected = BAD[name]
    path = write(tmp_path, "input.yaml", text)
    code, out, err = run(capsys, path)
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: {path}: ")
    assert expected in err


def test_bad_summary_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node = write(tmp_path, "node.yaml", NODE)
    bad_json = write(tmp_path, "s.json", "{not json")
    code, _, err = run(capsys, node, "--summary", bad_json)
    assert (code, err.startswith(f"error: {bad_json}: invalid JSON")) == (2, True)
    absurd = write(
        tmp_path,
        "t.json",
        json.dumps({"node": {"nodeName": "n1", "fs": {"availableBytes": 9, "capacityBytes": 5}}}),
    )
    code, _, err = run(capsys, node, "--summary", absurd)
    assert code == 2
    assert f"{absurd}: Summary of node n1: node.fs.availableBytes: 9 is more than capacityBytes (5)" in err
    other = write(tmp_path, "u.json", json.dumps({"node": {"nodeName": "elsewhere"}}))
    code, _, err = run(capsys, node, "--summary", other)
    assert code == 0
    assert "no Node elsewhere in the input; left out" in err


def test_json_input_as_kubectl_writes_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`kubectl get -o json` dumps are read with the json module (much faster), as strictly."""
    items = yaml.safe_load(Path(CLUSTER).read_text(encoding="utf-8"))["items"]
    dump = write(tmp_path, "cluster.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    from_json = nodes(capsys, dump, KUBELET)
    from_yaml = nodes(capsys, CLUSTER, KUBELET)
    assert from_json == from_yaml
    duplicate = write(
        tmp_path,
        "dup.json",
        '{"apiVersion": "v1", "kind": "Node", "kind": "Node", "metadata": {"name": "n"}}',
    )
    code, _, err = run(capsys, duplicate)
    assert code == 2
    assert f"error: {duplicate}: invalid JSON: found duplicate key 'kind'" in err
