"""The generated CRDs: committed files are current, schemas are structural and documented, and
the schemas agree with the pydantic models on what is valid."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from policy_scheduler.policy import constants as c
from policy_scheduler.policy.crdgen import RESOURCES, Resource, build_crd, render_crds, stale_crds
from tests.paths import REPO

CRD_DIR = REPO / "crds"
BY_KIND = {r.kind: r for r in RESOURCES}


def schema_of(resource: Resource) -> dict[str, Any]:
    """The resource's openAPIV3Schema (cached: treat as read-only)."""
    return _schema(resource.kind)


@cache
def _schema(kind: str) -> dict[str, Any]:
    root: dict[str, Any] = build_crd(BY_KIND[kind])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return root


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}.{name}")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}{{}}")


# ---- the committed files --------------------------------------------------------------------------


def test_committed_crds_are_current() -> None:
    assert stale_crds(CRD_DIR) == [], "run: python -m policy_scheduler.policy.crdgen --write crds/"
    assert sorted(p.name for p in CRD_DIR.glob("*.yaml")) == sorted(render_crds())


def test_files_parse_to_the_built_crds() -> None:
    for resource in RESOURCES:
        assert yaml.safe_load(render_crds()[resource.filename]) == build_crd(resource)


# ---- shape of the CRDs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "plural", "short_names"),
    [
        ("SchedulingProfile", "schedulingprofiles", ["sp", "schedprof"]),
        ("EvictionPolicy", "evictionpolicies", ["evp"]),
        ("PriorityClassMirror", "priorityclassmirrors", ["pcm"]),
    ],
)
def test_names_scope_and_subresources(kind: str, plural: str, short_names: list[str]) -> None:
    crd = build_crd(BY_KIND[kind])
    assert crd["metadata"]["name"] == f"{plural}.scheduling.policy-scheduler.io"
    spec = crd["spec"]
    assert spec["group"] == c.GROUP == "scheduling.policy-scheduler.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == kind
    assert spec["names"]["plural"] == plural
    assert spec["names"]["shortNames"] == short_names
    assert spec["names"]["categories"] == ["policy-scheduler"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_scheduling_profile_printer_columns() -> None:
    columns = build_crd(BY_KIND["SchedulingProfile"])["spec"]["versions"][0]["additionalPrinterColumns"]
    default = [(col["name"], col["jsonPath"]) for col in columns if not col.get("priority")]
    assert default == [
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Accepted", '.status.conditions[?(@.type=="Accepted")].status'),
        # Generation != InForce: the stored spec was rejected and an older one is in force.
        ("Generation", ".metadata.generation"),
        ("InForce", ".status.lastAcceptedGeneration"),
        ("Scheduler", ".spec.schedulerName"),
        ("Scheduled", ".status.scheduled"),
        ("Pending", ".status.pending"),
        ("Age", ".metadata.creationTimestamp"),
    ]


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_printer_columns_point_at_schema_fields(resource: Resource) -> None:
    schema = schema_of(resource)
    for column in build_crd(resource)["spec"]["versions"][0]["additionalPrinterColumns"]:
        path = column["jsonPath"]
        if path.startswith(".metadata"):
            continue
        node = schema
        for part in re.sub(r"\[\?.*?\]", "", path).strip(".").split("."):
            node = node["items"] if node.get("type") == "array" else node
            assert part in node["properties"], (resource.kind, path)
            node = node["properties"][part]
        assert "description" in column


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_every_property_has_a_description(resource: Resource) -> None:
    missing = [
        path
        for path, node in nodes(schema_of(resource))
        if path != ".metadata"
        and path.rsplit(".", 1)[-1]
        and not node.get("description")
        and not path.endswith(("[]", "{}"))
    ]
    assert missing == []


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.kind)
def test_schema_is_structural(resource: Resource) -> None:
    text = yaml.safe_dump(schema_of(resource))
    assert "$ref" not in text
    assert "$defs" not in text
    for path, node in nodes(schema_of(resource)):
        for forbidden in ("anyOf", "oneOf", "allOf", "not", "$ref", "nullable", "title"):
            assert forbidden not in node, (path, forbidden)
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        assert node.get("type") or preserve, path
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        if node.get("type") == "object" and not preserve and "additionalProperties" not in node:
            assert "properties" in node or path == ".metadata", path
        if "default" in node:
            assert validate(node["default"], node) == [], path


def test_free_form_fields_are_only_plugin_args() -> None:
    preserved = [
        (r.kind, path)
        for r in RESOURCES
        for path, node in nodes(schema_of(r))
        if node.get("x-kubernetes-preserve-unknown-fields")
    ]
    # lastAcceptedSpec: a verbatim copy of a spec the apiserver and the operator accepted; the
    # operator validates it again when it reads it back.
    assert preserved == [
        ("SchedulingProfile", ".spec.pluginConfig[].args"),
        ("SchedulingProfile", ".status.lastAcceptedSpec"),
        ("EvictionPolicy", ".status.lastAcceptedSpec"),
        ("PriorityClassMirror", ".status.lastAcceptedSpec"),
    ]


def test_cel_rules() -> None:
    def rules(kind: str, path: str) -> list[str]:
        node = dict(nodes(schema_of(BY_KIND[kind])))[path]
        return [rule["rule"] for rule in node.get("x-kubernetes-validations", [])]

    assert rules("SchedulingProfile", ".spec") == [
        "!has(self.podInitialBackoffSeconds) || !has(self.podMaxBackoffSeconds) "
        "|| self.podMaxBackoffSeconds >= self.podInitialBackoffSeconds"
    ]
    assert "size(self.queueSort.enabled) <= 1" in rules("SchedulingProfile", ".spec.plugins")[0]
    assert len(rules("EvictionPolicy", ".spec.rateLimit")) == 2
    assert rules("EvictionPolicy", ".spec.protected[]") == [
        "has(self.namespaceSelector) || has(self.podSelector)"
    ]
    assert rules("PriorityClassMirror", "") == ["!self.metadata.name.startsWith('system-')"]


# ---- a tiny structural validator: type, enum, bounds, lengths, pattern, required, unknown fields ----


def validate(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """What the apiserver's schema validation (without CEL) would report, roughly."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return [] if isinstance(value, dict) else [f"{path}: must be an object"]
    kind: str = schema["type"]  # every structural schema node has one
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    if not checks[kind](value):
        return [f"{path}: must be {kind}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: unsupported value")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: below minimum")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: above maximum")
    if kind == "string":
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            errors.append(f"{path}: bad length")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: does not match pattern")
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(value)
            except ValueError:
                errors.append(f"{path}: not a date-time")
    if kind == "array":
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{path}: bad number of items")
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            seen = [tuple(item.get(k) for k in keys) for item in value if isinstance(item, dict)]
            if len(seen) != len(set(seen)):
                errors.append(f"{path}: duplicate map-list key")
        for i, item in enumerate(value):
            errors.extend(validate(item, schema["items"], f"{path}[{i}]"))
    if kind == "object":
        props = schema.get("properties", {})
        errors.extend(f"{path}.{key}: required" for key in schema.get("required", []) if key not in value)
        for key, item in value.items():
            if key in props:
                errors.extend(validate(item, props[key], f"{path}.{key}"))
            elif isinstance(schema.get("additionalProperties"), dict):
                errors.extend(validate(item, schema["additionalProperties"], f"{path}.{key}"))
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}.{key}: unknown field")
    return errors


def spec_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = schema_of(BY_KIND[kind])["properties"]["spec"]
    return schema


def pydantic_ok(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


VALID: list[tuple[str, dict[str, Any]]] = [
    ("SchedulingProfile", {}),
    (
        "SchedulingProfile",
        {
            "schedulerName": "batch",
            "percentageOfNodesToScore": 100,
            "plugins": {
                "multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
                "score": {"disabled": [{"name": "*"}]},
                "queueSort": {"enabled": [{"name": "PrioritySort"}]},
            },
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
            ],
            "podInitialBackoffSeconds": 5,
            "podMaxBackoffSeconds": 5,
            "evictionPolicyName": "gentle",
        },
    ),
    ("EvictionPolicy", {}),
    (
        "EvictionPolicy",
        {
            "protected": [
                {"podSelector": {"matchLabels": {"app": "db"}}},
                {"namespaceSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
            ],
            "minProtectedPriority": 100,
            "budgetMode": "BestEffort",
            "dryRun": True,
            "maxGracePeriodSeconds": 0,
            "rateLimit": {"evictionsPerMinute": 5, "burst": 1, "maxInFlight": 1, "perNodePerMinute": 5},
        },
    ),
    ("PriorityClassMirror", {"value": 1000000000, "globalDefault": True, "preemptionPolicy": "Never"}),
    ("PriorityClassMirror", {"value": -2147483648, "description": "lowest"}),
]


@pytest.mark.parametrize(("kind", "spec"), VALID, ids=[f"{k}-{i}" for i, (k, _) in enumerate(VALID)])
def test_valid_specs_pass_both(kind: str, spec: dict[str, Any]) -> None:
    assert pydantic_ok(BY_KIND[kind].spec, spec)
    assert validate(spec, spec_schema(kind)) == []


# (kind, spec, schema rejects it without CEL, or the CEL rule message that rejects it)
INVALID: list[tuple[str, dict[str, Any], bool | str]] = [
    ("SchedulingProfile", {"schedulerName": ""}, True),
    ("SchedulingProfile", {"schedulerName": "UPPER"}, True),
    ("SchedulingProfile", {"percentageOfNodesToScore": -1}, True),
    ("SchedulingProfile", {"percentageOfNodesToScore": 101}, True),
    ("SchedulingProfile", {"percentageOfNodesToScore": "50"}, True),
    ("SchedulingProfile", {"plugins": {"score": {"enabled": [{"name": "A", "weight": 101}]}}}, True),
    ("SchedulingProfile", {"plugins": {"score": {"enabled": [{"weight": 1}]}}}, True),
    ("SchedulingProfile", {"plugins": {"scoring": {}}}, True),
    ("SchedulingProfile", {"pluginConfig": [{"args": {}}]}, True),
    ("SchedulingProfile", {"pluginConfig": [{"name": "A"}, {"name": "A"}]}, True),
    ("SchedulingProfile", {"podInitialBackoffSeconds": 0}, True),
    ("SchedulingProfile", {"unknown": 1}, True),
    (
        "SchedulingProfile",
        {"podInitialBackoffSeconds": 11},
        "podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "SchedulingProfile",
        {"podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 2},
        "podMaxBackoffSeconds must be greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "SchedulingProfile",
        {"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}},
        "only one queue sort plugin can be enabled",
    ),
    ("EvictionPolicy", {"budgetMode": "Never"}, True),
    ("EvictionPolicy", {"rateLimit": {"burst": 0}}, True),
    ("EvictionPolicy", {"rateLimit": {"maxInFlight": 0}}, True),
    ("EvictionPolicy", {"maxGracePeriodSeconds": -1}, True),
    (
        "EvictionPolicy",
        {"protected": [{"podSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}]},
        True,
    ),
    ("EvictionPolicy", {"protected": [{}]}, "set namespaceSelector, podSelector or both"),
    (
        "EvictionPolicy",
        {"protected": [{"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]},
        "values must be non-empty when operator is In or NotIn, and empty when it is Exists or DoesNotExist",
    ),
    (
        "EvictionPolicy",
        {"rateLimit": {"evictionsPerMinute": 1, "perNodePerMinute": 2}},
        "perNodePerMinute above evictionsPerMinute would never take effect",
    ),
    ("PriorityClassMirror", {}, True),
    ("PriorityClassMirror", {"value": 1000000001}, True),
    ("PriorityClassMirror", {"value": -2147483649}, True),
    ("PriorityClassMirror", {"value": 1, "preemptionPolicy": "Always"}, True),
    ("PriorityClassMirror", {"value": True}, True),
]


@pytest.mark.parametrize(
    ("kind", "spec", "schema_rejects"), INVALID, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(INVALID)]
)
def test_invalid_specs_fail_both(kind: str, spec: dict[str, Any], schema_rejects: bool | str) -> None:
    assert not pydantic_ok(BY_KIND[kind].spec, spec)
    if schema_rejects is True:
        assert validate(spec, spec_schema(kind)) != []
    else:  # rejected by a CEL rule, which this validator does not run: the rule must exist
        messages = [
            rule["message"]
            for _, node in nodes(spec_schema(kind))
            for rule in node.get("x-kubernetes-validations", [])
        ]
        assert schema_rejects in messages


# ---- property: whatever pydantic accepts, the schema accepts -------------------------------------


def sometimes(valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly `valid`, now and then `invalid`, so that whole documents are often valid."""
    return st.integers(0, 15).flatmap(lambda n: invalid if n == 0 else valid)


def instances(schema: dict[str, Any], unknown_keys: bool) -> st.SearchStrategy[Any]:
    """Values shaped by `schema` but sometimes just outside it: bounds +-2, bogus enum values,
    missing required fields, unknown fields, strings off the pattern."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2)
    kind = schema["type"]
    if "enum" in schema:
        return sometimes(st.sampled_from(schema["enum"]), st.just("Bogus"))
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", -50), schema.get("maximum", schema.get("minimum", -50) + 100)
        ints = sometimes(st.integers(low, high), st.sampled_from([low - 1, high + 1]))
        return ints if kind == "integer" else st.one_of(ints, st.floats(low, high, allow_nan=False))
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if schema.get("format") == "date-time":
            return st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
        if "pattern" in schema:
            return sometimes(st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,4})?", fullmatch=True), st.text(max_size=4))
        low, high = schema.get("minLength", 0), schema.get("maxLength", 8)
        text = st.text(alphabet="abcAB-_.0/*", min_size=low, max_size=min(high, 8))
        return sometimes(text, st.sampled_from(["", "x" * (high + 1)]))
    if kind == "array":
        return st.lists(instances(schema["items"], unknown_keys), max_size=3)
    if "additionalProperties" in schema:
        keys = sometimes(st.sampled_from(["app", "tier"]), st.just("-x"))
        return st.dictionaries(keys, instances(schema["additionalProperties"], unknown_keys), max_size=2)
    props = {k: instances(v, unknown_keys) for k, v in schema.get("properties", {}).items()}
    required = set(schema.get("required", []))
    base = st.fixed_dictionaries(
        {k: v for k, v in props.items() if k in required},
        optional={k: v for k, v in props.items() if k not in required},
    )
    extra = sometimes(st.just({}), st.just({"bogusField": 1})) if unknown_keys else st.just({})
    drop = sometimes(st.none(), st.sampled_from(sorted(required))) if required else st.none()
    return st.tuples(base, extra, drop).map(
        lambda t: {k: v for k, v in {**t[0], **t[1]}.items() if k != t[2]}
    )


PROPERTY_CASES: list[tuple[str, str, type[BaseModel], bool]] = [
    (r.kind, part, model, part == "spec")
    for r in RESOURCES
    for part, model in (("spec", r.spec), ("status", r.status))
]


@pytest.mark.parametrize(
    ("kind", "part", "model", "unknown_keys"), PROPERTY_CASES, ids=lambda v: str(getattr(v, "__name__", v))
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pydantic_valid_implies_schema_valid(
    kind: str, part: str, model: type[BaseModel], unknown_keys: bool, data: st.DataObject
) -> None:
    # Statuses tolerate unknown fields (the apiserver prunes them), so none are generated there.
    schema = schema_of(BY_KIND[kind])["properties"][part]
    value = data.draw(instances(schema, unknown_keys))
    if pydantic_ok(model, value):
        assert validate(value, schema) == [], value
