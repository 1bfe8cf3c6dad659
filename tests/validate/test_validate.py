"""`policy-scheduler validate`: the operator's checks of each kind with their field paths,
cross-file references, input handling (files, directories, stdin, Lists), output and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.app.cli import main
from policy_scheduler.validate.command import validate_paths
from policy_scheduler.validate.report import CEL, INPUT, OPERATOR, REFERENCE, SCHEMA
from tests.paths import REPO

API = "scheduling.policy-scheduler.io/v1alpha1"
EXAMPLES = REPO / "examples"


def profile(spec: dict[str, Any], name: str = "p") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "SchedulingProfile", "metadata": {"name": name}, "spec": spec}


def policy(spec: dict[str, Any], name: str = "e") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "EvictionPolicy", "metadata": {"name": name}, "spec": spec}


def mirror(spec: dict[str, Any], name: str = "m") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "PriorityClassMirror", "metadata": {"name": name}, "spec": spec}


def write(tmp_path: Path, docs: list[dict[str, Any]], name: str = "in.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return path


def found(paths: list[Path]) -> list[tuple[str, str, str]]:
    return [(p.object, p.field, p.stage) for p in validate_paths([str(p) for p in paths]).problems]


def args(plugin: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"pluginConfig": [{"name": plugin, "args": value}]}


# Every class of error the operator finds (and the API server does not): object, field, message.
OPERATOR_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "plugin-args-enum",
        profile(args("NodeResourcesFit", {"scoringStrategy": {"type": "Bogus"}})),
        "spec.pluginConfig[0].args.scoringStrategy.type",
        "unsupported value 'Bogus'",
    ),
    (
        "plugin-args-unknown-field",
        profile(args("NodeResourcesFit", {"bogus": 1})),
        "spec.pluginConfig[0].args.bogus",
        "unknown field",
    ),
    (
        "plugin-args-wrong-kind",
        profile(args("NodeResourcesFit", {"kind": "InterPodAffinityArgs"})),
        "spec.pluginConfig[0].args.kind",
        "must be of kind NodeResourcesFitArgs",
    ),
    (
        "plugin-args-across-fields",
        profile(
            args("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})
        ),
        "spec.pluginConfig[0].args.minCandidateNodesPercentage",
        "cannot be zero at the same time as minCandidateNodesAbsolute",
    ),
    (
        "plugin-args-nested-list",
        profile(
            args(
                "PodTopologySpread",
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                    ],
                },
            )
        ),
        "spec.pluginConfig[0].args.defaultConstraints[0].maxSkew",
        "not in valid range",
    ),
    (
        "unknown-plugin",
        profile({"plugins": {"score": {"enabled": [{"name": "NoSuchPlugin"}]}}}),
        "spec.plugins.score.enabled[0].name",
        'unknown plugin "NoSuchPlugin"',
    ),
    (
        "plugin-at-wrong-extension-point",
        profile({"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}}),
        "spec.plugins.filter.enabled[0].name",
        "does not implement the filter extension point",
    ),
    (
        "plugin-enabled-twice",
        profile({"plugins": {"score": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}}}),
        "spec.plugins.score.enabled[1].name",
        "is enabled more than once",
    ),
    (
        "no-bind-plugin",
        profile({"plugins": {"bind": {"disabled": [{"name": "*"}]}}}),
        "spec.plugins.bind",
        "at least one bind plugin must be enabled",
    ),
    (
        "label-value",
        policy({"protected": [{"podSelector": {"matchLabels": {"a": "-bad-"}}}]}),
        "spec.protected[0].podSelector.matchLabels.a",
        "invalid label value '-bad-'",
    ),
    (
        "selector-expression-key",
        policy(
            {
                "protected": [
                    {"namespaceSelector": {"matchExpressions": [{"key": "a b", "operator": "Exists"}]}}
                ]
            }
        ),
        "spec.protected[0].namespaceSelector.matchExpressions[0].key",
        "invalid label key 'a b'",
    ),
]


@pytest.mark.parametrize(
    ("case", "obj", "field", "message"), OPERATOR_ERRORS, ids=[c[0] for c in OPERATOR_ERRORS]
)
def test_operator_errors_name_the_field(
    tmp_path: Path, case: str, obj: dict[str, Any], field: str, message: str
) -> None:
    path = write(tmp_path, [obj])
    problems = validate_paths([str(path)]).problems
    ident = f"{obj['kind']}/{obj['metadata']['name']}"
    assert [(p.object, p.field, p.stage) for p in problems] == [(ident, field, OPERATOR)]
    assert message in problems[0].message


def test_the_operator_checks_only_what_the_server_would_store(tmp_path: Path) -> None:
    # A schema error stops there: the operator never sees the object (no duplicate reports).
    obj = profile({"percentageOfNodesToScore": 101, **args("NodeResourcesFit", {"bogus": 1})})
    assert found([write(tmp_path, [obj])]) == [
        ("SchedulingProfile/p", "spec.percentageOfNodesToScore", SCHEMA)
    ]


# ---- references across files ---------------------------------------------------------------------


def test_missing_eviction_policy_is_an_error_on_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, [profile({"evictionPolicyName": "nope"})])
    problems = validate_paths([str(path)]).problems
    assert [(p.object, p.field, p.stage) for p in problems] == [
        ("SchedulingProfile/p", "spec.evictionPolicyName", REFERENCE)
    ]
    assert problems[0].message == "no EvictionPolicy named 'nope' among the validated files"


def test_eviction_policy_in_another_file_resolves_the_reference(tmp_path: Path) -> None:
    a = write(tmp_path, [profile({"evictionPolicyName": "careful"})], "a.yaml")
    b = write(tmp_path, [policy({"dryRun": True}, "careful")], "b.yaml")
    assert found([a, b]) == []
    assert found([tmp_path]) == []  # the directory holds both


def test_reference_to_an_invalid_eviction_policy(tmp_path: Path) -> None:
    bad = policy({"protected": [{"podSelector": {"matchLabels": {"a": "-bad-"}}}]}, "bad")
    path = write(tmp_path, [profile({"evictionPolicyName": "bad"}), bad])
    assert found([path]) == [  # in input order, each object's problems together
        ("SchedulingProfile/p", "spec.evictionPolicyName", REFERENCE),
        ("EvictionPolicy/bad", "spec.protected[0].podSelector.matchLabels.a", OPERATOR),
    ]


def test_reference_is_checked_even_when_the_profile_is_rejected_for_something_else(tmp_path: Path) -> None:
    obj = profile({"evictionPolicyName": "nope", **args("NodeResourcesFit", {"bogus": 1})})
    assert [f for _, f, _ in found([write(tmp_path, [obj])])] == [
        "spec.pluginConfig[0].args.bogus",
        "spec.evictionPolicyName",
    ]


def test_two_profiles_serving_one_scheduler_name(tmp_path: Path) -> None:
    a = write(tmp_path, [profile({"schedulerName": "fast"}, "first")], "a.yaml")
    b = write(tmp_path, [profile({"schedulerName": "fast"}, "second")], "b.yaml")
    problems = validate_paths([str(a), str(b)]).problems
    assert [(p.file, p.object, p.field) for p in problems] == [
        (str(b), "SchedulingProfile/second", "spec.schedulerName")
    ]
    assert problems[0].message == "'fast' is already served by SchedulingProfile 'first'"


def test_the_default_scheduler_name_counts_too(tmp_path: Path) -> None:
    path = write(tmp_path, [profile({}, "a"), profile({"schedulerName": "default-scheduler"}, "b")])
    assert found([path]) == [("SchedulingProfile/b", "spec.schedulerName", REFERENCE)]


def test_an_object_defined_twice(tmp_path: Path) -> None:
    path = write(tmp_path, [policy({}, "x"), policy({"dryRun": True}, "x")])
    assert found([path]) == [("EvictionPolicy/x", "metadata.name", REFERENCE)]


# ---- input -----------------------------------------------------------------------------------------


def test_the_examples_are_valid() -> None:
    report = validate_paths([str(EXAMPLES)])
    assert report.problems == []
    kinds = {ident.split("/")[0] for _, ident in report.objects}
    assert kinds == {"SchedulingProfile", "EvictionPolicy", "PriorityClassMirror"}


def test_list_kinds_and_multi_document_files(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [profile({"percentageOfNodesToScore": 101}, "a")]}
    typed = {"apiVersion": API, "kind": "SchedulingProfileList", "items": [profile({}, "b")]}
    path = write(tmp_path, [listed, typed, policy({}, "c")])
    report = validate_paths([str(path)])
    assert [o for _, o in report.objects] == [
        "SchedulingProfile/a",
        "SchedulingProfile/b",
        "EvictionPolicy/c",
    ]
    assert [(p.object, p.field) for p in report.problems] == [
        ("SchedulingProfile/a", "spec.percentageOfNodesToScore")
    ]


def test_other_kinds_are_skipped_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    foreign = {"apiVersion": "example.com/v1", "kind": "SchedulingProfile", "metadata": {"name": "theirs"}}
    path = write(tmp_path, [deployment, foreign, profile({})])
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        f"note: {path}: skipped 2 object(s) that are not policy kinds: Deployment/web, SchedulingProfile/theirs"
        in err
    )
    assert "validated 1 policy object(s) in 1 file(s): 0 problem(s)" in err


def test_an_unserved_version_of_our_group(tmp_path: Path) -> None:
    obj = {**profile({}), "apiVersion": "scheduling.policy-scheduler.io/v1"}
    assert found([write(tmp_path, [obj])]) == [("SchedulingProfile/p", "apiVersion", INPUT)]


def test_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [\n")
    assert main(["validate", str(bad), str(write(tmp_path, [profile({})]))]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}: invalid YAML")
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(profile({"percentageOfNodesToScore": -1}))))
    assert main(["validate", "-"]) == 1
    assert capsys.readouterr().out.startswith("<stdin>:SchedulingProfile/p:spec.percentageOfNodesToScore: ")


def test_directories_are_walked_for_yaml_and_json(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub" / "p.json").write_text(json.dumps(profile({"percentageOfNodesToScore": 101}, "j")))
    write(tmp_path / "sub", [profile({"percentageOfNodesToScore": 101}, "y")], "p.yml")
    write(tmp_path / ".git", [profile({"percentageOfNodesToScore": 101}, "hidden")], "p.yaml")
    (tmp_path / "notes.txt").write_text("not yaml: [")
    assert sorted(o for o, _, _ in found([tmp_path])) == ["SchedulingProfile/j", "SchedulingProfile/y"]


# ---- output -----------------------------------------------------------------------------------------


def test_text_lines_are_file_object_field_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, [policy({"rateLimit": {"evictionsPerMinute": 10, "perNodePerMinute": 20}})])
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out == (
        f"{path}:EvictionPolicy/e:spec.rateLimit.perNodePerMinute: "
        "perNodePerMinute above evictionsPerMinute would never take effect\n"
    )


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, [profile({"percentageOfNodesToScore": 101}, "bad"), policy({}, "good")])
    assert main(["validate", "-o", "json", str(path)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["valid", "problems", "objects", "skipped"]
    assert data["valid"] is False
    assert data["problems"] == [
        {
            "file": str(path),
            "object": "SchedulingProfile/bad",
            "field": "spec.percentageOfNodesToScore",
            "message": "Invalid value: 101: should be less than or equal to 100",
            "stage": SCHEMA,
            "severity": "error",
        }
    ]
    assert data["objects"] == [
        {"file": str(path), "object": "SchedulingProfile/bad", "valid": False},
        {"file": str(path), "object": "EvictionPolicy/good", "valid": True},
    ]


def test_cel_stage_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, [mirror({"value": 1}, "system-x")])
    assert found([path]) == [("PriorityClassMirror/system-x", "", CEL)]


def test_yaml_that_is_not_kubernetes_objects_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "workflow.yaml").write_text("on: push\njobs: {}\n")
    (tmp_path / "hooks.yaml").write_text("- id: x\n  entry: y\n")
    write(tmp_path, [profile({})])
    assert main(["validate", str(tmp_path)]) == 0
    assert "skipped" not in capsys.readouterr().err.split("validated")[0]


def test_unknown_fields_as_kubectl_validate_warn_and_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Dropped, the field no longer hides a rule violation: the CEL rule still runs on the rest.
    path = write(tmp_path, [profile({"bogus": 1, "podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 5})])
    assert found([path]) == [
        ("SchedulingProfile/p", "spec.bogus", SCHEMA),
        ("SchedulingProfile/p", "spec.podMaxBackoffSeconds", CEL),
    ]

    clean = write(tmp_path, [profile({"bogus": 1})], "clean.yaml")
    assert main(["validate", "--validate", "warn", str(clean)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{clean}:SchedulingProfile/p:spec.bogus: warning: unknown field: the API server drops it\n"
    assert "1 warning(s)" in err
    assert main(["validate", "--validate", "ignore", "-o", "json", str(clean)]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []
    assert main(["validate", str(clean)]) == 1
