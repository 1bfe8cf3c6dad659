"""`policy-scheduler simulate`: input validation, priority admission, profiles and output contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.app.cli import main
from policy_scheduler.simulate.scenario import ScenarioError, load_scenario
from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "simulate"
JSON_KEYS = ["namespace", "name", "node", "nominatedNode", "message"]


def fixture(*names: str) -> list[str]:
    return [str(FIXTURES / name) for name in names]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["pods"]
    pods: list[dict[str, Any]] = data["pods"]
    return pods


def by_name(pods: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in pods}


# ---- output ------------------------------------------------------------------------------------------


def test_json_contract_keys_and_input_order(capsys: pytest.CaptureFixture[str]) -> None:
    pods = run_json(capsys, *fixture("cluster.yaml", "pods.yaml"))
    assert [p["name"] for p in pods] == ["running", "ssd-pod", "huge", "gpu-job", "elsewhere"]
    for p in pods:
        assert list(p) == JSON_KEYS
    got = by_name(pods)
    assert got["running"] == {
        "namespace": "apps",
        "name": "running",
        "node": "node-a",
        "nominatedNode": None,
        "message": None,
    }
    assert got["ssd-pod"] == {
        "namespace": "apps",
        "name": "ssd-pod",
        "node": "node-a",
        "nominatedNode": None,
        "message": None,
    }
    assert got["gpu-job"]["node"] == "node-c"
    assert got["gpu-job"]["message"] is None
    huge = got["huge"]
    assert huge["node"] is None
    assert huge["nominatedNode"] is None
    # 8 cpu is more than any node has: Unresolvable, so preemption cannot help either. (v1.37's
    # DynamicResources PostFilter gives no reason when it has nothing to deallocate.)
    assert huge["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert got["elsewhere"] == {
        "namespace": "default",
        "name": "elsewhere",
        "node": None,
        "nominatedNode": None,
        "message": "no SchedulingProfile for schedulerName 'nobody'",
    }


def test_json_is_stable_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *fixture("list.yaml"), "-o", "json")
    assert code == 0
    assert out.startswith('{\n  "pods": [\n    {\n      "namespace": "default",\n      "name": "first",\n')
    assert out.endswith("}\n")


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *fixture("cluster.yaml", "pods.yaml"))
    assert code == 0
    assert err.startswith("summary: ")
    lines = out.splitlines()
    assert lines[0] == "NAMESPACE  NAME       NODE       NOMINATED  MESSAGE"
    assert lines[1] == "apps       running    node-a"
    assert lines[2] == "apps       ssd-pod    node-a"
    assert lines[3].startswith("default    huge       <pending>             0/3 nodes are available: ")
    assert lines[4] == "default    gpu-job    node-c"
    assert (
        lines[5]
        == "default    elsewhere  <pending>             no SchedulingProfile for schedulerName 'nobody'"
    )
    assert len(lines) == 6
    assert out.endswith("\n")


def test_kind_list_input(capsys: pytest.CaptureFixture[str]) -> None:
    pods = run_json(capsys, *fixture("list.yaml"))
    assert [(p["name"], p["node"]) for p in pods] == [("first", "only-node"), ("second", None)]
    assert pods[1]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_seed_determinism(capsys: pytest.CaptureFixture[str]) -> None:
    def placements(seed: int) -> list[str]:
        return [p["node"] for p in run_json(capsys, *fixture("ties.yaml"), "--seed", str(seed))]

    first = placements(1)
    assert all(first)
    assert placements(1) == first
    assert len({tuple(placements(seed)) for seed in range(5)}) > 1, "the seed drives tie-breaks"


def test_files_in_any_order_give_the_same_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    forward = by_name(run_json(capsys, *fixture("cluster.yaml", "pods.yaml")))
    # Pods before nodes: nothing is scheduled until all input is read.
    backward = run_json(capsys, *fixture("pods.yaml", "cluster.yaml"))
    assert [p["name"] for p in backward][:4] == ["ssd-pod", "huge", "gpu-job", "elsewhere"]
    assert {n: p["node"] for n, p in by_name(backward).items()} == {n: p["node"] for n, p in forward.items()}


# ---- profiles ----------------------------------------------------------------------------------------


def test_scheduling_profile_objects_change_placement(capsys: pytest.CaptureFixture[str]) -> None:
    got = by_name(run_json(capsys, *fixture("binpack.yaml", "binpack-profiles.yaml")))
    assert got["packed"]["node"] == "busy", "MostAllocated prefers the fuller node"
    assert got["spread-out"]["node"] == "empty", "the default LeastAllocated prefers the emptier one"


def test_without_profile_objects_only_the_default_scheduler_runs(capsys: pytest.CaptureFixture[str]) -> None:
    got = by_name(run_json(capsys, *fixture("binpack.yaml")))
    assert got["packed"]["node"] is None
    assert got["packed"]["message"] == "no SchedulingProfile for schedulerName 'binpack'"
    assert got["spread-out"]["node"] == "empty"


def test_profile_objects_replace_the_default_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    only_binpack = tmp_path / "profile.yaml"
    only_binpack.write_text(
        (FIXTURES / "binpack-profiles.yaml").read_text().split("---\n", 1)[1], encoding="utf-8"
    )
    got = by_name(run_json(capsys, *fixture("binpack.yaml"), str(only_binpack)))
    assert got["packed"]["node"] == "busy"
    assert got["spread-out"]["node"] is None
    assert got["spread-out"]["message"] == "no SchedulingProfile for schedulerName 'default-scheduler'"


# ---- priority admission ------------------------------------------------------------------------------


def test_priority_admission() -> None:
    scenario = load_scenario(fixture("priority.yaml"))
    pods = {p.name: p for p in scenario.pods}
    assert (pods["important"].priority, pods["important"].priority_class_name) == (1000, "high")
    assert pods["important"].preemption_policy == "PreemptLowerPriority"
    assert (pods["low"].priority, pods["low"].priority_class_name) == (5, "everyday")
    assert pods["low"].preemption_policy == "Never"
    assert pods["critical"].priority == 2000000000


@pytest.mark.parametrize(
    ("version", "post_filter"),
    [("v1.35", "no new claims to deallocate, "), ("v1.36", "no new claims to deallocate, "), ("v1.37", "")],
)
def test_priority_decides_who_gets_the_last_room(
    capsys: pytest.CaptureFixture[str], version: str, post_filter: str
) -> None:
    got = by_name(run_json(capsys, *fixture("priority.yaml"), "--kubernetes-version", version))
    assert got["important"]["node"] == "solo", "higher priority is scheduled first although listed later"
    assert got["critical"]["node"] == "solo"
    assert got["low"]["node"] is None
    assert got["low"]["message"] == (
        f"0/1 nodes are available: 1 Insufficient cpu. {post_filter}"
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_explicit_priority_is_kept_without_a_class(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priority: 42\n  containers: [{name: c}]\n"
    )
    assert load_scenario([path]).pods[0].priority == 42


# ---- bad input ---------------------------------------------------------------------------------------

BAD_INPUTS: list[tuple[str, str, list[str]]] = [
    (
        "invalid-quantity",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: greedy, namespace: team}\n"
        "spec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: lots}}\n",
        [
            "document 2",
            "Pod team/greedy",
            'spec.containers[0].resources.requests.cpu: invalid quantity "lots"',
        ],
    ),
    (
        "node-quantity",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {memory: '1 Gi'}}\n",
        ["document 1", "Node n1", 'status.allocatable.memory: invalid quantity "1 Gi"'],
    ),
    (
        "duplicate",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n",
        ["document 2", "Node n1", "metadata.name: duplicate Node 'n1'"],
    ),
    (
        "duplicate-pod",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c}]}\n",
        ["document 2", "Pod default/p", "duplicate Pod 'default/p'"],
    ),
    (
        "missing-priority-class",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClassName: nope\n  containers: [{name: c}]\n",
        ["document 1", "Pod p", "spec.priorityClassName: no PriorityClass named 'nope'"],
    ),
    (
        "two-global-defaults",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\nglobalDefault: true\n---\n"
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: 2\nglobalDefault: true\n",
        ["document 2", "PriorityClass b", "globalDefault: more than one global default class (a, b)"],
    ),
    ("no-name", "apiVersion: v1\nkind: Node\nmetadata: {}\n", ["document 1", "metadata.name: required"]),
    ("no-kind", "apiVersion: v1\nmetadata: {name: x}\n", ["document 1", "kind: required"]),
    ("not-an-object", "- just\n- a list\n", ["document 1", "expected a Kubernetes object"]),
    ("bad-yaml", "kind: Node\nmetadata: {name: [\n", ["invalid YAML"]),
]


@pytest.mark.parametrize(("name", "text", "wanted"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_exits_2_naming_file_object_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, wanted: list[str]
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, *fixture("cluster.yaml"), str(path))
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: {path}")
    for piece in wanted:
        assert piece in err
    with pytest.raises(ScenarioError):
        load_scenario([path])


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "nope.yaml" in err


def test_our_kinds_need_our_api_group(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("apiVersion: example.com/v1\nkind: SchedulingProfile\nmetadata: {name: x}\nspec: {}\n")
    code, _, err = run(capsys, str(path))
    assert code == 2
    assert "apiVersion: expected scheduling.policy-scheduler.io/v1alpha1" in err


# ---- gangs -------------------------------------------------------------------------------------------


def test_pod_groups_are_placed_whole_or_say_why_they_wait(capsys: pytest.CaptureFixture[str]) -> None:
    got = by_name(run_json(capsys, *fixture("gang.yaml")))
    assert all(got[f"fits-{i}"]["node"] for i in range(3))
    for name in ("toobig-0", "toobig-1", "toobig-2", "short-0", "short-1"):
        assert got[name]["node"] is None, name
    assert "PodGroup jobs/toobig gets rejected due to Pod toobig-2" in got["toobig-0"]["message"]
    assert got["short-0"]["message"] == (
        "pre-filter pod short-1 cannot find enough sibling pods, current pods number: 2, minMember of group: 3"
    )


def test_workload_api_pod_groups_are_placed_whole_or_say_why_they_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = by_name(run_json(capsys, *fixture("workload_gang.yaml"), "--kubernetes-version", "v1.37.2"))
    assert all(got[f"fits-{i}"]["node"] for i in range(3)), "its scheduler-plugins namesake does not count"
    assert got["solo-0"]["node"]
    for name in ("toobig-0", "toobig-1", "toobig-2", "short-0", "short-1", "missing-0"):
        assert got[name]["node"] is None, name
    assert got["short-0"]["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert (
        got["missing-0"]["message"] == 'waiting for pods\'s pod group "missing" to appear in scheduling queue'
    )
