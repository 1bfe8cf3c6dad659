"""Profile resolution: defaults, mergePluginSet and multiPoint expansion as kube-scheduler v1.35.

Expected plugin lists were checked against the real kube-scheduler v1.35.4 binary (its -v=2
"the scheduler starts to work with those plugins" log) for the same configurations.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.scheduler.config import EXTENSION_POINTS, PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.framework.interfaces import implemented_points
from policy_scheduler.scheduler.plugins.registry import in_tree_registry
from policy_scheduler.scheduler.profile_resolution import (
    ProfileError,
    default_plugins,
    effective_plugins,
    resolve_profile,
)
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

# The cases below encode kube-scheduler v1.35's default profile.
V135 = Features(V1_35)
DEFAULT_PLUGINS = default_plugins(V135)

# Every in-tree plugin registered without alpha feature gates, as in a real kube-scheduler: the
# plugins of upstream's default profile.
ALL_IN_TREE = frozenset(ref.name for ref in DEFAULT_PLUGINS)
IN_TREE = frozenset(in_tree_registry())
# A registry without the storage plugins and DynamicResources: resolution cases below were
# written against it, and it shows how unimplemented defaults are dropped.
NO_STORAGE = IN_TREE - {
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"
}  # fmt: skip


def plugins(**points: dict[str, list[Any]]) -> dict[str, PluginSet]:
    """`plugins(score={"enabled": ["A", ("B", 3)], "disabled": ["*"]})` -> PluginSets."""

    def ref(item: Any) -> PluginRef:
        return PluginRef(*item) if isinstance(item, tuple) else PluginRef(item)

    return {
        point: PluginSet(
            enabled=tuple(ref(i) for i in spec.get("enabled", [])),
            disabled=tuple(ref(i) for i in spec.get("disabled", [])),
        )
        for point, spec in points.items()
    }


def resolve(implemented: frozenset[str] | None = None, **points: dict[str, list[Any]]) -> dict[str, Any]:
    """Resolved names per point, with (name, weight) pairs for score."""
    resolved = resolve_profile(ProfileConfig(plugins=plugins(**points)), implemented, features=V135)
    out: dict[str, Any] = {p: [r.name for r in refs] for p, refs in resolved.points.items()}
    out["score"] = [(r.name, r.weight) for r in resolved.points["score"]]
    return out


UPSTREAM_DEFAULT = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
    ],
    "filter": [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
        "InterPodAffinity", "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("VolumeBinding", 1),
        ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}  # fmt: skip

# Names per point, and (name, weight) pairs for score.
OUR_DEFAULT: dict[str, list[Any]] = {
    "preEnqueue": ["SchedulingGates", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": ["NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"],
    "filter": [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "PodTopologySpread", "InterPodAffinity",
    ],
    "postFilter": ["DefaultPreemption"],
    "preScore": [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ],
    "reserve": [],
    "permit": [],
    "preBind": [],
    "bind": ["DefaultBinder"],
    "postBind": [],
}  # fmt: skip


def test_default_profile_matches_upstream_with_every_in_tree_plugin() -> None:
    assert resolve(ALL_IN_TREE) == UPSTREAM_DEFAULT


def test_default_profile_drops_unimplemented_defaults() -> None:
    assert resolve(NO_STORAGE) == OUR_DEFAULT


def test_default_profile_is_upstreams() -> None:
    """policy-scheduler implements every plugin of upstream's default profiles, and by default a
    profile may use exactly those (NodeDeclaredFeatures is alpha in v1.35, a default from v1.36;
    GangScheduling a default once the Workload API's gate is on)."""
    assert ALL_IN_TREE | {"NodeDeclaredFeatures", "GangScheduling"} == IN_TREE
    assert {ref.name for ref in default_plugins(Features(V1_37))} == IN_TREE - {"GangScheduling"}
    assert resolve() == UPSTREAM_DEFAULT


@pytest.mark.parametrize(
    ("version", "gate", "points"),
    [
        (V1_35, "GangScheduling", "preEnqueue, reserve, permit"),
        (V1_36, "GangScheduling", "preEnqueue, postFilter, permit"),
        (V1_37, "GenericWorkload", "preEnqueue, postFilter, permit"),
    ],
    ids=str,
)
def test_gang_scheduling_is_a_default_with_its_gate(
    version: KubernetesVersion, gate: str, points: str
) -> None:
    """applyFeatureGates: GangScheduling joins the default profile with its release's gate, at the
    extension points of that release (v1.35 also Reserve; from v1.36 our PostFilter)."""
    on = Features(version, (("GenericWorkload", True), (gate, True)))
    assert "GangScheduling" in {ref.name for ref in default_plugins(on)}
    assert "GangScheduling" not in {ref.name for ref in default_plugins(Features(version))}
    wrong_point = ProfileConfig(plugins=plugins(score={"enabled": ["GangScheduling"]}))
    with pytest.raises(ProfileError, match=rf"it implements {points}\)"):
        resolve_profile(wrong_point, features=on)


def test_v137_nodename_has_a_prefilter() -> None:
    config = ProfileConfig(plugins=plugins(score={"enabled": ["NodeName"]}))
    with pytest.raises(ProfileError, match=r"it implements preFilter, filter\)"):
        resolve_profile(config, features=Features(V1_37))
    with pytest.raises(ProfileError, match=r"it implements filter\)"):
        resolve_profile(config, features=Features(V1_36))


def test_default_plugins_order_and_weights() -> None:
    assert [(p.name, p.weight) for p in DEFAULT_PLUGINS] == [
        ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
        ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
        ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 2), ("DefaultPreemption", 0),
        ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
    ]  # fmt: skip


def test_every_point_is_present_and_profile_fields_carry_over() -> None:
    config = ProfileConfig(
        scheduler_name="s",
        percentage_of_nodes_to_score=30,
        plugin_config={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
        pod_initial_backoff_seconds=2,
        pod_max_backoff_seconds=4,
        eviction_policy_name="gentle",
    )
    resolved = resolve_profile(config)
    assert set(resolved.points) == set(EXTENSION_POINTS)
    assert resolved.scheduler_name == "s"
    assert resolved.percentage_of_nodes_to_score == 30
    assert resolved.plugin_config == config.plugin_config
    assert (resolved.pod_initial_backoff_seconds, resolved.pod_max_backoff_seconds) == (2, 4)
    assert resolved.eviction_policy_name == "gentle"
    assert effective_plugins(resolved)["bind"] == ["DefaultBinder"]
    assert "permit" not in effective_plugins(resolved)


# (case, plugins config, implemented, {point: expected}) — checked against kube-scheduler v1.35.4.
CASES: list[tuple[str, dict[str, dict[str, list[Any]]], frozenset[str], dict[str, Any]]] = [
    (
        "disable all multiPoint defaults, enable a few",
        {
            "multiPoint": {
                "disabled": ["*"],
                "enabled": ["PrioritySort", "DefaultBinder", ("NodeResourcesFit", 5)],
            }
        },
        ALL_IN_TREE,
        {
            "preEnqueue": [],
            "filter": ["NodeResourcesFit"],
            "preScore": ["NodeResourcesFit"],
            "score": [("NodeResourcesFit", 5)],
            "postFilter": [],
        },
    ),
    (
        "disable every default score plugin and pick new ones",
        {"score": {"disabled": ["*"], "enabled": [("NodeResourcesFit", 10), ("ImageLocality", 3)]}},
        NO_STORAGE,
        {"score": [("NodeResourcesFit", 10), ("ImageLocality", 3)], "preScore": OUR_DEFAULT["preScore"]},
    ),
    (
        "re-enabled default without weight gets 1; explicit score entry goes first",
        {"multiPoint": {"enabled": ["TaintToleration"]}, "score": {"enabled": [("NodeAffinity", 7)]}},
        ALL_IN_TREE,
        {
            "score": [
                ("NodeAffinity", 7),
                ("TaintToleration", 1),
                ("NodeResourcesFit", 1),
                ("VolumeBinding", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("DynamicResources", 2),
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
            ]
        },
    ),
    (
        "explicit filter entries override multiPoint and keep their order",
        {"filter": {"enabled": ["NodePorts", "NodeName"]}, "preScore": {"disabled": ["InterPodAffinity"]}},
        NO_STORAGE,
        {
            "filter": [
                "NodePorts",
                "NodeName",
                "NodeUnschedulable",
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "PodTopologySpread",
                "InterPodAffinity",
            ],
            "preScore": [
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "PodTopologySpread",
                "NodeResourcesBalancedAllocation",
            ],
        },
    ),
    (
        "plugin disabled in multiPoint but enabled for one point",
        {"multiPoint": {"disabled": ["TaintToleration"]}, "filter": {"enabled": ["TaintToleration"]}},
        NO_STORAGE,
        {
            "filter": [
                "NodeUnschedulable",
                "NodeName",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "PodTopologySpread",
                "InterPodAffinity",
                "TaintToleration",
            ],
            "preScore": [
                "NodeAffinity",
                "NodeResourcesFit",
                "PodTopologySpread",
                "InterPodAffinity",
                "NodeResourcesBalancedAllocation",
            ],
        },
    ),
    (
        "explicit score weight 0 wins over multiPoint weight and means 1",
        {"multiPoint": {"enabled": [("ImageLocality", 5)]}, "score": {"enabled": ["ImageLocality"]}},
        NO_STORAGE,
        {
            "score": [
                ("ImageLocality", 1),
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("NodeResourcesFit", 1),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1),
            ]
        },
    ),
    (
        "multiPoint weight used when the score point does not name the plugin",
        {"multiPoint": {"enabled": [("ImageLocality", 50)]}},
        NO_STORAGE,
        {"score": [(n, 50 if n == "ImageLocality" else w) for n, w in OUR_DEFAULT["score"]]},
    ),
    (
        "disabled and re-enabled default moves to the end with its new weight",
        {
            "multiPoint": {
                "disabled": ["NodeResourcesFit", "ImageLocality"],
                "enabled": [("NodeResourcesFit", 4)],
            }
        },
        NO_STORAGE,
        {
            "score": [
                ("TaintToleration", 3),
                ("NodeAffinity", 2),
                ("PodTopologySpread", 2),
                ("InterPodAffinity", 2),
                ("NodeResourcesBalancedAllocation", 1),
                ("NodeResourcesFit", 4),
            ],
            "filter": [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "PodTopologySpread",
                "InterPodAffinity",
                "NodeResourcesFit",
            ],
        },
    ),
    (
        "custom multiPoint list with an explicit score reweight",
        {
            "multiPoint": {
                "disabled": ["*"],
                "enabled": [
                    "DefaultBinder",
                    "PrioritySort",
                    ("ImageLocality", 50),
                    "NodeResourcesBalancedAllocation",
                ],
            },
            "score": {"enabled": [("NodeResourcesBalancedAllocation", 9)]},
        },
        NO_STORAGE,
        {
            "score": [("NodeResourcesBalancedAllocation", 9), ("ImageLocality", 50)],
            "preScore": ["NodeResourcesBalancedAllocation"],
            "bind": ["DefaultBinder"],
            "queueSort": ["PrioritySort"],
            "filter": [],
        },
    ),
    (
        "disabling * at specific points empties them",
        {"filter": {"disabled": ["*"]}, "score": {"disabled": ["*"]}, "preEnqueue": {"disabled": ["*"]}},
        NO_STORAGE,
        {"filter": [], "score": [], "preEnqueue": [], "preFilter": OUR_DEFAULT["preFilter"]},
    ),
    (
        "disabling unimplemented or unknown plugins is harmless",
        {"multiPoint": {"disabled": ["VolumeBinding", "VolumeZone", "NoSuchPlugin"]}},
        NO_STORAGE,
        OUR_DEFAULT,
    ),
    (
        "re-enabling the default queue sort and binder explicitly changes nothing",
        {
            "queueSort": {"enabled": ["PrioritySort"]},
            "bind": {"disabled": ["*"], "enabled": ["DefaultBinder"]},
        },
        NO_STORAGE,
        OUR_DEFAULT,
    ),
]


@pytest.mark.parametrize(
    ("config", "implemented", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_resolution(
    config: dict[str, dict[str, list[Any]]], implemented: frozenset[str], expected: dict[str, Any]
) -> None:
    got = resolve(implemented, **config)
    assert {point: got[point] for point in expected} == expected


ERRORS: list[tuple[str, ProfileConfig, str, str]] = [
    (
        "unknown plugin",
        ProfileConfig(plugins=plugins(score={"enabled": ["ImageLocality", "NoSuchPlugin"]})),
        "spec.plugins.score.enabled[1].name",
        'unknown plugin "NoSuchPlugin"',
    ),
    (
        "removed plugin",
        ProfileConfig(plugins=plugins(filter={"enabled": ["EBSLimits"]})),
        "spec.plugins.filter.enabled[0].name",
        "was removed",
    ),
    (
        "plugin at a point it does not implement",
        ProfileConfig(plugins=plugins(score={"enabled": ["NodeName"]})),
        "spec.plugins.score.enabled[0].name",
        'plugin "NodeName" does not implement the score extension point (it implements filter)',
    ),
    (
        "duplicate at one point",
        ProfileConfig(plugins=plugins(filter={"enabled": ["NodeName", "NodePorts", "NodeName"]})),
        "spec.plugins.filter.enabled[2].name",
        "enabled more than once",
    ),
    (
        "duplicate in multiPoint",
        ProfileConfig(plugins=plugins(multiPoint={"enabled": ["ImageLocality", "ImageLocality"]})),
        "spec.plugins.multiPoint.enabled[1].name",
        "enabled more than once",
    ),
    (
        "score weight too high",
        ProfileConfig(plugins=plugins(score={"enabled": [("ImageLocality", 101)]})),
        "spec.plugins.score.enabled[0].weight",
        "not in valid range [0, 100]",
    ),
    (
        "negative multiPoint weight of a score plugin",
        ProfileConfig(plugins=plugins(multiPoint={"enabled": [("NodeAffinity", -1)]})),
        "spec.plugins.multiPoint.enabled[0].weight",
        "not in valid range",
    ),
    (
        "no queue sort",
        ProfileConfig(plugins=plugins(queueSort={"disabled": ["*"]})),
        "spec.plugins.queueSort",
        "exactly one queueSort plugin must be enabled, got 0",
    ),
    (
        "queue sort disabled in multiPoint and at its point",
        ProfileConfig(
            plugins=plugins(multiPoint={"disabled": ["PrioritySort"]}, queueSort={"disabled": ["*"]})
        ),
        "spec.plugins.queueSort",
        "got 0",
    ),
    (
        "no bind plugin",
        ProfileConfig(plugins=plugins(bind={"disabled": ["DefaultBinder"]})),
        "spec.plugins.bind",
        "at least one bind plugin",
    ),
    (
        "unknown extension point",
        ProfileConfig(plugins=plugins(scoring={"enabled": ["ImageLocality"]})),
        "spec.plugins.scoring",
        "unknown extension point",
    ),
    ("empty scheduler name", ProfileConfig(scheduler_name=""), "spec.schedulerName", "must not be empty"),
    (
        "percentage out of range",
        ProfileConfig(percentage_of_nodes_to_score=101),
        "spec.percentageOfNodesToScore",
        "not in valid range [0-100]",
    ),
    (
        "max backoff below initial",
        ProfileConfig(pod_initial_backoff_seconds=5, pod_max_backoff_seconds=2),
        "spec.podMaxBackoffSeconds",
        "greater than or equal to podInitialBackoffSeconds",
    ),
    (
        "zero initial backoff",
        ProfileConfig(pod_initial_backoff_seconds=0),
        "spec.podInitialBackoffSeconds",
        "must be greater than 0",
    ),
]


@pytest.mark.parametrize(("config", "path", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(config: ProfileConfig, path: str, message: str) -> None:
    with pytest.raises(ProfileError) as info:
        resolve_profile(config, features=V135)
    assert info.value.field_path == path
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}: ")


def test_every_error_is_reported_and_path_prefix_is_configurable() -> None:
    config = ProfileConfig(
        percentage_of_nodes_to_score=-1,
        plugins=plugins(score={"enabled": ["NodeName", ("ImageLocality", 1000)]}),
    )
    with pytest.raises(ProfileError) as info:
        resolve_profile(config, path="profiles[2]")
    assert [p for p, _ in info.value.errors] == [
        "profiles[2].percentageOfNodesToScore",
        "profiles[2].plugins.score.enabled[0].name",
        "profiles[2].plugins.score.enabled[1].weight",
    ]


def test_unimplemented_explicit_plugin_is_an_error_even_when_a_default() -> None:
    with pytest.raises(ProfileError, match="not supported"):
        resolve_profile(ProfileConfig(plugins=plugins(filter={"enabled": ["VolumeZone"]})), NO_STORAGE)


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37])
@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_validation_follows_the_plugin_class(name: str, version: KubernetesVersion) -> None:
    """A point is accepted for a plugin exactly when its registered class implements it in the
    release, and the error lists the points the class implements there."""
    features = Features(version)
    plugin = in_tree_registry()[name]
    implements = implemented_points(plugin) - plugin.points_absent_in(features)
    for point in EXTENSION_POINTS:
        config = ProfileConfig(plugins=plugins(**{point: {"enabled": [name], "disabled": ["*"]}}))
        try:
            resolve_profile(config, features=features)
        except ProfileError as exc:
            messages = [message for _, message in exc.errors]
        else:
            messages = []
        refused = [m for m in messages if "does not implement" in m]
        assert bool(refused) == (point not in implements), (name, point, messages)
        if refused:
            listed = refused[0].rsplit("(it implements ", 1)[1].rstrip(")").split(", ")
            assert set(listed) == implements


@pytest.mark.parametrize(
    ("version", "name", "point", "points"),
    [
        (V1_37, "DeferredPodScheduling", "filter", "preFilter, filter, permit"),
    ],
)
def test_upstream_alpha_plugins_are_known_but_not_supported(
    version: KubernetesVersion, name: str, point: str, points: str
) -> None:
    features = Features(version)
    enabled = ProfileConfig(plugins=plugins(**{point: {"enabled": [name]}}))
    with pytest.raises(ProfileError) as info:
        resolve_profile(enabled, features=features)
    assert info.value.errors == (
        (
            f"spec.plugins.{point}.enabled[0].name",
            f'plugin "{name}" is not supported by policy-scheduler (alpha plugins are not implemented)',
        ),
    )
    disabled = ProfileConfig(plugins=plugins(**{point: {"disabled": [name]}}))
    # disabling one is fine
    assert resolve_profile(disabled, features=features) == resolve_profile(ProfileConfig(), features=features)
    # A registry that had one would place it at upstream's points.
    wrong_point = ProfileConfig(plugins=plugins(score={"enabled": [name]}))
    with pytest.raises(ProfileError, match=rf"it implements {points}\)"):
        resolve_profile(wrong_point, IN_TREE | {name}, features=features)


def test_plugins_upstream_added_later_are_unknown_before() -> None:
    config = ProfileConfig(plugins=plugins(filter={"enabled": ["DeferredPodScheduling"]}))
    with pytest.raises(ProfileError, match='unknown plugin "DeferredPodScheduling"'):
        resolve_profile(config, features=Features(V1_36))
