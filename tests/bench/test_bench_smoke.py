"""The benchmark runs end to end on tiny clusters. Speed is never asserted here, only the report's shape."""

from __future__ import annotations

import json

import pytest

from policy_scheduler.bench.__main__ import main
from policy_scheduler.bench.workloads import catalogue

WORKLOAD_KEYS = {
    "description",
    "nodes",
    "existing_pods",
    "measured_pods",
    "percentage_of_nodes_to_score",
    "us_per_pod",
    "cpu_us_per_pod",
    "pods_per_second",
    "runs_us_per_pod",
    "runs_cpu_us_per_pod",
    "cycles",
    "scheduled",
    "setup_seconds",
    "memory",
    "upstream",
}


def test_quick_json_report_has_every_workload_and_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"machine", "quick", "repeat", "max_rss_mb", "workloads"} <= set(report)
    assert report["quick"] is True
    assert set(report["workloads"]) == set(catalogue())
    for name, result in report["workloads"].items():
        assert set(result) == WORKLOAD_KEYS, name
        assert set(result["memory"]) == {"after_setup_mb", "peak_mb"}
        assert set(result["upstream"]) == {"test", "threshold_pods_per_second"}
        # One cycle per measured pod: each fits at its first attempt, or (unschedulable-5000)
        # fits nowhere and waits among the unschedulable pods.
        assert result["cycles"] == result["measured_pods"], name
        bound = 0 if catalogue()[name].fits_nowhere else result["measured_pods"]
        assert result["scheduled"] == bound, name


def test_only_selects_workloads_and_table_names_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--only", "basic-500", "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "basic-500" in out
    assert "anti-affinity-5000" not in out


def test_unknown_workload_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--only", "nope"]) == 2
    assert "unknown workload" in capsys.readouterr().err
