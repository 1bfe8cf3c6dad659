"""simulate applies the EvictionPolicy a profile names: dry run, protection, unknown names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import main
from tests.paths import TESTS

SCENARIO = TESTS / "fixtures" / "simulate" / "preempt-policy.yaml"


def _run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy_spec: dict[str, object]
) -> dict[str, dict[str, Any]]:
    docs = list(yaml.safe_load_all(SCENARIO.read_text()))
    docs[0]["spec"] = policy_spec
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["simulate", "-o", "json", str(path)]) == 0
    return {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def test_enforce_policy_preempts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = _run(tmp_path, capsys, {"budgetMode": "Enforce"})
    assert pods["vip"]["node"] == "n1"
    assert pods["vip"]["preempted"] == ["default/low"]
    assert pods["low"]["node"] is None


def test_dry_run_policy_evicts_nothing_and_says_what_it_would_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = _run(tmp_path, capsys, {"dryRun": True})
    assert pods["low"]["node"] == "n1"
    assert pods["vip"]["node"] is None
    assert "preempted" not in pods["vip"]
    assert "dry run: would preempt default/low on n1" in pods["vip"]["message"]


def test_protected_pods_are_never_victims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = _run(tmp_path, capsys, {"protected": [{"namespaceSelector": {}}]})
    assert pods["low"]["node"] == "n1"
    assert pods["vip"]["node"] is None
    assert "preempted" not in pods["vip"]


def test_unknown_eviction_policy_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SCENARIO.read_text().replace("evictionPolicyName: careful", "evictionPolicyName: nope")
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.evictionPolicyName" in err
    assert "nope" in err
