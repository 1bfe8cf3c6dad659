"""simulate reads `kubectl get -o yaml` output: Lists, unused kinds, terminal pods, server fields;
and reports progress and a closing summary on stderr."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from policy_scheduler.app.cli import main
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.simulate.progress import LARGE_SNAPSHOT, ProgressLine, wants_progress
from policy_scheduler.simulate.scenario import Scenario, load_scenario
from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "simulate"
DUMP = FIXTURES / "kubectl-dump.yaml"


def _simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_kubectl_dump_with_a_deployment_and_a_succeeded_pod_is_simulated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _simulate(capsys, "-o", "json", str(DUMP))
    assert code == 0, err
    pods = json.loads(out)["pods"]
    # Terminal pods are not simulated; the Succeeded pod's 1.5 cpu on the 2-cpu node is free.
    assert [(p["name"], p["node"]) for p in pods] == [("web-6d4b9c7f9-abcde", "node-1")]
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: skipped kinds simulate does not use: ConfigMap (1), Deployment (1); "
        "skipped 2 terminal pod(s) (Succeeded/Failed)"
    ]


def test_the_same_pod_still_running_takes_the_room(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    running = tmp_path / "running.yaml"
    running.write_text(DUMP.read_text().replace("phase: Succeeded", "phase: Running"))
    code, out, err = _simulate(capsys, "-o", "json", str(running))
    assert code == 0, err
    web = {p["name"]: p for p in json.loads(out)["pods"]}["web-6d4b9c7f9-abcde"]
    assert web["node"] is None
    assert web["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_scenario_counts_what_it_skipped() -> None:
    scenario = load_scenario([DUMP])
    assert scenario.skipped_kinds == {"Deployment": 1, "ConfigMap": 1}
    assert scenario.terminal_pods == 2
    assert [n.name for n in scenario.nodes] == ["node-1"]


def test_unused_kind_needs_no_name(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: Event\nmetadata: {}\n")
    assert load_scenario([path]).skipped_kinds == {"Event": 1}


def test_summary_line_counts_scheduled_pending_and_preempted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _simulate(capsys, str(FIXTURES / "cluster.yaml"), str(FIXTURES / "pods.yaml"))
    assert code == 0
    summary = err.splitlines()[-1]
    assert summary.startswith("summary: ")
    out_json = main(["simulate", "-o", "json", str(FIXTURES / "cluster.yaml"), str(FIXTURES / "pods.yaml")])
    assert out_json == 0
    pods = json.loads(capsys.readouterr().out)["pods"]
    placed = sum(1 for p in pods if p["node"]) - 1  # `running` was bound in the input
    pending = sum(1 for p in pods if not p["node"])
    assert summary == f"summary: {placed} scheduled, {pending} pending, 0 preempted (1 already bound, 5 pods)"

    scenario = (FIXTURES / "preempt-policy.yaml").read_text().replace("dryRun: true", "budgetMode: Enforce")
    path = tmp_path / "preempt.yaml"
    path.write_text(scenario)
    code, _, err = _simulate(capsys, str(path))
    assert code == 0
    assert err.splitlines()[-1] == "summary: 1 scheduled, 0 pending, 1 preempted (1 already bound, 2 pods)"


def test_no_progress_unless_asked_when_not_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = _simulate(capsys, str(DUMP))
    assert "scheduling:" not in err
    _, _, err = _simulate(capsys, "--progress", str(DUMP))
    assert "scheduling: 1/1 pods attempted" in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_rewrites_one_line_on_a_terminal() -> None:
    stream = _Tty()
    line = ProgressLine(stream, tty=True)
    for done in range(1, 201):
        line(done, 200)
    line.close()
    text = stream.getvalue()
    assert text.startswith("\rscheduling: 1/200 pods attempted")
    assert text.endswith("\rscheduling: 200/200 pods attempted\n")
    assert text.count("\n") == 1
    assert text.count("\r") == 101  # every 1% and the first


def test_progress_prints_tenths_to_a_log() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, tty=False)
    for done in range(1, 101):
        line(done, 100)
    line.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "scheduling: 1/100 pods attempted"
    assert lines[-1] == "scheduling: 100/100 pods attempted"
    assert len(lines) == 11


def test_progress_by_default_only_for_large_snapshots_on_a_terminal() -> None:
    small = Scenario(pods=[Pod(namespace="d", name="p")])
    large = Scenario(pods=[Pod(namespace="d", name=f"p{i}") for i in range(LARGE_SNAPSHOT)])
    assert not wants_progress(_Tty(), False, small)
    assert wants_progress(_Tty(), False, large)
    assert not wants_progress(io.StringIO(), False, large)
    assert wants_progress(io.StringIO(), True, small)


@pytest.mark.parametrize("strict", [False, True])
def test_json_and_yaml_dumps_read_the_same_objects(strict: bool) -> None:
    """`kubectl get -o json` goes through the json module, YAML through libyaml's safe loader
    (when built): both give the same objects, and a key given twice is an error only in strict
    mode (kubectl's decoder), otherwise the last one wins as YAML has it."""
    from policy_scheduler.simulate.scenario import ScenarioError, parse_documents

    listing = {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}
    as_json = [d.body for d in parse_documents(json.dumps(listing), "nodes.json", strict=strict)]
    as_yaml = [d.body for d in parse_documents(yaml.safe_dump(listing), "nodes.yaml", strict=strict)]
    assert as_json == as_yaml == listing["items"]
    twice = '{"kind": "Node", "metadata": {"name": "a", "name": "b"}}'
    if strict:
        with pytest.raises(ScenarioError, match="duplicate key 'name'"):
            list(parse_documents(twice, "twice.json", strict=True))
    else:
        (doc,) = parse_documents(twice, "twice.json")
        assert doc.body["metadata"]["name"] == "b"
