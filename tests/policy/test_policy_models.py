"""The CR models: upstream field names, validation with field paths, compile and cross-object checks."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from policy_scheduler.policy import plugin_args as pa
from policy_scheduler.policy import scheduling_profile as pm
from policy_scheduler.policy.compile import (
    compile_profile,
    compile_profile_objects,
    parse_profile_spec,
    resolve_spec,
    validate_profiles,
)
from policy_scheduler.policy.conditions import Condition, find_condition, set_condition
from policy_scheduler.policy.constants import API_VERSION
from policy_scheduler.policy.errors import FieldError, PolicyError, parse_model
from policy_scheduler.policy.eviction import EvictionPolicySpec, EvictionPolicyStatus
from policy_scheduler.policy.kube_types import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    TopologySpreadConstraint,
)
from policy_scheduler.policy.priorityclass import (
    PriorityClassMirrorSpec,
    PriorityClassMirrorStatus,
    name_problem,
)
from policy_scheduler.policy.scheduling_profile import SchedulingProfileSpec, SchedulingProfileStatus
from policy_scheduler.scheduler.config import PluginRef, PluginSet
from policy_scheduler.scheduler.model import Requirement
from policy_scheduler.scheduler.selectors import requirement_errors
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35

# ---- field names are upstream's -----------------------------------------------------------------

GOMODCACHE = Path(os.environ.get("GOMODCACHE", Path.home() / "go" / "pkg" / "mod"))
KUBE_SCHEDULER_TYPES = GOMODCACHE / "k8s.io" / "kube-scheduler@v0.35.4" / "config" / "v1"
CORE_TYPES = GOMODCACHE / "k8s.io" / "api@v0.35.4" / "core" / "v1" / "types.go"
META_TYPES = GOMODCACHE / "k8s.io" / "apimachinery@v0.35.4" / "pkg" / "apis" / "meta" / "v1" / "types.go"


def go_json_fields(path: Path, struct: str) -> set[str]:
    """JSON names of a Go struct's fields (inline members skipped, comments ignored)."""
    if not path.is_file():
        pytest.skip(f"{path} not available")
    body = re.search(rf"^type {struct} struct \{{\n(.*?)^\}}", path.read_text(), re.M | re.S)
    assert body, struct
    lines = [line for line in body.group(1).splitlines() if not line.strip().startswith("//")]
    return {m.group(1) for line in lines if (m := re.search(r'json:"([A-Za-z]+)', line))}


def aliases(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


OURS = {
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "evictionPolicyName",
    "pendingSummaryAnnotation",
    "featureGates",
}
ARGS_META = {"apiVersion", "kind"}
SCHEDULER_TYPES = [
    ("types.go", "KubeSchedulerProfile", SchedulingProfileSpec, OURS),
    ("types.go", "Plugins", pm.Plugins, set()),
    ("types.go", "PluginSet", pm.PluginSet, set()),
    ("types.go", "Plugin", pm.Plugin, set()),
    ("types.go", "PluginConfig", pm.PluginConfig, set()),
    ("types_pluginargs.go", "NodeResourcesFitArgs", pa.NodeResourcesFitArgs, ARGS_META),
    ("types_pluginargs.go", "ScoringStrategy", pa.ScoringStrategy, set()),
    ("types_pluginargs.go", "ResourceSpec", pa.ResourceSpec, set()),
    ("types_pluginargs.go", "UtilizationShapePoint", pa.UtilizationShapePoint, set()),
    ("types_pluginargs.go", "RequestedToCapacityRatioParam", pa.RequestedToCapacityRatioParam, set()),
    (
        "types_pluginargs.go",
        "NodeResourcesBalancedAllocationArgs",
        pa.NodeResourcesBalancedAllocationArgs,
        ARGS_META,
    ),
    ("types_pluginargs.go", "PodTopologySpreadArgs", pa.PodTopologySpreadArgs, ARGS_META),
    ("types_pluginargs.go", "InterPodAffinityArgs", pa.InterPodAffinityArgs, ARGS_META),
    ("types_pluginargs.go", "NodeAffinityArgs", pa.NodeAffinityArgs, ARGS_META),
    ("types_pluginargs.go", "DefaultPreemptionArgs", pa.DefaultPreemptionArgs, ARGS_META),
]


@pytest.mark.parametrize(
    ("file", "struct", "model", "extra"), SCHEDULER_TYPES, ids=[t[1] for t in SCHEDULER_TYPES]
)
def test_scheduler_config_field_names(
    file: str, struct: str, model: type[BaseModel], extra: set[str]
) -> None:
    assert aliases(model) == go_json_fields(KUBE_SCHEDULER_TYPES / file, struct) | extra


K8S_TYPES = [
    (CORE_TYPES, "NodeAffinity", NodeAffinity),
    (CORE_TYPES, "NodeSelector", NodeSelector),
    (CORE_TYPES, "NodeSelectorTerm", NodeSelectorTerm),
    (CORE_TYPES, "NodeSelectorRequirement", NodeSelectorRequirement),
    (CORE_TYPES, "PreferredSchedulingTerm", PreferredSchedulingTerm),
    (CORE_TYPES, "TopologySpreadConstraint", TopologySpreadConstraint),
    (META_TYPES, "LabelSelector", LabelSelector),
    (META_TYPES, "LabelSelectorRequirement", LabelSelectorRequirement),
    (META_TYPES, "Condition", Condition),
]


@pytest.mark.parametrize(("path", "struct", "model"), K8S_TYPES, ids=[t[1] for t in K8S_TYPES])
def test_kubernetes_field_names(path: Path, struct: str, model: type[BaseModel]) -> None:
    assert aliases(model) == go_json_fields(path, struct)


# ---- SchedulingProfile spec ---------------------------------------------------------------------

# A profile as found in kube-scheduler documentation, copied out of a KubeSchedulerConfiguration.
UPSTREAM_PROFILE: dict[str, Any] = {
    "schedulerName": "bin-packing-scheduler",
    "percentageOfNodesToScore": 70,
    "plugins": {
        "multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]},
        "score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}, {"name": "ImageLocality"}]},
        "preScore": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]},
    },
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "NodeResourcesFitArgs",
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                    },
                },
            },
        },
        {
            "name": "PodTopologySpread",
            "args": {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                    }
                ],
            },
        },
        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 5}},
        {
            "name": "NodeAffinity",
            "args": {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "scheduler-profile", "operator": "In", "values": ["bin-packing"]}
                                ]
                            }
                        ]
                    }
                }
            },
        },
        {
            "name": "DefaultPreemption",
            "args": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 50},
        },
        {
            "name": "NodeResourcesBalancedAllocation",
            "args": {"resources": [{"name": "cpu"}, {"name": "memory"}]},
        },
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 300}},
    ],
}


def test_upstream_profile_is_a_valid_spec_unchanged() -> None:
    spec = parse_profile_spec(UPSTREAM_PROFILE)
    assert spec.model_dump(mode="json", exclude_unset=True) == UPSTREAM_PROFILE
    resolved = resolve_spec(spec)
    assert resolved.points["preScore"] == (PluginRef("NodeResourcesFit"),)
    assert ("NodeResourcesFit", 2) in [(r.name, r.weight) for r in resolved.points["score"]]


def test_snake_case_names_work_from_python() -> None:
    spec = SchedulingProfileSpec(scheduler_name="a", pod_max_backoff_seconds=20)
    assert spec.to_json()["podMaxBackoffSeconds"] == 20


def test_defaults() -> None:
    spec = parse_profile_spec({})
    assert spec.scheduler_name == "default-scheduler"
    assert (spec.pod_initial_backoff_seconds, spec.pod_max_backoff_seconds) == (1, 10)
    assert spec.percentage_of_nodes_to_score is None
    assert spec.eviction_policy_name is None


SPEC_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    ("unknown top-level field", {"schedulerNam": "x"}, "spec.schedulerNam", "unknown field"),
    ("unknown extension point", {"plugins": {"scroe": {}}}, "spec.plugins.scroe", "unknown field"),
    (
        "unknown plugin field",
        {"plugins": {"score": {"enabled": [{"name": "A", "wieght": 1}]}}},
        "spec.plugins.score.enabled[0].wieght",
        "unknown field",
    ),
    (
        "weight above 100",
        {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 101}]}}},
        "spec.plugins.score.enabled[0].weight",
        "must be less than or equal to 100",
    ),
    (
        "string weight",
        {"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": "3"}]}}},
        "spec.plugins.score.enabled[0].weight",
        "must be an integer",
    ),
    (
        "missing plugin name",
        {"plugins": {"filter": {"disabled": [{}]}}},
        "spec.plugins.filter.disabled[0].name",
        "required field is missing",
    ),
    (
        "percentage above 100",
        {"percentageOfNodesToScore": 101},
        "spec.percentageOfNodesToScore",
        "must be less than or equal to 100",
    ),
    (
        "backoff order",
        {"podInitialBackoffSeconds": 20},
        "spec.podMaxBackoffSeconds",
        "must be greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "zero backoff",
        {"podInitialBackoffSeconds": 0},
        "spec.podInitialBackoffSeconds",
        "must be greater than or equal to 1",
    ),
    ("scheduler name not DNS", {"schedulerName": "Big_Sched"}, "spec.schedulerName", "must match"),
    (
        "duplicate pluginConfig",
        {"pluginConfig": [{"name": "A"}, {"name": "A"}]},
        "spec.pluginConfig[1].name",
        'Duplicate value: "A"',
    ),
    (
        "two queue sorts",
        {"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}},
        "spec.plugins.queueSort.enabled",
        "only one queue sort plugin",
    ),
    (
        "unknown plugin",
        {"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}},
        "spec.plugins.filter.enabled[0].name",
        'unknown plugin "Nope"',
    ),
    (
        "plugin at wrong point",
        {"plugins": {"bind": {"enabled": [{"name": "PrioritySort"}]}}},
        "spec.plugins.bind.enabled[0].name",
        "does not implement the bind extension point",
    ),
    (
        "no bind",
        {"plugins": {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}}},
        "spec.plugins.bind",
        "at least one bind plugin",
    ),
    (
        "args not an object",
        {"pluginConfig": [{"name": "Custom", "args": [1]}]},
        "spec.pluginConfig[0].args",
        "must be an object",
    ),
]


@pytest.mark.parametrize(
    ("raw", "path", "message"), [e[1:] for e in SPEC_ERRORS], ids=[e[0] for e in SPEC_ERRORS]
)
def test_spec_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_profile_spec(raw)
    assert any(p == path and message in m for p, m in info.value.pairs), info.value.pairs


def args_error(name: str, args: Any) -> list[tuple[str, str]]:
    with pytest.raises(PolicyError) as info:
        parse_profile_spec({"pluginConfig": [{"name": name, "args": args}]})
    return info.value.pairs


ARGS = "spec.pluginConfig[0].args"
RTCR = {"type": "RequestedToCapacityRatio"}
ARGS_ERRORS: list[tuple[str, str, Any, str, str]] = [
    (
        "shape not increasing",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                **RTCR,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]
                },
            }
        },
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
        "values must be sorted",
    ),
    (
        "shape utilization above 100",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                **RTCR,
                "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
            }
        },
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
        "must be less than or equal to 100",
    ),
    (
        "shape score above 10",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                **RTCR,
                "requestedToCapacityRatio": {"shape": [{"utilization": 1, "score": 11}]},
            }
        },
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "must be less than or equal to 10",
    ),
    (
        "empty shape",
        "NodeResourcesFit",
        {"scoringStrategy": {**RTCR, "requestedToCapacityRatio": {"shape": []}}},
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape",
        "must have at least 1 item",
    ),
    (
        "ratio without shape",
        "NodeResourcesFit",
        {"scoringStrategy": RTCR},
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio",
        "must be specified when type is RequestedToCapacityRatio",
    ),
    (
        "ratio with another strategy",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0}]},
            }
        },
        f"{ARGS}.scoringStrategy.requestedToCapacityRatio",
        "must be nil when type is not RequestedToCapacityRatio",
    ),
    (
        "unknown strategy",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "Random"}},
        f"{ARGS}.scoringStrategy.type",
        "unsupported value 'Random'",
    ),
    (
        "strategy without type",
        "NodeResourcesFit",
        {"scoringStrategy": {"resources": []}},
        f"{ARGS}.scoringStrategy.type",
        "required field is missing",
    ),
    (
        "resource weight above 100",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
        f"{ARGS}.scoringStrategy.resources[0].weight",
        "must be less than or equal to 100",
    ),
    (
        "resource group with slash",
        "NodeResourcesFit",
        {"ignoredResourceGroups": ["example.com/gpu"]},
        f"{ARGS}.ignoredResourceGroups[0]",
        "resource group name can't contain '/'",
    ),
    (
        "bad ignored resource",
        "NodeResourcesFit",
        {"ignoredResources": ["-bad"]},
        f"{ARGS}.ignoredResources[0]",
        "invalid label key",
    ),
    (
        "unknown args field",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated"}, "extra": 1},
        f"{ARGS}.extra",
        "unknown field",
    ),
    (
        "wrong kind",
        "NodeResourcesFit",
        {"kind": "InterPodAffinityArgs"},
        f"{ARGS}.kind",
        "must be of kind NodeResourcesFitArgs",
    ),
    (
        "wrong apiVersion",
        "NodeResourcesFit",
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"},
        f"{ARGS}.apiVersion",
        "unsupported value",
    ),
    (
        "balanced weight not 1",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 2}]},
        f"{ARGS}.resources[0].weight",
        "must be 1",
    ),
    (
        "balanced duplicate",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
        f"{ARGS}.resources[1].name",
        "Duplicate value",
    ),
    (
        "hard affinity weight",
        "InterPodAffinity",
        {"hardPodAffinityWeight": 101},
        f"{ARGS}.hardPodAffinityWeight",
        "must be less than or equal to 100",
    ),
    (
        "candidates percentage",
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 101},
        f"{ARGS}.minCandidateNodesPercentage",
        "must be less than or equal to 100",
    ),
    (
        "candidates absolute",
        "DefaultPreemption",
        {"minCandidateNodesAbsolute": -1},
        f"{ARGS}.minCandidateNodesAbsolute",
        "must be greater than or equal to 0",
    ),
    (
        "candidates both zero",
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        f"{ARGS}.minCandidateNodesPercentage",
        "cannot be zero at the same time",
    ),
    (
        "system defaulting with constraints",
        "PodTopologySpread",
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
        f"{ARGS}.defaultingType",
        "when .defaultConstraints are not empty",
    ),
    (
        "zero max skew",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ],
        },
        f"{ARGS}.defaultConstraints[0].maxSkew",
        "not in valid range (0, inf)",
    ),
    (
        "constraint with selector",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {},
                }
            ],
        },
        f"{ARGS}.defaultConstraints[0].labelSelector",
        "constraint must not define a selector",
    ),
    (
        "bad whenUnsatisfiable",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}],
        },
        f"{ARGS}.defaultConstraints[0].whenUnsatisfiable",
        'unsupported value "Maybe"',
    ),
    (
        "repeated constraint",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        f"{ARGS}.defaultConstraints[1]",
        "Duplicate value",
    ),
    (
        "affinity Gt not integer",
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}
                    ]
                }
            }
        },
        f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values[0]",
        "the value must be an integer",
    ),
    (
        "affinity In without values",
        "NodeAffinity",
        {
            "addedAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "In"}]}}
                ]
            }
        },
        f"{ARGS}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"
        ".values",
        "values set can't be empty",
    ),
    (
        "affinity bad operator",
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}]
                }
            }
        },
        f"{ARGS}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchFields[0].operator",
        'unsupported value "Exists"',
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "path", "message"), [e[1:] for e in ARGS_ERRORS], ids=[e[0] for e in ARGS_ERRORS]
)
def test_plugin_args_errors(name: str, args: Any, path: str, message: str) -> None:
    pairs = args_error(name, args)
    assert any(p == path and message in m for p, m in pairs), pairs


def test_v135_fit_args_check_a_ratio_shape_wherever_it_is() -> None:
    """kube-scheduler v1.35 validated a requestedToCapacityRatio shape whatever the strategy and
    (ours: it dereferenced a nil pointer) needs one for RequestedToCapacityRatio; v1.36 made the
    ratio belong to its strategy (the cases above)."""
    v135 = Features(V1_35)
    shape = {"shape": [{"utilization": 0, "score": 1}]}
    most = {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": shape}},
            }
        ]
    }
    parse_profile_spec(most, features=v135)
    with pytest.raises(PolicyError) as info:
        parse_profile_spec(
            {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": RTCR}}]}, features=v135
        )
    assert info.value.pairs == [
        (f"{ARGS}.scoringStrategy.requestedToCapacityRatio", "required when type is RequestedToCapacityRatio")
    ]


@pytest.mark.parametrize(
    ("value", "valid"),
    [("5", True), ("9223372036854775807", True), ("9223372036854775808", False), ("1.5", False)],
)
def test_gt_values_are_int64_like_the_core(value: str, valid: bool) -> None:
    """strconv.ParseInt(v, 10, 64), as the scheduler's own matching: a value the policy admits is
    one the plugin can use (a digits-only regex would admit values beyond int64)."""
    term = {"matchExpressions": [{"key": "a", "operator": "Gt", "values": [value]}]}
    args = {
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    pairs = args_error("NodeAffinity", args) if not valid else []
    if valid:
        pa.default_plugin_args("NodeAffinity", args, "args")
        assert requirement_errors(Requirement("a", "Gt", (value,))) == []
    else:
        assert any(
            p.endswith("matchExpressions[0].values[0]") and "must be an integer" in m for p, m in pairs
        )
        assert requirement_errors(Requirement("a", "Gt", (value,))) != []


DEFAULTED_ARGS: list[tuple[str, dict[str, Any]]] = [
    (
        "NodeResourcesFit",
        {
            "ignoredResources": [],
            "ignoredResourceGroups": [],
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            },
        },
    ),
    (
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
    ),
    ("PodTopologySpread", {"defaultConstraints": [], "defaultingType": "System"}),
    ("InterPodAffinity", {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}),
    ("NodeAffinity", {}),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}),
    ("OutOfTree", {}),
]


@pytest.mark.parametrize(("name", "expected"), DEFAULTED_ARGS, ids=[d[0] for d in DEFAULTED_ARGS])
def test_plugin_args_defaults_match_upstream(name: str, expected: dict[str, Any]) -> None:
    config = compile_profile(parse_model(SchedulingProfileSpec, {"pluginConfig": [{"name": name}]}))
    assert config.plugin_config[name] == expected


def test_compile_maps_every_field() -> None:
    config = compile_profile(parse_profile_spec(UPSTREAM_PROFILE))
    assert config.scheduler_name == "bin-packing-scheduler"
    assert config.percentage_of_nodes_to_score == 70
    assert config.plugins["multiPoint"] == PluginSet(enabled=(PluginRef("NodeResourcesFit", 2),))
    assert config.plugins["preScore"].disabled == (PluginRef("*"),)
    assert set(config.plugins) == {"multiPoint", "score", "preScore"}
    fit = config.plugin_config["NodeResourcesFit"]
    assert "apiVersion" not in fit
    assert "kind" not in fit
    assert fit["scoringStrategy"]["resources"] == [
        {"name": "cpu", "weight": 3},
        {"name": "memory", "weight": 1},
    ]
    # Defaulted as v1.37 does: StorageCapacityScoring is on, so the shape has its default.
    assert config.plugin_config["VolumeBinding"] == {
        "bindTimeoutSeconds": 300,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    }
    assert config.plugin_config["NodeResourcesBalancedAllocation"]["resources"][0] == {
        "name": "cpu",
        "weight": 1,
    }
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1.0, 10.0)


def test_fit_resource_weight_zero_means_one_and_empty_resources_mean_default() -> None:
    args = {
        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "nvidia.com/gpu", "weight": 0}]}
    }
    config = compile_profile(
        parse_profile_spec({"pluginConfig": [{"name": "NodeResourcesFit", "args": args}]})
    )
    assert config.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"] == [
        {"name": "nvidia.com/gpu", "weight": 1}
    ]
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": []}}
    config = compile_profile(
        parse_profile_spec({"pluginConfig": [{"name": "NodeResourcesFit", "args": args}]})
    )
    assert [r["name"] for r in config.plugin_config["NodeResourcesFit"]["scoringStrategy"]["resources"]] == [
        "cpu",
        "memory",
    ]


def test_all_errors_of_a_spec_are_reported_together() -> None:
    raw = {
        "percentageOfNodesToScore": 200,
        "plugins": {"score": {"enabled": [{"name": "A", "weight": -1}]}},
        "evictionPolicyName": "Bad_Name",
    }
    with pytest.raises(PolicyError) as info:
        parse_profile_spec(raw)
    assert [p for p, _ in info.value.pairs] == [
        "spec.percentageOfNodesToScore",
        "spec.plugins.score.enabled[0].weight",
        "spec.evictionPolicyName",
    ]
    assert str(info.value).count("; ") == 2


# ---- cross-object checks ------------------------------------------------------------------------


def specs(**raw: dict[str, Any]) -> dict[str, SchedulingProfileSpec]:
    return {name: parse_profile_spec(spec) for name, spec in raw.items()}


def test_duplicate_scheduler_name_blames_the_later_profile() -> None:
    errors = validate_profiles(
        specs(a={"schedulerName": "x"}, b={"schedulerName": "y"}, c={"schedulerName": "x"})
    )
    assert list(errors) == ["c"]
    assert errors["c"].pairs == [("spec.schedulerName", '"x" is already used by SchedulingProfile "a"')]


def test_unknown_eviction_policy() -> None:
    given = specs(
        a={"evictionPolicyName": "gentle"},
        b={"schedulerName": "b", "evictionPolicyName": "missing"},
        c={"schedulerName": "c"},
    )
    assert validate_profiles(given) == {}  # not checked without the known names
    errors = validate_profiles(given, eviction_policy_names={"gentle"})
    assert list(errors) == ["b"]
    assert errors["b"].pairs == [("spec.evictionPolicyName", 'EvictionPolicy "missing" not found')]


def test_queue_sort_must_agree() -> None:
    explicit = {"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}}
    assert validate_profiles(specs(a={}, b={"schedulerName": "b", **explicit})) == {}  # same effective plugin
    other_args = {"schedulerName": "c", "pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}]}
    errors = validate_profiles(specs(a={}, b={"schedulerName": "b"}, c=other_args))
    assert list(errors) == ["c"]
    assert errors["c"].pairs == [
        (
            "spec.plugins.queueSort",
            "queueSort plugin and its args must be the same for all profiles "
            '(SchedulingProfile "a" uses PrioritySort)',
        )
    ]


def test_compile_profile_objects_names_the_object() -> None:
    def obj(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": "SchedulingProfile",
            "metadata": {"name": name},
            "spec": spec,
        }

    configs = compile_profile_objects([obj("a", {}), obj("b", {"schedulerName": "b"})])
    assert [c.scheduler_name for c in configs] == ["default-scheduler", "b"]
    with pytest.raises(PolicyError) as info:
        compile_profile_objects([obj("a", {}), obj("b", {"percentageOfNodesToScore": -1}), obj("c", {})])
    assert info.value.pairs == [
        ('SchedulingProfile "b": spec.percentageOfNodesToScore', "must be greater than or equal to 0"),
        (
            'SchedulingProfile "c": spec.schedulerName',
            '"default-scheduler" is already used by SchedulingProfile "a"',
        ),
    ]


def test_policy_error_message() -> None:
    error = PolicyError([FieldError("spec.a", "bad"), FieldError("spec.b[0]", "worse")])
    assert str(error) == "spec.a: bad; spec.b[0]: worse"
    assert isinstance(error, ValueError)


# ---- EvictionPolicy -----------------------------------------------------------------------------


def test_eviction_policy_defaults() -> None:
    spec = parse_model(EvictionPolicySpec, {})
    assert spec.to_json() == {
        "protected": [],
        "budgetMode": "Enforce",
        "rateLimit": {"evictionsPerMinute": 60, "burst": 10, "maxInFlight": 10},
        "dryRun": False,
        "gangDisruption": "Whole",
    }


def test_eviction_policy_full() -> None:
    raw = {
        "protected": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}},
            {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}},
        ],
        "minProtectedPriority": 1000000,
        "budgetMode": "BestEffort",
        "rateLimit": {
            "evictionsPerMinute": 30,
            "burst": 5,
            "maxInFlight": 3,
            "perNamespacePerMinute": 10,
            "perNodePerMinute": 30,
        },
        "maxGracePeriodSeconds": 30,
        "dryRun": True,
    }
    assert parse_model(EvictionPolicySpec, raw).model_dump(mode="json", exclude_unset=True) == raw


EVICTION_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "empty protected term",
        {"protected": [{}]},
        "spec.protected[0]",
        "set namespaceSelector, podSelector or both",
    ),
    (
        "In without values",
        {"protected": [{"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]},
        "spec.protected[0].podSelector.matchExpressions[0].values",
        "must be specified",
    ),
    (
        "Exists with values",
        {
            "protected": [
                {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}
            ]
        },
        "spec.protected[0].podSelector.matchExpressions[0].values",
        "may not be specified",
    ),
    (
        "bad operator",
        {"protected": [{"podSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}]},
        "spec.protected[0].podSelector.matchExpressions[0].operator",
        "unsupported value 'Gt'",
    ),
    (
        "bad label value",
        {"protected": [{"podSelector": {"matchLabels": {"app": "-x"}}}]},
        "spec.protected[0].podSelector.matchLabels.app",
        "invalid label value",
    ),
    ("bad budget mode", {"budgetMode": "Sometimes"}, "spec.budgetMode", "unsupported value"),
    ("zero burst", {"rateLimit": {"burst": 0}}, "spec.rateLimit.burst", "must be greater than or equal to 1"),
    (
        "namespace limit above total",
        {"rateLimit": {"evictionsPerMinute": 5, "perNamespacePerMinute": 6}},
        "spec.rateLimit.perNamespacePerMinute",
        "would never take effect",
    ),
    (
        "node limit above total",
        {"rateLimit": {"perNodePerMinute": 61}},
        "spec.rateLimit.perNodePerMinute",
        "would never take effect",
    ),
    (
        "negative grace",
        {"maxGracePeriodSeconds": -1},
        "spec.maxGracePeriodSeconds",
        "greater than or equal to 0",
    ),
    (
        "priority beyond int32",
        {"minProtectedPriority": 2**31},
        "spec.minProtectedPriority",
        "less than or equal",
    ),
    ("dryRun as string", {"dryRun": "true"}, "spec.dryRun", "must be a boolean"),
]


@pytest.mark.parametrize(
    ("raw", "path", "message"), [e[1:] for e in EVICTION_ERRORS], ids=[e[0] for e in EVICTION_ERRORS]
)
def test_eviction_policy_errors(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_model(EvictionPolicySpec, raw)
    assert any(p == path and message in m for p, m in info.value.pairs), info.value.pairs


def test_eviction_status_round_trip() -> None:
    raw: dict[str, Any] = {
        "observedGeneration": 2,
        "conditions": [{"type": "Accepted", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
        "counters": {"evicted": 3, "blockedByBudget": 1, "rateLimited": 0, "wouldEvict": 0},
        "recentEvictions": [
            {
                "time": "2025-01-01T00:00:01Z",
                "namespace": "ns",
                "name": "victim",
                "uid": "u1",
                "preemptorUid": "u2",
                "node": "n1",
                "result": "Evicted",
            }
        ],
        "someFutureField": 1,
    }
    status = EvictionPolicyStatus.model_validate(raw)
    assert status.recent_evictions[0].time == datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC)
    dumped = status.to_json()
    assert dumped["counters"] == raw["counters"]
    assert "someFutureField" not in dumped
    with pytest.raises(ValueError, match="at most 20"):
        EvictionPolicyStatus.model_validate({"recentEvictions": [raw["recentEvictions"][0]] * 21})


# ---- PriorityClassMirror ------------------------------------------------------------------------


def test_priority_class_mirror() -> None:
    spec = parse_model(PriorityClassMirrorSpec, {"value": 1000})
    assert spec.to_json() == {
        "value": 1000,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    for raw, path in (
        ({"value": 1000000001}, "spec.value"),
        ({"value": -(2**31) - 1}, "spec.value"),
        ({}, "spec.value"),
        ({"value": 1, "preemptionPolicy": "Sometimes"}, "spec.preemptionPolicy"),
        ({"value": 1, "unknown": 1}, "spec.unknown"),
    ):
        with pytest.raises(PolicyError) as info:
            parse_model(PriorityClassMirrorSpec, raw)
        assert info.value.errors[0].path == path
    assert name_problem("system-critical") is not None
    assert name_problem("high") is None
    status = PriorityClassMirrorStatus(native_uid="u", pod_count=3, outdated_pod_count=1)
    assert status.to_json() == {"conditions": [], "nativeUid": "u", "podCount": 3, "outdatedPodCount": 1}


# ---- status and conditions ----------------------------------------------------------------------


def test_scheduling_profile_status() -> None:
    status = SchedulingProfileStatus(
        observed_generation=1,
        effective_plugins={"filter": ["NodeName"]},
        scheduled=5,
        pending=2,
        pending_reasons=[pm.PendingReason(reason="Insufficient cpu", count=2)],
        latency_p50_seconds=0.01,
        latency_p99_seconds=0.2,
    )
    dumped = status.to_json()
    assert dumped["effectivePlugins"] == {"filter": ["NodeName"]}
    assert dumped["pendingReasons"] == [{"reason": "Insufficient cpu", "count": 2}]
    assert dumped["latencyP99Seconds"] == 0.2
    assert SchedulingProfileStatus.model_validate(dumped) == status


def test_set_condition_keeps_transition_time_when_status_is_unchanged() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    t1 = datetime(2025, 1, 2, tzinfo=UTC)
    ready = Condition(type="Ready", status="True", reason="Scheduling", last_transition_time=t0)
    accepted = Condition(type="Accepted", status="True", last_transition_time=t0)
    conditions = set_condition(
        [ready, accepted], Condition(type="Ready", status="True", message="x", last_transition_time=t1)
    )
    assert conditions[0].last_transition_time == t0
    assert conditions[0].message == "x"
    conditions = set_condition(conditions, Condition(type="Ready", status="False", last_transition_time=t1))
    assert conditions[0].last_transition_time == t1
    conditions = set_condition(
        conditions, Condition(type="Degraded", status="False", last_transition_time=t1)
    )
    assert [c.type for c in conditions] == ["Ready", "Accepted", "Degraded"]
    found = find_condition(conditions, "Accepted")
    assert found is not None
    assert found.status == "True"
    with pytest.raises(ValueError, match="Input should be 'True', 'False' or 'Unknown'"):
        Condition(type="Ready", status="Maybe")


def test_condition_dict_moves_transition_time_only_when_status_changes() -> None:
    from policy_scheduler.policy.conditions import Transitions, condition_dict

    seen: Transitions = {}
    first = condition_dict(seen, "Ready", "True", "Scheduling", "ok", 1, "2026-01-01T00:00:00Z")
    same = condition_dict(seen, "Ready", "True", "Scheduling", "still ok", 2, "2026-01-02T00:00:00Z")
    flipped = condition_dict(seen, "Ready", "False", "NotServing", "gone", 3, "2026-01-03T00:00:00Z")
    assert first["lastTransitionTime"] == same["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert same["observedGeneration"] == 2
    assert same["message"] == "still ok"
    assert flipped["lastTransitionTime"] == "2026-01-03T00:00:00Z"
