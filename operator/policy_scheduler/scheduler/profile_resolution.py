"""Profile resolution: kube-scheduler's plugin defaulting, merging and multiPoint expansion.

`resolve_profile` turns what a user wrote (`ProfileConfig`) into the ordered plugin list of every
extension point (`ResolvedProfile`), for the release and feature gates of its `Features`, in
three steps that mirror upstream:

1. v1 defaulting (pkg/scheduler/apis/config/v1/default_plugins.go): the default plugins of the
   release with its gates applied (`default_plugins`) are multiPoint plugins; `mergePluginSet`
   merges the user's set of every point into the defaults.
   Disabling "*" drops every default of that point, disabling a name drops that default, a
   re-enabled default keeps its default position but takes the user's entry (and weight), other
   enabled plugins are appended in the user's order.
2. The framework's expansion (pkg/scheduler/framework/runtime/framework.go,
   `expandMultiPointPlugins`): every multiPoint plugin joins each point it implements unless the
   point disables it or "*"; plugins named explicitly at a point keep that point's order and
   override multiPoint. Order: overridden plugins (explicit order), then multiPoint plugins,
   then the other explicit plugins.
3. Score weights (`getScoreWeights`): an explicit score entry wins over multiPoint; 0 means 1.

Defaults that are not in the `implemented` set are dropped silently; naming an unimplemented
plugin explicitly in an enabled list is an error, disabling one is fine. The extension points of a
plugin are those its registered class implements (scheduler/plugins/registry.py); `implemented`
defaults to the in-tree plugins.

Deliberate differences from upstream, all stricter and reported as `ProfileError`:
- score weights must be within 0..MAX_SCORE_WEIGHT (upstream only guards int64 overflow);
- a plugin enabled twice in one list is an error even when upstream would not notice because
  every point it implements is disabled or overridden.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from policy_scheduler.scheduler.config import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginRef,
    PluginSet,
    ProfileConfig,
    ResolvedProfile,
)
from policy_scheduler.scheduler.plugins.registry import extension_points, in_tree_registry, plugin_registry
from policy_scheduler.scheduler.versioning import gates
from policy_scheduler.scheduler.versioning.features import FeatureGateError, Features, default_features
from policy_scheduler.scheduler.versioning.gates import GANG_SCHEDULING as GANG_GATE
from policy_scheduler.scheduler.versioning.gates import GENERIC_WORKLOAD
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

# Names as in pkg/scheduler/framework/plugins/names/names.go.
SCHEDULING_GATES = "SchedulingGates"
PRIORITY_SORT = "PrioritySort"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_BINDER = "DefaultBinder"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
GANG_SCHEDULING = "GangScheduling"

TOPOLOGY_PLACEMENT_GENERATOR = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
DEFERRED_POD_SCHEDULING = "DeferredPodScheduling"


def default_plugins(features: Features) -> tuple[PluginRef, ...]:
    """getDefaultPlugins() then applyFeatureGates() of `features`' release
    (pkg/scheduler/apis/config/v1/default_plugins.go): the default multiPoint plugins in order."""
    first, second = (NODE_NAME, NODE_UNSCHEDULABLE)
    if not features.behaviour.node_name_before_node_unschedulable:
        first, second = second, first
    plugins = [
        PluginRef(SCHEDULING_GATES),
        PluginRef(PRIORITY_SORT),
        PluginRef(first),
        PluginRef(second),
        PluginRef(TAINT_TOLERATION, 3),
        PluginRef(NODE_AFFINITY, 2),
        PluginRef(NODE_PORTS),
        PluginRef(NODE_RESOURCES_FIT, 1),
        PluginRef(VOLUME_RESTRICTIONS),
        PluginRef(NODE_VOLUME_LIMITS),
        PluginRef(VOLUME_BINDING),
        PluginRef(VOLUME_ZONE),
        PluginRef(POD_TOPOLOGY_SPREAD, 2),
        PluginRef(INTER_POD_AFFINITY, 2),
        PluginRef(DEFAULT_PREEMPTION),
        PluginRef(NODE_RESOURCES_BALANCED_ALLOCATION, 1),
        PluginRef(IMAGE_LOCALITY, 1),
        PluginRef(DEFAULT_BINDER),
    ]
    if features.enabled(gates.NODE_DECLARED_FEATURES):
        plugins.append(PluginRef(NODE_DECLARED_FEATURES))
    if features.enabled(gates.IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION):
        fit = [ref.name for ref in plugins].index(NODE_RESOURCES_FIT)
        plugins.insert(fit, PluginRef(DEFERRED_POD_SCHEDULING))
    if features.enabled(gates.DYNAMIC_RESOURCE_ALLOCATION):
        # Before DefaultPreemption: deallocating an idle claim beats evicting a working pod.
        preemption = [ref.name for ref in plugins].index(DEFAULT_PREEMPTION)
        plugins.insert(preemption, PluginRef(DYNAMIC_RESOURCES, 2))
    gang_gate = GENERIC_WORKLOAD if features.behaviour.gang_scheduling_follows_generic_workload else GANG_GATE
    if features.enabled(gang_gate):
        plugins.append(PluginRef(GANG_SCHEDULING))
    if features.enabled(gates.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        plugins.append(PluginRef(TOPOLOGY_PLACEMENT_GENERATOR))
        plugins.append(PluginRef(POD_GROUP_PODS_COUNT, 1))
    return tuple(plugins)


# Upstream plugins policy-scheduler does not implement (their feature gates are off by default),
# by the release whose registry (framework/plugins/registry.go) has them, with the extension
# points upstream's types implement: a profile enabling one is told it is not supported rather
# than that it is unknown. Every other plugin's points come from its class.
_PLACEMENT: Mapping[str, frozenset[str]] = {
    TOPOLOGY_PLACEMENT_GENERATOR: frozenset({"placementGenerate"}),
    POD_GROUP_PODS_COUNT: frozenset({"placementScore"}),
}
UNIMPLEMENTED_UPSTREAM_PLUGINS: Mapping[KubernetesVersion, Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        V1_35: MappingProxyType({}),
        V1_36: MappingProxyType({**_PLACEMENT}),
        V1_37: MappingProxyType(
            {**_PLACEMENT, DEFERRED_POD_SCHEDULING: frozenset({"preFilter", "filter", "permit"})}
        ),
    }
)

# Plugins removed from v1 (validation.go invalidPluginsByVersion).
REMOVED_PLUGINS: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

DEFAULT_SCORE_WEIGHT = 1
MAX_SCORE_WEIGHT = 100
DISABLE_ALL = "*"


class ProfileError(ValueError):
    """A profile that kube-scheduler's framework would refuse, with the offending field path.

    `field_path`/`message` describe the first problem; `errors` lists every problem found.
    """

    def __init__(self, field_path: str, message: str, more: Sequence[tuple[str, str]] = ()) -> None:
        self.field_path = field_path
        self.message = message
        self.errors: tuple[tuple[str, str], ...] = ((field_path, message), *more)
        super().__init__("; ".join(f"{path}: {msg}" for path, msg in self.errors))


@dataclass(frozen=True, slots=True)
class _Plugins:
    """What one resolution knows about plugin names, read from the registry once."""

    implemented: frozenset[str]
    # Extension points of every implemented plugin and of every upstream one.
    points: Mapping[str, frozenset[str]]
    # Names upstream's framework registers: refused as not supported (not as unknown) when they
    # are not implemented.
    upstream: frozenset[str]

    @staticmethod
    def read(implemented: frozenset[str] | None, named: Iterable[str], features: Features) -> _Plugins:
        """`named`: the plugins a profile names; the others it may use are in-tree (defaults)."""
        in_tree = extension_points(in_tree_registry(), features)
        points = {**UNIMPLEMENTED_UPSTREAM_PLUGINS[features.version], **in_tree}
        upstream = frozenset(points)
        if implemented is None:
            implemented = frozenset(in_tree)
        others = implemented.intersection(named) - upstream
        if others:  # bundled or installed: reading the entry points is slow, so only then
            registered = extension_points(plugin_registry(), features)
            points.update((name, registered.get(name, frozenset())) for name in others)
        return _Plugins(implemented, points, upstream)

    def points_of(self, name: str) -> frozenset[str]:
        return self.points[name]


@dataclass(frozen=True, slots=True)
class _Entry:
    """A merged enabled entry and where it came from (index in the user's list; None: default)."""

    ref: PluginRef
    index: int | None


def resolve_profile(
    profile: ProfileConfig,
    implemented: frozenset[str] | None = None,
    *,
    path: str = "spec",
    features: Features | None = None,
) -> ResolvedProfile:
    """Merge `profile` with the defaults and expand multiPoint; raise ProfileError if invalid.

    `implemented`: the plugin names a profile may use (None: the in-tree plugins).
    `path` prefixes field paths in errors (`spec` for a SchedulingProfile).
    `features`: the release and feature gates before the profile's own `feature_gates` (None:
    the newest supported release's defaults); they choose the default plugins.
    """
    features = profile_features(profile, features, path)
    named = (ref.name for plugin_set in profile.plugins.values() for ref in plugin_set.enabled)
    plugins = _Plugins.read(implemented, named, features)
    errors: list[tuple[str, str]] = []
    errors.extend(_check_scalars(profile, path))
    errors.extend(_check_plugin_sets(profile.plugins, plugins, f"{path}.plugins"))
    if errors:
        raise ProfileError(*errors[0], more=errors[1:])

    defaults = tuple(
        _Entry(ref, None) for ref in default_plugins(features) if ref.name in plugins.implemented
    )
    multi = _merge(defaults, profile.plugins.get(MULTI_POINT, PluginSet()))
    points = {
        point: _expand(point, profile.plugins.get(point, PluginSet()), multi, plugins)
        for point in EXTENSION_POINTS
    }
    weights = _score_weights(profile.plugins.get("score", PluginSet()).enabled, multi, plugins)
    points["score"] = tuple(PluginRef(ref.name, weights[ref.name]) for ref in points["score"])

    errors.extend(_check_required_points(points, f"{path}.plugins"))
    if errors:
        raise ProfileError(*errors[0], more=errors[1:])
    return ResolvedProfile(
        scheduler_name=profile.scheduler_name,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        points=points,
        plugin_config=dict(profile.plugin_config),
        pod_initial_backoff_seconds=profile.pod_initial_backoff_seconds,
        pod_max_backoff_seconds=profile.pod_max_backoff_seconds,
        eviction_policy_name=profile.eviction_policy_name,
        pending_summary_annotation=profile.pending_summary_annotation,
        features=features,
    )


def profile_features(profile: ProfileConfig, features: Features | None, path: str = "spec") -> Features:
    """`features` (None: the newest release's defaults) with the profile's own feature gates;
    ProfileError at `path`.featureGates.<gate> for a setting the release refuses."""
    base = default_features() if features is None else features
    try:
        return base.with_settings(profile.feature_gates)
    except FeatureGateError as exc:
        own = dict(profile.feature_gates)
        errors = [
            (f"{path}.featureGates.{gate}" if gate in own else f"{path}.featureGates", m)
            for gate, m in exc.problems
        ]
        raise ProfileError(*errors[0], more=errors[1:]) from None


def effective_plugins(resolved: ResolvedProfile) -> dict[str, list[str]]:
    """Plugin names per extension point, for status.effectivePlugins (empty points omitted)."""
    return {point: [ref.name for ref in refs] for point, refs in resolved.points.items() if refs}


def _check_scalars(profile: ProfileConfig, path: str) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    if not profile.scheduler_name:
        errors.append((f"{path}.schedulerName", "must not be empty"))
    pct = profile.percentage_of_nodes_to_score
    if pct is not None and not 0 <= pct <= 100:
        errors.append((f"{path}.percentageOfNodesToScore", f"{pct} not in valid range [0-100]"))
    if profile.pod_initial_backoff_seconds <= 0:
        errors.append((f"{path}.podInitialBackoffSeconds", "must be greater than 0"))
    if profile.pod_max_backoff_seconds < profile.pod_initial_backoff_seconds:
        errors.append(
            (f"{path}.podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds")
        )
    return errors


def _check_plugin_sets(
    plugin_sets: dict[str, PluginSet], plugins: _Plugins, path: str
) -> list[tuple[str, str]]:
    """Static checks on what the user enabled; mirrors the framework's updatePluginList errors."""
    errors: list[tuple[str, str]] = []
    for point, plugin_set in plugin_sets.items():
        if point != MULTI_POINT and point not in EXTENSION_POINTS:
            known = ", ".join((MULTI_POINT, *EXTENSION_POINTS))
            errors.append((f"{path}.{point}", f"unknown extension point (known: {known})"))
            continue
        seen: set[str] = set()
        for i, ref in enumerate(plugin_set.enabled):
            entry_path = f"{path}.{point}.enabled[{i}]"
            if ref.name in seen:
                errors.append((f"{entry_path}.name", f"plugin {_q(ref.name)} is enabled more than once"))
            seen.add(ref.name)
            errors.extend(_check_entry(point, ref, plugins, entry_path))
    return errors


def _check_entry(point: str, ref: PluginRef, plugins: _Plugins, path: str) -> list[tuple[str, str]]:
    problem = _unusable(ref.name, plugins)
    if problem:
        return [(f"{path}.name", problem)]
    errors: list[tuple[str, str]] = []
    implements = plugins.points_of(ref.name)
    if point != MULTI_POINT and point not in implements:
        message = (
            f"plugin {_q(ref.name)} does not implement the {point} extension point "
            f"(it implements {_points_list(implements)})"
        )
        errors.append((f"{path}.name", message))
    # The weight only matters where it can reach the score point.
    weighted = point in ("score", MULTI_POINT) and "score" in implements
    if weighted and not 0 <= ref.weight <= MAX_SCORE_WEIGHT:
        message = f"{ref.weight} not in valid range [0, {MAX_SCORE_WEIGHT}] (0 means {DEFAULT_SCORE_WEIGHT})"
        errors.append((f"{path}.weight", message))
    return errors


def _unusable(name: str, plugins: _Plugins) -> str | None:
    if name in plugins.implemented:
        return None
    if name in REMOVED_PLUGINS:
        return f"plugin {_q(name)} was removed in kubescheduler.config.k8s.io/v1"
    if name in plugins.upstream:
        return f"plugin {_q(name)} is not supported by policy-scheduler (alpha plugins are not implemented)"
    return f"unknown plugin {_q(name)} (supported: {', '.join(sorted(plugins.implemented))})"


def _q(name: str) -> str:
    """Quote a name the way Kubernetes messages do."""
    return f'"{name}"'


def _points_list(points: Iterable[str]) -> str:
    return ", ".join(p for p in EXTENSION_POINTS if p in set(points))


def _merge(defaults: tuple[_Entry, ...], custom: PluginSet) -> tuple[_Entry, ...]:
    """mergePluginSet for one point: `defaults` are that point's default enabled entries."""
    disabled = {ref.name for ref in custom.disabled}
    # A name enabled twice is rejected earlier, so "last index wins" never matters here.
    custom_index = {ref.name: i for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    merged: list[_Entry] = []
    if DISABLE_ALL not in disabled:
        for entry in defaults:
            if entry.ref.name in disabled:
                continue
            i = custom_index.get(entry.ref.name)
            if i is not None:  # re-configured default: keeps its place, takes the user's entry
                merged.append(_Entry(custom.enabled[i], i))
                replaced.add(i)
            else:
                merged.append(entry)
    merged.extend(_Entry(ref, i) for i, ref in enumerate(custom.enabled) if i not in replaced)
    return tuple(merged)


def _expand(
    point: str, explicit: PluginSet, multi: tuple[_Entry, ...], plugins: _Plugins
) -> tuple[PluginRef, ...]:
    """The framework's list for one point: explicit entries plus expanded multiPoint plugins."""
    explicit_names = [ref.name for ref in explicit.enabled]
    disabled = {ref.name for ref in explicit.disabled}
    if DISABLE_ALL in disabled:
        return tuple(PluginRef(name) for name in explicit_names)
    overridden: set[str] = set()
    from_multi: list[str] = []
    for entry in multi:
        name = entry.ref.name
        if point not in plugins.points_of(name) or name in disabled:
            continue
        if name in explicit_names:  # explicit configuration of this point wins over multiPoint
            overridden.add(name)
        elif name not in from_multi:
            from_multi.append(name)
    order = (
        [n for n in explicit_names if n in overridden]
        + from_multi
        + [n for n in explicit_names if n not in overridden]
    )
    return tuple(PluginRef(name) for name in order)


def _score_weights(
    explicit: tuple[PluginRef, ...], multi: tuple[_Entry, ...], plugins: _Plugins
) -> dict[str, int]:
    """getScoreWeights: first of explicit score entries, then merged multiPoint; 0 means 1."""
    weights: dict[str, int] = {}
    for ref in (*explicit, *(entry.ref for entry in multi)):
        if "score" in plugins.points_of(ref.name):
            weights.setdefault(ref.name, ref.weight or DEFAULT_SCORE_WEIGHT)
    return weights


def _check_required_points(points: dict[str, tuple[PluginRef, ...]], path: str) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    queue_sort = points["queueSort"]
    if len(queue_sort) != 1:
        names = ", ".join(ref.name for ref in queue_sort) or "none"
        message = f"exactly one queueSort plugin must be enabled, got {len(queue_sort)} ({names})"
        errors.append((f"{path}.queueSort", message))
    if not points["bind"]:
        errors.append((f"{path}.bind", "at least one bind plugin must be enabled"))
    return errors
