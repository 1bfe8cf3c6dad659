"""`policy-scheduler validate` agrees with the real API server about our CRDs: every object the
server refuses (schema or CEL rule) validate refuses at the same field, and the objects it stores
validate finds no schema problem in (the operator's own checks come on top, offline only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures_operator import apply_crds
from kubectl import Kubectl
from policy_scheduler.validate.command import validate_paths
from policy_scheduler.validate.report import SERVER_STAGES

API = "scheduling.policy-scheduler.io/v1alpha1"


def _obj(kind: str, name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def profile(name: str, spec: Any) -> dict[str, Any]:
    return _obj("SchedulingProfile", name, spec)


def policy(name: str, spec: Any) -> dict[str, Any]:
    return _obj("EvictionPolicy", name, spec)


def mirror(name: str, spec: Any) -> dict[str, Any]:
    return _obj("PriorityClassMirror", name, spec)


def expression(operator: str, values: list[str] | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"key": "tier", "operator": operator}
    if values is not None:
        item["values"] = values
    return item


# (case, object, the server refuses it)
SAMPLES: list[tuple[str, dict[str, Any], bool]] = [
    # CEL rules
    (
        "cel-backoff-order",
        profile("v-backoff", {"podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 5}),
        True,
    ),
    (
        "cel-one-queue-sort",
        profile(
            "v-qsort", {"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}, {"name": "X"}]}}}
        ),
        True,
    ),
    ("cel-selector-set", policy("v-selector", {"protected": [{}]}), True),
    (
        "cel-in-needs-values",
        policy("v-in", {"protected": [{"podSelector": {"matchExpressions": [expression("In")]}}]}),
        True,
    ),
    (
        "cel-exists-no-values",
        policy(
            "v-exists",
            {"protected": [{"namespaceSelector": {"matchExpressions": [expression("Exists", ["a"])]}}]},
        ),
        True,
    ),
    ("cel-defaulted-rate", policy("v-rate", {"rateLimit": {"perNamespacePerMinute": 100000}}), True),
    ("cel-per-node", policy("v-node", {"rateLimit": {"evictionsPerMinute": 5, "perNodePerMinute": 6}}), True),
    ("cel-system-name", mirror("system-v", {"value": 1}), True),
    # schema
    ("unknown-field", profile("v-unknown", {"bogus": 1}), True),
    ("maximum", profile("v-max", {"percentageOfNodesToScore": 101}), True),
    ("pattern", profile("v-pattern", {"schedulerName": "Not_DNS"}), True),
    ("type", mirror("v-type", {"value": "ten"}), True),
    ("enum", policy("v-enum", {"budgetMode": "Sometimes"}), True),
    ("required-field", profile("v-required", {"pluginConfig": [{"args": {}}]}), True),
    (
        "required-spec",
        {"apiVersion": API, "kind": "PriorityClassMirror", "metadata": {"name": "v-nospec"}},
        True,
    ),
    (
        "list-map-duplicate",
        profile("v-dup", {"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]}),
        True,
    ),
    ("max-items", policy("v-items", {"protected": [{"podSelector": {}}] * 65}), True),
    ("name", policy("V_Bad", {}), True),
    # stored by the server: only the operator (offline: validate) refuses the first two
    (
        "operator-args",
        profile("v-args", {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"bogus": 1}}]}),
        False,
    ),
    (
        "operator-label",
        policy("v-label", {"protected": [{"podSelector": {"matchLabels": {"a": "-bad-"}}}]}),
        False,
    ),
    ("valid-profile", profile("v-ok", {"schedulerName": "v-ok", "percentageOfNodesToScore": 40}), False),
    (
        "valid-policy",
        policy("v-ok", {"budgetMode": "Enforce", "rateLimit": {"evictionsPerMinute": 30}}),
        False,
    ),
    ("valid-mirror", mirror("v-ok", {"value": 1000, "preemptionPolicy": "Never"}), False),
]


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl) -> Kubectl:
    apply_crds(kubectl)
    return kubectl


def test_samples_cover_every_rule_and_enough_refusals() -> None:
    refused = [case for case, _, rejected in SAMPLES if rejected]
    assert len(refused) >= 10
    assert sum(case.startswith("cel-") for case in refused) == 8


@pytest.mark.parametrize(("case", "obj", "rejected"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_validate_agrees_with_the_api_server(
    crds: Kubectl, tmp_path: Path, case: str, obj: dict[str, Any], rejected: bool
) -> None:
    path = tmp_path / f"{case}.yaml"
    path.write_text(yaml.safe_dump(obj), encoding="utf-8")
    server = crds.run("apply", "--dry-run=server", "-f", str(path), check=False)
    assert (server.returncode != 0) == rejected, server.stderr or server.stdout

    problems = [p for p in validate_paths([str(path)]).problems if p.stage in SERVER_STAGES]
    assert bool(problems) == rejected, problems
    for problem in problems:
        if problem.field:  # a root rule is reported by the server at <nil>
            assert problem.field in server.stderr, (problem, server.stderr)


def test_validate_reads_what_kubectl_get_prints(crds: Kubectl, tmp_path: Path) -> None:
    """Objects as the server returns them (managedFields, uid, defaults, a List) are valid."""
    stored = [
        profile(
            "v-roundtrip", {"schedulerName": "v-roundtrip-scheduler", "evictionPolicyName": "v-roundtrip"}
        ),
        policy("v-roundtrip", {"dryRun": True}),
        mirror("v-roundtrip", {"value": 10}),
    ]
    crds.create(*stored)
    try:
        dump = crds.run(
            "get",
            "schedulingprofiles/v-roundtrip",
            "evictionpolicies/v-roundtrip",
            "priorityclassmirrors/v-roundtrip",
            "--show-managed-fields",
            "-o",
            "yaml",
        ).stdout
        assert "managedFields" in dump
        assert "kind: List" in dump
        path = tmp_path / "dump.yaml"
        path.write_text(dump, encoding="utf-8")
        report = validate_paths([str(path)])
        assert report.problems == []
        assert len(report.objects) == 3
    finally:
        for obj in stored:
            crds.delete(obj["kind"].lower(), obj["metadata"]["name"])


def test_simulate_reads_a_cluster_dump(kubectl: Kubectl, tmp_path: Path) -> None:
    """`kubectl get ... -o yaml` of a real cluster, with kinds simulate does not use, exits 0."""
    import subprocess
    import sys

    dump = kubectl.run(
        "get",
        "nodes,pods,deployments,replicasets,services,configmaps,priorityclasses",
        "-A",
        "--show-managed-fields",
        "-o",
        "yaml",
    ).stdout
    path = tmp_path / "cluster.yaml"
    path.write_text(dump, encoding="utf-8")
    cmd = [sys.executable, "-m", "policy_scheduler", "simulate", str(path), "-o", "json"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "note: skipped kinds simulate does not use: ConfigMap" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("summary: ")


def test_unknown_fields_under_warn_validation(crds: Kubectl, tmp_path: Path) -> None:
    """kubectl --validate=warn: the server drops the field, says so, and judges the rest."""
    path = tmp_path / "unknown.yaml"
    path.write_text(yaml.safe_dump(profile("v-warn", {"bogus": 1, "percentageOfNodesToScore": 50})))
    server = crds.run("apply", "--dry-run=server", "--validate=warn", "-f", str(path), check=False)
    assert server.returncode == 0, server.stderr
    assert 'unknown field "spec.bogus"' in server.stderr
    report = validate_paths([str(path)], field_validation="warn")
    assert report.errors == []
    assert [(p.field, p.severity) for p in report.problems] == [("spec.bogus", "warning")]
