"""Hypothesis strategies for hostile policy specs, shared by the unit fuzz tests and the e2e sample.

Specs are JSON-shaped (what the API server or a watch hands the operator): valid-ish ones built
from the real field names, plugin names and plugin args fields, then mutated with wrong types,
unknown names, huge numbers, deep nesting, unicode, empty strings and duplicated entries.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from policy_scheduler.policy.plugin_args import ARGS_MODELS
from policy_scheduler.scheduler.config import EXTENSION_POINTS, MULTI_POINT
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names

Json = Any

POINTS = [MULTI_POINT, *EXTENSION_POINTS]
PLUGINS = sorted(implemented_plugin_names())

HUGE_INTS = st.sampled_from([2**31, 2**31 - 1, -(2**31) - 1, 2**53 + 1, 2**63, -(2**63) - 1, 10**30])
# Mostly plausible: a spec with one bad number gets past the rest of the checks to show it.
SMALL = st.integers(0, 100)
INTS = st.one_of(SMALL, SMALL, st.integers(-3, 200), HUGE_INTS, st.integers())
TEXT = st.one_of(
    st.sampled_from(["", " ", "*", "a", "x" * 254, "default-scheduler", "Ünïcødé", "名前", "\u202e", "a.b"]),
    st.text(max_size=20),
)
SCALARS = st.one_of(st.none(), st.booleans(), INTS, st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON: st.SearchStrategy[Json] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def deep(draw: st.DrawFn) -> Json:
    """A value nested 20-300 levels deep in lists and objects."""
    value: Json = draw(SCALARS)
    for _ in range(draw(st.integers(20, 300))):
        value = [value] if draw(st.booleans()) else {draw(TEXT): value}
    return value


HOSTILE: st.SearchStrategy[Json] = st.one_of(JSON, deep())


def _field_names(model: type[Any]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


ARGS_FIELDS = {name: _field_names(model) for name, model in ARGS_MODELS.items()}
RESOURCE_NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "example.com/foo", "", "CPU", "a" * 300])


def _valid_arg_value(field: str) -> st.SearchStrategy[Json]:
    """Plausible values for the args fields the plugins read."""
    resources = st.lists(st.fixed_dictionaries({"name": RESOURCE_NAMES, "weight": INTS}), max_size=4)
    shape = st.lists(st.fixed_dictionaries({"utilization": INTS, "score": INTS}), max_size=4)
    plausible: dict[str, st.SearchStrategy[Json]] = {
        "scoringStrategy": st.fixed_dictionaries(
            {},
            optional={
                "type": st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", "x"]),
                "resources": resources,
                "requestedToCapacityRatio": st.fixed_dictionaries({"shape": shape}),
            },
        ),
        "resources": resources,
        "ignoredResources": st.lists(RESOURCE_NAMES, max_size=3),
        "ignoredResourceGroups": st.lists(TEXT, max_size=3),
        "hardPodAffinityWeight": INTS,
        "minCandidateNodesPercentage": INTS,
        "minCandidateNodesAbsolute": INTS,
        "bindTimeoutSeconds": INTS,
        "defaultingType": st.sampled_from(["System", "List", "", "list"]),
        "defaultConstraints": st.lists(
            st.fixed_dictionaries(
                {
                    "maxSkew": INTS,
                    "topologyKey": st.sampled_from(["kubernetes.io/hostname", "", "zone"]),
                    "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Maybe"]),
                }
            ),
            max_size=3,
        ),
        "shape": shape,
        "apiVersion": st.sampled_from(["kubescheduler.config.k8s.io/v1", "v1", ""]),
        "kind": st.sampled_from([f"{n}Args" for n in ARGS_MODELS] + ["", "Args"]),
    }
    return plausible.get(field, JSON)


@st.composite
def plugin_args(draw: st.DrawFn, plugin: str) -> Json:
    known = ARGS_FIELDS.get(plugin, [])
    args: dict[str, Json] = {}
    for field in draw(st.lists(st.sampled_from(known), max_size=len(known), unique=True)) if known else []:
        args[field] = draw(
            st.one_of(_valid_arg_value(field), HOSTILE) if draw(st.booleans()) else _valid_arg_value(field)
        )
    for key in draw(st.lists(TEXT, max_size=2)):
        args[key] = draw(JSON)
    return args


PLUGIN_NAMES = st.one_of(st.sampled_from(PLUGINS), st.sampled_from(["NoSuchPlugin", "*", ""]), TEXT)


@st.composite
def plugin_set(draw: st.DrawFn) -> Json:
    entry = st.fixed_dictionaries({"name": PLUGIN_NAMES}, optional={"weight": INTS})
    out: dict[str, Json] = {}
    for key in ("enabled", "disabled"):
        if draw(st.booleans()):
            items = draw(st.lists(entry, max_size=5))
            duplicate = draw(st.booleans())
            if items and duplicate:
                items.append(items[0])  # a duplicated entry
            out[key] = items
    return out


@st.composite
def profile_spec(draw: st.DrawFn) -> Json:
    """A SchedulingProfile spec, valid-ish, then perhaps mutated at random places."""
    spec: dict[str, Json] = {
        "schedulerName": draw(
            st.one_of(st.sampled_from(["fuzz", "fuzz-b.example"]), st.just("fuzz-c"), TEXT)
        ),
    }
    optional: dict[str, st.SearchStrategy[Json]] = {
        "percentageOfNodesToScore": INTS,
        "podInitialBackoffSeconds": INTS,
        "podMaxBackoffSeconds": INTS,
        "evictionPolicyName": st.one_of(st.just("fuzz-policy"), TEXT),
        "plugins": st.dictionaries(st.sampled_from(POINTS), plugin_set(), max_size=4),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            spec[key] = draw(strategy)
    if draw(st.booleans()):
        configs = []
        for name in draw(st.lists(st.one_of(st.sampled_from(sorted(ARGS_MODELS)), PLUGIN_NAMES), max_size=4)):
            configs.append({"name": name, "args": draw(plugin_args(name))})
        duplicate = draw(st.booleans())
        if configs and duplicate:
            configs.append(configs[-1])  # duplicated pluginConfig entry
        spec["pluginConfig"] = configs
    return draw(mutated(spec))


@st.composite
def eviction_spec(draw: st.DrawFn) -> Json:
    """An EvictionPolicy spec, valid-ish, then perhaps mutated."""
    selector = st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.dictionaries(TEXT, TEXT, max_size=3),
            "matchExpressions": st.lists(
                st.fixed_dictionaries(
                    {
                        "key": st.one_of(st.just("app"), TEXT),
                        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "in"]),
                    },
                    optional={"values": st.lists(TEXT, max_size=3)},
                ),
                max_size=3,
            ),
        },
    )
    spec = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "protected": st.lists(
                    st.fixed_dictionaries(
                        {}, optional={"namespaceSelector": selector, "podSelector": selector}
                    ),
                    max_size=3,
                ),
                "minProtectedPriority": INTS,
                "budgetMode": st.sampled_from(["Strict", "BestEffort", "Ignore", "", "strict"]),
                "rateLimit": st.fixed_dictionaries(
                    {},
                    optional={
                        k: INTS
                        for k in (
                            "evictionsPerMinute",
                            "burst",
                            "maxInFlight",
                            "perNamespacePerMinute",
                            "perNodePerMinute",
                        )
                    },
                ),
                "maxGracePeriodSeconds": INTS,
                "dryRun": st.one_of(st.booleans(), SCALARS),
            },
        )
    )
    return draw(mutated(spec))


def _paths(value: Json, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


@st.composite
def mutated(draw: st.DrawFn, spec: Json) -> Json:
    """`spec` with 0-3 places replaced by hostile values or given an unknown sibling field."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        path = draw(st.sampled_from(_paths(spec)))
        if not path:
            if draw(st.integers(0, 9)) == 0:
                return draw(HOSTILE)  # not even an object
            continue
        parent = spec
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()):
            parent[path[-1]] = draw(HOSTILE)
        elif isinstance(parent, dict):
            parent[draw(TEXT)] = draw(JSON)
    return spec


def resolves(spec: Json, path: str, prefix: str = "spec") -> bool:
    """Whether `path` (as the operator writes it: spec.a.b[2].c) names a place in `spec`: an
    existing value, or a missing field of an existing object (a required field)."""
    if not path.startswith(prefix):
        return False
    rest, node = path[len(prefix) :], spec
    while rest:
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0 or not isinstance(node, list):
                return False
            index = int(rest[1:end])
            if not 0 <= index < len(node):
                return False
            node, rest = node[index], rest[end + 1 :]
            continue
        if not rest.startswith(".") or not isinstance(node, dict):
            return False
        rest = rest[1:]
        # Keys may hold '.' or '[': take the longest key that ends where a separator starts.
        keys = [
            k
            for k in node
            if isinstance(k, str) and rest.startswith(k) and rest[len(k) : len(k) + 1] in ("", ".", "[")
        ]
        if not keys:
            return "." not in rest and "[" not in rest  # a missing (required) field of this object
        key = max(keys, key=len)
        node, rest = node[key], rest[len(key) :]
    return True
