"""simulate with usage data: EvictionHeadroom places with it, and placements that leave a node
below an eviction threshold say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.app.cli import main

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1},
   status: {capacity: {memory: 8Gi, cpu: "4", pods: "110"}, allocatable: {memory: 8Gi, cpu: "4", pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2},
   status: {capacity: {memory: 8Gi, cpu: "4", pods: "110"}, allocatable: {memory: 8Gi, cpu: "4", pods: "110"}}}
- {apiVersion: metrics.k8s.io/v1beta1, kind: NodeMetrics, metadata: {name: n1}, usage: {memory: 7Gi}}
- {apiVersion: metrics.k8s.io/v1beta1, kind: NodeMetrics, metadata: {name: n2}, usage: {memory: 1Gi}}
- apiVersion: v1
  kind: Pod
  metadata: {name: running}
  spec: {nodeName: n1, containers: [{name: c, resources: {requests: {memory: 100Mi}}}]}
"""
PENDING = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: new-1},
   spec: {containers: [{name: c, resources: {requests: {memory: 1Gi, cpu: 100m}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: new-2},
   spec: {containers: [{name: c, resources: {requests: {memory: 1Gi, cpu: 100m}}}]}}
"""
HEADROOM_PROFILE = """
apiVersion: scheduling.policy-scheduler.io/v1alpha1
kind: SchedulingProfile
metadata: {name: default}
spec:
  plugins:
    score:
      enabled: [{name: EvictionHeadroom, weight: 5}]
"""


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, *texts: str) -> dict[str, dict[str, Any]]:
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"{i}.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    code = main(["simulate", *paths, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {p["name"]: p for p in json.loads(out)["pods"]}


def test_placement_below_a_threshold_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pods = simulate(capsys, tmp_path, CLUSTER, PENDING)
    # the default profile spreads them: the one on n1 (1Gi available, 100Mi of it requested by a
    # pod the sample does not cover) leaves it below the default 100Mi threshold
    on_n1 = [p for p in pods.values() if p["node"] == "n1" and p["name"] != "running"]
    assert [p.get("pressure") for p in on_n1] == [
        ["would push memory.available on n1 below its eviction threshold (-100Mi left < 100Mi)"]
    ]
    assert all("pressure" not in p for p in pods.values() if p["node"] == "n2")


def test_eviction_headroom_keeps_pods_off_the_node_heading_for_eviction(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = simulate(capsys, tmp_path, CLUSTER, PENDING, HEADROOM_PROFILE)
    assert (pods["new-1"]["node"], pods["new-2"]["node"]) == ("n2", "n2")
    assert all("pressure" not in p for p in pods.values())


def test_no_usage_data_no_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    without = "\n".join(line for line in CLUSTER.splitlines() if "NodeMetrics" not in line)
    pods = simulate(capsys, tmp_path, without, PENDING)
    assert all("pressure" not in p for p in pods.values())
