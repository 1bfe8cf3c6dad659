"""Feature gates per release: the defaults are upstream's, and settings are checked as
kube-scheduler's --feature-gates are (component-base featuregate), plus what the core implements."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from policy_scheduler.scheduler.versioning import gate_table
from policy_scheduler.scheduler.versioning.behaviour import CHANGED_IN, Behaviour
from policy_scheduler.scheduler.versioning.features import FeatureGateError, Features, gate_specs
from policy_scheduler.scheduler.versioning.gates import IMPLEMENTED, SCHEDULER_GATES
from policy_scheduler.scheduler.versioning.version import (
    SUPPORTED_VERSIONS,
    V1_35,
    V1_36,
    V1_37,
    KubernetesVersion,
)
from tests.paths import REPO

ROOT = REPO
MODULES = Path.home() / "go" / "pkg" / "mod" / "k8s.io"


def _docs_table() -> dict[str, tuple[str, ...]]:
    """docs/upstream-changes.md section 2: gate | v1.35.4 | v1.36.3 | v1.37.2 | changed; a
    cell's note in parentheses (when another flag changes the default) is left out."""
    text = (ROOT / "docs" / "upstream-changes.md").read_text(encoding="utf-8")
    section = text[text.index("## 2.") : text.index("## 3.")]
    rows: dict[str, tuple[str, ...]] = {}
    for line in section.splitlines():
        match = re.match(r"\| (\w+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", line)
        if match and match.group(1) != "gate":
            cells = match.groups()[1:]
            rows[match.group(1)] = tuple(re.sub(r"\s*\(.*\)", "", cell).strip() for cell in cells)
    return rows


def _cell(features: Features, gate: str) -> str:
    spec = gate_specs(features.version).get(gate)
    if spec is None:
        return "-"
    return " ".join(["on" if spec.default else "off", spec.stage, *(["locked"] if spec.locked else [])])


def test_scheduler_gates_are_the_documented_ones() -> None:
    assert set(_docs_table()) == SCHEDULER_GATES


@pytest.mark.parametrize("gate", sorted(SCHEDULER_GATES))
def test_every_scheduler_gate_default_matches_upstreams_table(gate: str) -> None:
    """Each release's default (value, stage, lock) of every gate the scheduler reads, as
    defaultVersionedKubernetesFeatureGates gives it at that release (docs/upstream-changes.md)."""
    documented = _docs_table()[gate]
    ours = tuple(_cell(Features(version), gate) for version in SUPPORTED_VERSIONS)
    assert ours == documented
    for version, cell in zip(SUPPORTED_VERSIONS, documented, strict=True):
        if cell != "-":
            assert Features(version).enabled(gate) == cell.startswith("on ")


@pytest.mark.skipif(
    not all((MODULES / f"kubernetes@v{r}").is_dir() for r in ("1.35.4", "1.36.3", "1.37.2")),
    reason="the releases' sources are not in the Go module cache",
)
def test_gate_table_is_generated_from_the_go_sources() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "feature_gates.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_defaults_that_changed_between_releases() -> None:
    v135, v136, v137 = Features(V1_35), Features(V1_36), Features(V1_37)
    assert [f.enabled("NodeDeclaredFeatures") for f in (v135, v136, v137)] == [False, True, True]
    assert [f.enabled("StorageCapacityScoring") for f in (v135, v136, v137)] == [False, False, True]
    # A removed gate's behaviour is always on; the release simply does not have the gate.
    assert [f.has_gate("SidecarContainers") for f in (v135, v136, v137)] == [True, True, False]
    assert not v137.enabled("GenericWorkload")
    assert not v137.has_gate("GangScheduling")


def test_table_rows_have_one_cell_per_release() -> None:
    assert tuple(str(v) for v in SUPPORTED_VERSIONS) == gate_table.RELEASES
    assert all(len(cells) == len(SUPPORTED_VERSIONS) for cells in gate_table.GATES.values())
    assert set(IMPLEMENTED) == SCHEDULER_GATES


@pytest.mark.parametrize(
    ("version", "settings", "gate", "message"),
    [
        (
            V1_35,
            {"NoSuchGate": True},
            "NoSuchGate",
            "unrecognized feature gate: NoSuchGate (not a feature gate",
        ),
        (
            V1_36,
            {"CompositePodGroup": False},
            "CompositePodGroup",
            "unrecognized feature gate: CompositePodGroup (Kubernetes v1.36 does not have it; v1.37 has it)",
        ),
        (
            V1_37,
            {"SidecarContainers": True},
            "SidecarContainers",
            "unrecognized feature gate: SidecarContainers (Kubernetes v1.37 does not have it",
        ),
        (
            V1_37,
            {"NodeDeclaredFeatures": False},
            "NodeDeclaredFeatures",
            "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true",
        ),
        (
            V1_35,
            {"DynamicResourceAllocation": False},
            "DynamicResourceAllocation",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (
            V1_36,
            {"NodeDeclaredFeatures": False},
            "InPlacePodLevelResourcesVerticalScaling",
            "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
            "[NodeDeclaredFeatures]",
        ),
        (
            V1_35,
            {"GangScheduling": True},
            "GangScheduling",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
        ),
        (
            V1_35,
            {"TaintTolerationComparisonOperators": True},
            "TaintTolerationComparisonOperators",
            "feature gate TaintTolerationComparisonOperators=true is not implemented by policy-scheduler "
            "(it implements TaintTolerationComparisonOperators=false)",
        ),
        (
            V1_35,
            {"AllBeta": False},
            "DRAAdminAccess",
            "feature gate DRAAdminAccess=false (set by AllBeta=false) is not implemented",
        ),
    ],
)
def test_settings_refused(
    version: KubernetesVersion, settings: dict[str, bool], gate: str, message: str
) -> None:
    with pytest.raises(FeatureGateError) as info:
        Features(version, tuple(settings.items()))
    assert any(g == gate and message in m for g, m in info.value.problems), info.value.problems


def test_settings_accepted_and_the_last_one_wins() -> None:
    features = Features(V1_35, (("NodeDeclaredFeatures", True), ("OpportunisticBatching", False)))
    assert features.enabled("NodeDeclaredFeatures")
    assert not features.enabled("OpportunisticBatching")
    again = features.with_settings({"NodeDeclaredFeatures": False})
    assert not again.enabled("NodeDeclaredFeatures")
    assert again.describe() == "v1.35 with NodeDeclaredFeatures=false,OpportunisticBatching=false"
    # Gates the scheduler does not read are accepted as kube-scheduler accepts them.
    assert Features(V1_37, (("ImageVolume", True),)).settings == (("ImageVolume", True),)
    # An explicit setting wins over AllAlpha, whatever the order.
    explicit = Features(V1_35, (("NodeDeclaredFeatures", False), ("AllAlpha", False)))
    assert not explicit.enabled("NodeDeclaredFeatures")


def test_features_compare_by_release_and_settings() -> None:
    assert Features(V1_36) == Features(V1_36)
    assert Features(V1_36) != Features(V1_37)
    assert hash(Features(V1_36, (("OpportunisticBatching", False),))) == hash(
        Features(V1_36, (("OpportunisticBatching", False),))
    )


def test_unimplemented_defaults_are_reported_not_refused() -> None:
    assert Features(V1_35).unimplemented() == ()
    v136 = Features(V1_36).unimplemented()
    assert "DRADeviceBindingConditions=true" in v136
    assert "DRADeviceBindingConditions=true" in Features(V1_37).unimplemented()
    # Implemented since: partitionable devices, device taints, DeviceTaintRules, consumable capacity.
    assert not {"DRAPartitionableDevices=true", "DRADeviceTaints=true", "DRAConsumableCapacity=true"} & set(
        v136
    )
    assert "DRADeviceTaintRules=true" not in Features(V1_37).unimplemented()


def test_only_scheduler_gates_are_read() -> None:
    with pytest.raises(KeyError):
        Features(V1_37).enabled("ImageVolume")


def test_v135_is_the_baseline_of_every_ungated_change() -> None:
    """Each Behaviour switch is a change a later release made: all off in v1.35, and on from
    the release CHANGED_IN names."""
    assert not any(dataclasses.astuple(Behaviour.of(V1_35)))
    for name, since in CHANGED_IN.items():
        assert [getattr(Features(v).behaviour, name) for v in SUPPORTED_VERSIONS] == [
            v >= since for v in SUPPORTED_VERSIONS
        ]
    assert Features(V1_36).behaviour.balanced_allocation_scores_improvement
    assert not Features(V1_36).behaviour.node_name_pre_filter
