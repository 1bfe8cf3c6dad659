"""validate's API-server half: the CRD schema (unknown fields, defaults, types, bounds, list
maps, names) and the CEL rules, including every rule our CRDs carry."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from policy_scheduler.validate.cel import check_rules, unsupported_functions
from policy_scheduler.validate.objects import check_object, crd_schemas
from policy_scheduler.validate.report import CEL, SCHEMA

API = "scheduling.policy-scheduler.io/v1alpha1"


def obj(kind: str, spec: Any, name: str = "x") -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def errors(kind: str, spec: Any, name: str = "x") -> list[tuple[str, str, str]]:
    return check_object(kind, obj(kind, spec, name)).errors


def fields(kind: str, spec: Any, name: str = "x") -> list[tuple[str, str]]:
    return [(f, s) for f, _, s in errors(kind, spec, name)]


# Object kind, spec, expected (field, stage) list: one case per schema keyword and per CEL rule.
CASES: list[tuple[str, str, Any, list[tuple[str, str]]]] = [
    ("unknown-field", "SchedulingProfile", {"foo": 1}, [("spec.foo", SCHEMA)]),
    (
        "unknown-nested-field",
        "EvictionPolicy",
        {"rateLimit": {"perHour": 1}},
        [("spec.rateLimit.perHour", SCHEMA)],
    ),
    (
        "type",
        "SchedulingProfile",
        {"percentageOfNodesToScore": "50"},
        [("spec.percentageOfNodesToScore", SCHEMA)],
    ),
    (
        "maximum",
        "SchedulingProfile",
        {"percentageOfNodesToScore": 101},
        [("spec.percentageOfNodesToScore", SCHEMA)],
    ),
    (
        "minimum",
        "SchedulingProfile",
        {"podInitialBackoffSeconds": 0},
        [("spec.podInitialBackoffSeconds", SCHEMA)],
    ),
    ("pattern", "SchedulingProfile", {"schedulerName": "Not_DNS"}, [("spec.schedulerName", SCHEMA)]),
    # As the server does, an empty name fails both minLength and the pattern.
    ("min-length", "SchedulingProfile", {"schedulerName": ""}, [("spec.schedulerName", SCHEMA)] * 2),
    ("enum", "EvictionPolicy", {"budgetMode": "Sometimes"}, [("spec.budgetMode", SCHEMA)]),
    (
        "required",
        "SchedulingProfile",
        {"pluginConfig": [{"args": {}}]},
        [("spec.pluginConfig[0].name", SCHEMA)],
    ),
    ("max-items", "EvictionPolicy", {"protected": [{"podSelector": {}}] * 65}, [("spec.protected", SCHEMA)]),
    (
        "list-map-duplicate-key",
        "SchedulingProfile",
        {"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]},
        [("spec.pluginConfig[1]", SCHEMA)],
    ),
    ("required-spec", "PriorityClassMirror", None, [("spec", SCHEMA)]),
    (
        "cel-backoff-order",
        "SchedulingProfile",
        {"podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 5},
        [("spec.podMaxBackoffSeconds", CEL)],
    ),
    (
        "cel-one-queue-sort",
        "SchedulingProfile",
        {"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}, {"name": "Other"}]}}},
        [("spec.plugins.queueSort.enabled", CEL)],
    ),
    ("cel-selector-set", "EvictionPolicy", {"protected": [{}]}, [("spec.protected[0]", CEL)]),
    (
        "cel-values-with-in",
        "EvictionPolicy",
        {"protected": [{"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]},
        [("spec.protected[0].podSelector.matchExpressions[0].values", CEL)],
    ),
    (
        "cel-values-with-exists",
        "EvictionPolicy",
        {
            "protected": [
                {
                    "namespaceSelector": {
                        "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]
                    }
                }
            ]
        },
        [("spec.protected[0].namespaceSelector.matchExpressions[0].values", CEL)],
    ),
    (
        # evictionsPerMinute is defaulted before the rule runs, as the API server does.
        "cel-sees-defaults",
        "EvictionPolicy",
        {"rateLimit": {"perNamespacePerMinute": 100000}},
        [("spec.rateLimit.perNamespacePerMinute", CEL)],
    ),
    (
        "cel-per-node",
        "EvictionPolicy",
        {"rateLimit": {"evictionsPerMinute": 5, "perNodePerMinute": 6}},
        [("spec.rateLimit.perNodePerMinute", CEL)],
    ),
]


@pytest.mark.parametrize(("case", "kind", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_schema_and_rules(case: str, kind: str, spec: Any, expected: list[tuple[str, str]]) -> None:
    body = obj(kind, spec)
    if spec is None:
        del body["spec"]
    assert [(f, s) for f, _, s in check_object(kind, body).errors] == expected


def test_root_rule_on_the_name() -> None:
    assert errors("PriorityClassMirror", {"value": 1}, "system-mine") == [
        (
            "",
            "names with the 'system-' prefix are reserved for system priority classes",
            CEL,
        )
    ]


def test_metadata_name() -> None:
    assert fields("EvictionPolicy", {}, "Bad_Name") == [("metadata.name", SCHEMA)]
    body = obj("EvictionPolicy", {})
    del body["metadata"]
    assert [(f, s) for f, _, s in check_object("EvictionPolicy", body).errors] == [("metadata.name", SCHEMA)]


def test_type_errors_stop_rules_as_the_server_does() -> None:
    # hasBlockingErr: with a type error the CEL rules are not run (their verdict would be moot).
    spec = {"podInitialBackoffSeconds": "10", "podMaxBackoffSeconds": 5}
    assert fields("SchedulingProfile", spec) == [("spec.podInitialBackoffSeconds", SCHEMA)]


def test_non_blocking_errors_still_run_rules() -> None:
    spec = {"percentageOfNodesToScore": 101, "podInitialBackoffSeconds": 10, "podMaxBackoffSeconds": 5}
    assert fields("SchedulingProfile", spec) == [
        ("spec.percentageOfNodesToScore", SCHEMA),
        ("spec.podMaxBackoffSeconds", CEL),
    ]


def test_status_is_ignored_and_defaults_are_stored() -> None:
    checked = check_object("EvictionPolicy", {**obj("EvictionPolicy", {}), "status": {"bogus": True}})
    assert checked.errors == []
    assert "status" not in checked.body
    assert checked.body["spec"]["rateLimit"]["evictionsPerMinute"] > 0


def test_args_keep_unknown_fields_for_the_operator() -> None:
    # x-kubernetes-preserve-unknown-fields: the server keeps them; the operator's args model judges.
    assert (
        fields(
            "SchedulingProfile", {"pluginConfig": [{"name": "Out-Of-Tree", "args": {"any": {"thing": 1}}}]}
        )
        == []
    )


def test_fractions_are_not_integers() -> None:
    assert fields("SchedulingProfile", {"percentageOfNodesToScore": 50.5}) == [
        ("spec.percentageOfNodesToScore", SCHEMA)
    ]


# ---- CEL support --------------------------------------------------------------------------------------


def _rules(schema: Mapping[str, Any]) -> Iterator[str]:
    for rule in schema.get("x-kubernetes-validations") or ():
        yield rule["rule"]
    for sub in (schema.get("properties") or {}).values():
        yield from _rules(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from _rules(schema[key])


ALL_RULES = sorted({rule for schema in crd_schemas().values() for rule in _rules(schema)})


def test_the_crds_have_rules_to_check() -> None:
    # docs/validate.md lists them; a new rule must pass the support check below.
    assert len(ALL_RULES) >= 7


@pytest.mark.parametrize("rule", ALL_RULES)
def test_every_rule_of_our_crds_is_supported_offline(rule: str) -> None:
    assert unsupported_functions(rule) == []


def test_an_unsupported_function_is_reported_not_passed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-validations": [{"rule": "self.items.isSorted()"}]}
        },
    }
    found = check_rules({"spec": {"items": [2, 1]}}, schema)
    assert len(found) == 1
    assert found[0].path == "spec"
    assert "CEL function(s) isSorted not supported" in found[0].message


def test_function_names_in_string_literals_are_not_calls() -> None:
    assert unsupported_functions("self.name != 'quantity(1)' && size(self.name) > 0") == []
    assert unsupported_functions("quantity(self.q).isGreaterThan(quantity('1'))") == [
        "isGreaterThan",
        "quantity",
    ]


def test_a_missing_key_fails_the_rule() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.x > 1", "message": "x"}]}
    found = check_rules({}, schema)
    assert len(found) == 1
    assert "no such member" in found[0].message


def test_transition_rules_do_not_apply_to_creation() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    assert check_rules({"a": 1}, schema) == []
