"""The release options on the command line: `run --feature-gates/--emulated-version`, and
`--kubernetes-version` of simulate, validate and import-config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import build_parser, main
from policy_scheduler.scheduler.versioning.version import V1_36
from policy_scheduler.service.config import OperatorConfig


def test_run_takes_feature_gates_and_an_emulated_version() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--feature-gates",
            "NodeDeclaredFeatures=true",
            "--feature-gates",
            "kube:OpportunisticBatching=false",
            "--emulated-version",
            "kube=1.36",
        ]
    )
    config = OperatorConfig.from_args(args)
    assert config.feature_gates == (("NodeDeclaredFeatures", True), ("OpportunisticBatching", False))
    assert config.emulated_version == V1_36


def test_run_defaults_follow_the_api_server() -> None:
    config = OperatorConfig.from_args(build_parser().parse_args(["run"]))
    assert (config.feature_gates, config.emulated_version) == ((), None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--feature-gates", "NodeDeclaredFeatures"], "missing bool value for NodeDeclaredFeatures"),
        (["--feature-gates", "NoSuchGate=true"], "unrecognized feature gate: NoSuchGate"),
        (["--emulated-version", "1.37", "--feature-gates", "NodeDeclaredFeatures=false"], "locked to true"),
        (["--emulated-version", "kube=1.34"], "Kubernetes v1.34 is not supported"),
    ],
)
def test_run_refuses_bad_release_options(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv]) == 2
    assert message in capsys.readouterr().err


def test_run_accepts_gates_some_supported_release_has() -> None:
    # CompositePodGroup exists only in v1.37: fine until the API server says otherwise.
    args = build_parser().parse_args(["run", "--feature-gates", "CompositePodGroup=false"])
    assert OperatorConfig.from_args(args).feature_gates == (("CompositePodGroup", False),)


def _pending_pod_on_cordoned_and_small_nodes(tmp_path: Path) -> Path:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }
        for name, cpu in (("a", "4"), ("b", "8"))
    ]
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]},
        }
    )
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_simulate_takes_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _pending_pod_on_cordoned_and_small_nodes(tmp_path)
    for version in ("v1.35", "v1.36.3", "v1.37"):
        assert main(["simulate", "--kubernetes-version", version, str(path), "-o", "json"]) == 0
        assert '"node"' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["simulate", "--kubernetes-version", "v1.30", str(path)])
    assert "Kubernetes v1.30 is not supported" in capsys.readouterr().err


def _profile(tmp_path: Path, spec: dict[str, Any]) -> Path:
    path = tmp_path / "profile.yaml"
    doc = {
        "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
        "kind": "SchedulingProfile",
        "metadata": {"name": "p"},
        "spec": spec,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_validate_checks_for_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # CompositePodGroup exists in v1.37 only.
    path = _profile(tmp_path, {"schedulerName": "s", "featureGates": {"CompositePodGroup": False}})
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--kubernetes-version", "v1.36", str(path)]) == 1
    assert "spec.featureGates.CompositePodGroup" in capsys.readouterr().out


def test_import_config_checks_for_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": "s",
                        "pluginConfig": [
                            {"name": "VolumeBinding", "args": {"shape": [{"utilization": 0, "score": 1}]}}
                        ],
                    }
                ],
            }
        )
    )
    assert main(["import-config", str(config)]) == 0  # v1.37: StorageCapacityScoring is on
    assert "shape" in capsys.readouterr().out
    assert main(["import-config", "--kubernetes-version", "v1.35", str(config)]) == 2
    assert "turn on the feature gate StorageCapacityScoring" in capsys.readouterr().err
