"""Profile resolution: kube-scheduler v1.35's plugin defaulting, merging and multiPoint expansion.

`resolve_profile` turns what a user wrote (`ProfileConfig`) into the ordered plugin list of every
extension point (`ResolvedProfile`), in three steps that mirror upstream:

1. v1 defaulting (pkg/scheduler/apis/config/v1/default_plugins.go): the default plugins are
   multiPoint plugins; `mergePluginSet` merges the user's set of every point into the defaults.
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
plugin explicitly in an enabled list is an error, disabling one is fine.

Deliberate differences from upstream, all stricter and reported as `ProfileError`:
- score weights must be within 0..MAX_SCORE_WEIGHT (upstream only guards int64 overflow);
- a plugin enabled twice in one list is an error even when upstream would not notice because
  every point it implements is disabled or overridden.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policy_scheduler.scheduler.config import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginRef,
    PluginSet,
    ProfileConfig,
    ResolvedProfile,
)

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

# getDefaultPlugins() with v1.35's default feature gates: DynamicResourceAllocation is GA and
# locked on (DynamicResources goes right before DefaultPreemption); NodeDeclaredFeatures and
# GangScheduling are alpha and off.
DEFAULT_PLUGINS: tuple[PluginRef, ...] = (
    PluginRef(SCHEDULING_GATES),
    PluginRef(PRIORITY_SORT),
    PluginRef(NODE_UNSCHEDULABLE),
    PluginRef(NODE_NAME),
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
    PluginRef(DYNAMIC_RESOURCES, 2),
    PluginRef(DEFAULT_PREEMPTION),
    PluginRef(NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    PluginRef(IMAGE_LOCALITY, 1),
    PluginRef(DEFAULT_BINDER),
)

# The extension points each in-tree plugin type implements in v1.35 (its method set, checked
# against the plugin sources; EnqueueExtensions/Sign are not plugin-set points).
PLUGIN_EXTENSION_POINTS: dict[str, frozenset[str]] = {
    SCHEDULING_GATES: frozenset({"preEnqueue"}),
    PRIORITY_SORT: frozenset({"queueSort"}),
    NODE_UNSCHEDULABLE: frozenset({"filter"}),
    NODE_NAME: frozenset({"filter"}),
    TAINT_TOLERATION: frozenset({"filter", "preScore", "score"}),
    NODE_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    NODE_PORTS: frozenset({"preFilter", "filter"}),
    NODE_RESOURCES_FIT: frozenset({"preFilter", "filter", "preScore", "score"}),
    VOLUME_RESTRICTIONS: frozenset({"preFilter", "filter"}),
    NODE_VOLUME_LIMITS: frozenset({"preFilter", "filter"}),
    VOLUME_BINDING: frozenset({"preFilter", "filter", "preScore", "score", "reserve", "preBind"}),
    VOLUME_ZONE: frozenset({"preFilter", "filter"}),
    POD_TOPOLOGY_SPREAD: frozenset({"preFilter", "filter", "preScore", "score"}),
    INTER_POD_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    DYNAMIC_RESOURCES: frozenset(
        {"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"}
    ),
    # PreEnqueue holds back pods whose async preemption is still running.
    DEFAULT_PREEMPTION: frozenset({"preEnqueue", "postFilter"}),
    NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({"preScore", "score"}),
    IMAGE_LOCALITY: frozenset({"score"}),
    DEFAULT_BINDER: frozenset({"bind"}),
    NODE_DECLARED_FEATURES: frozenset({"preFilter", "filter"}),
    GANG_SCHEDULING: frozenset({"preEnqueue", "reserve", "permit"}),
}

# Everything except the alpha plugins; the plugin registry may pass its own set.
IMPLEMENTED_PLUGINS: frozenset[str] = frozenset(
    {
        SCHEDULING_GATES,
        PRIORITY_SORT,
        NODE_UNSCHEDULABLE,
        NODE_NAME,
        TAINT_TOLERATION,
        NODE_AFFINITY,
        NODE_PORTS,
        NODE_RESOURCES_FIT,
        VOLUME_RESTRICTIONS,
        NODE_VOLUME_LIMITS,
        VOLUME_BINDING,
        VOLUME_ZONE,
        POD_TOPOLOGY_SPREAD,
        INTER_POD_AFFINITY,
        DYNAMIC_RESOURCES,
        DEFAULT_PREEMPTION,
        NODE_RESOURCES_BALANCED_ALLOCATION,
        IMAGE_LOCALITY,
        DEFAULT_BINDER,
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
class _Entry:
    """A merged enabled entry and where it came from (index in the user's list; None: default)."""

    ref: PluginRef
    index: int | None


def resolve_profile(
    profile: ProfileConfig,
    implemented: frozenset[str] = IMPLEMENTED_PLUGINS,
    *,
    path: str = "spec",
) -> ResolvedProfile:
    """Merge `profile` with the defaults and expand multiPoint; raise ProfileError if invalid.

    `path` prefixes field paths in errors (`spec` for a SchedulingProfile).
    """
    errors: list[tuple[str, str]] = []
    errors.extend(_check_scalars(profile, path))
    errors.extend(_check_plugin_sets(profile.plugins, implemented, f"{path}.plugins"))
    if errors:
        raise ProfileError(*errors[0], more=errors[1:])

    defaults = tuple(_Entry(ref, None) for ref in DEFAULT_PLUGINS if ref.name in implemented)
    multi = _merge(defaults, profile.plugins.get(MULTI_POINT, PluginSet()))
    points = {
        point: _expand(point, profile.plugins.get(point, PluginSet()), multi) for point in EXTENSION_POINTS
    }
    weights = _score_weights(profile.plugins.get("score", PluginSet()).enabled, multi)
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
    )


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
    plugins: dict[str, PluginSet], implemented: frozenset[str], path: str
) -> list[tuple[str, str]]:
    """Static checks on what the user enabled; mirrors the framework's updatePluginList errors."""
    errors: list[tuple[str, str]] = []
    for point, plugin_set in plugins.items():
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
            errors.extend(_check_entry(point, ref, implemented, entry_path))
    return errors


def _check_entry(point: str, ref: PluginRef, implemented: frozenset[str], path: str) -> list[tuple[str, str]]:
    problem = _unusable(ref.name, implemented)
    if problem:
        return [(f"{path}.name", problem)]
    errors: list[tuple[str, str]] = []
    implements = points_of(ref.name)
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


def points_of(name: str) -> frozenset[str]:
    """Extension points of a plugin: upstream's table, else the registered class (Coscheduling,
    out-of-tree plugins)."""
    points = PLUGIN_EXTENSION_POINTS.get(name)
    if points is not None:
        return points
    from policy_scheduler.scheduler.plugins.registry import plugin_points  # registry imports plugins

    return plugin_points(name) or frozenset()


def _unusable(name: str, implemented: frozenset[str]) -> str | None:
    if name in implemented:
        return None
    if name in REMOVED_PLUGINS:
        return f"plugin {_q(name)} was removed in kubescheduler.config.k8s.io/v1"
    if name in PLUGIN_EXTENSION_POINTS:
        return f"plugin {_q(name)} is not supported by policy-scheduler (alpha plugins are not implemented)"
    return f"unknown plugin {_q(name)} (supported: {', '.join(sorted(implemented))})"


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


def _expand(point: str, explicit: PluginSet, multi: tuple[_Entry, ...]) -> tuple[PluginRef, ...]:
    """The framework's list for one point: explicit entries plus expanded multiPoint plugins."""
    explicit_names = [ref.name for ref in explicit.enabled]
    disabled = {ref.name for ref in explicit.disabled}
    if DISABLE_ALL in disabled:
        return tuple(PluginRef(name) for name in explicit_names)
    overridden: set[str] = set()
    from_multi: list[str] = []
    for entry in multi:
        name = entry.ref.name
        if point not in points_of(name) or name in disabled:
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


def _score_weights(explicit: tuple[PluginRef, ...], multi: tuple[_Entry, ...]) -> dict[str, int]:
    """getScoreWeights: first of explicit score entries, then merged multiPoint; 0 means 1."""
    weights: dict[str, int] = {}
    for ref in (*explicit, *(entry.ref for entry in multi)):
        if "score" in points_of(ref.name):
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
