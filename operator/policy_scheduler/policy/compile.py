"""SchedulingProfile specs -> the core's ProfileConfig, and the checks that span objects.

Validation happens in layers, each reporting field paths below `spec`:
1. the spec's shape (pydantic: types, enums, ranges, unknown fields, backoff order);
2. each pluginConfig entry against its plugin's typed args (defaults applied);
3. plugin names and extension points, as kube-scheduler's framework would check them;
4. across objects: unique schedulerName, one queueSort for all, known evictionPolicyName.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from policy_scheduler.policy.constants import API_VERSION, SCHEDULING_PROFILE_KIND
from policy_scheduler.policy.errors import FieldError, PolicyError, join_path, parse_model
from policy_scheduler.policy.plugin_args import default_plugin_args
from policy_scheduler.policy.scheduling_profile import PluginSet, SchedulingProfileSpec
from policy_scheduler.scheduler import config as core
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import ProfileError, profile_features, resolve_profile
from policy_scheduler.scheduler.versioning.features import Features

# Plugins fields in the order of the upstream Plugins struct, by attribute name.
_POINT_ATTRS: dict[str, str] = {
    core.MULTI_POINT: "multi_point",
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}


def parse_profile_spec(
    raw: Any,
    *,
    implemented: frozenset[str] | None = None,
    path: str = "spec",
    features: Features | None = None,
) -> SchedulingProfileSpec:
    """Validate a SchedulingProfile spec completely (layers 1-3) or raise PolicyError.

    `features`: the release and operator-wide gates it is checked for (None: the newest
    release's defaults); the spec's own featureGates apply on top."""
    spec = parse_model(SchedulingProfileSpec, raw, path)
    resolve_spec(spec, implemented, path=path, features=features)
    return spec


def compile_profile(
    spec: SchedulingProfileSpec, *, path: str = "spec", features: Features | None = None
) -> core.ProfileConfig:
    """The core's ProfileConfig; plugin args validated and defaulted as `features`' release (with
    the spec's featureGates) does. Raises PolicyError."""
    gates = tuple((spec.feature_gates or {}).items())
    try:
        own = profile_features(core.ProfileConfig(feature_gates=gates), features, path)
    except ProfileError as exc:
        raise PolicyError(FieldError(p, m) for p, m in exc.errors) from None
    errors: list[FieldError] = []
    plugin_config: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(spec.plugin_config):
        try:
            plugin_config[entry.name] = default_plugin_args(
                entry.name, entry.args, join_path(path, "pluginConfig", i, "args"), own
            )
        except PolicyError as exc:
            errors.extend(exc.errors)
    if errors:
        raise PolicyError(errors)
    return core.ProfileConfig(
        scheduler_name=spec.scheduler_name,
        percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
        plugins=_plugin_sets(spec),
        plugin_config=plugin_config,
        pod_initial_backoff_seconds=float(spec.pod_initial_backoff_seconds),
        pod_max_backoff_seconds=float(spec.pod_max_backoff_seconds),
        eviction_policy_name=spec.eviction_policy_name,
        pending_summary_annotation=spec.pending_summary_annotation,
        feature_gates=gates,
    )


def resolve_spec(
    spec: SchedulingProfileSpec,
    implemented: frozenset[str] | None = None,
    *,
    path: str = "spec",
    features: Features | None = None,
) -> core.ResolvedProfile:
    """compile_profile + the core's resolve_profile, errors as PolicyError (`implemented` and
    `features` as there)."""
    config = compile_profile(spec, path=path, features=features)
    try:
        return resolve_profile(config, implemented, path=path, features=features)
    except ProfileError as exc:
        raise PolicyError(FieldError(p, m) for p, m in exc.errors) from None


def _plugin_sets(spec: SchedulingProfileSpec) -> dict[str, core.PluginSet]:
    if spec.plugins is None:
        return {}
    sets: dict[str, core.PluginSet] = {}
    for point, attr in _POINT_ATTRS.items():
        plugin_set: PluginSet | None = getattr(spec.plugins, attr)
        if plugin_set is not None:
            sets[point] = core.PluginSet(
                enabled=tuple(core.PluginRef(p.name, p.weight or 0) for p in plugin_set.enabled),
                disabled=tuple(core.PluginRef(p.name) for p in plugin_set.disabled),
            )
    return sets


def validate_profiles(
    specs_by_name: Mapping[str, SchedulingProfileSpec],
    *,
    eviction_policy_names: Collection[str] | None = None,
    implemented: frozenset[str] | None = None,
    path: str = "spec",
    features: Features | None = None,
) -> dict[str, PolicyError]:
    """Checks across SchedulingProfiles, by object name; only objects with errors are returned.

    Earlier entries win a conflict (pass them oldest first), so an existing profile keeps
    working when a new one reuses its schedulerName. `eviction_policy_names` None skips that check.
    """
    errors: dict[str, list[FieldError]] = {name: [] for name in specs_by_name}
    owner_of_scheduler: dict[str, str] = {}
    queue_sort_owner: tuple[str, tuple[str, dict[str, Any]]] | None = None
    for name, spec in specs_by_name.items():
        owner = owner_of_scheduler.setdefault(spec.scheduler_name, name)
        if owner != name:
            message = f'"{spec.scheduler_name}" is already used by {SCHEDULING_PROFILE_KIND} "{owner}"'
            errors[name].append(FieldError(join_path(path, "schedulerName"), message))
        policy = spec.eviction_policy_name
        if policy is not None and eviction_policy_names is not None and policy not in eviction_policy_names:
            errors[name].append(
                FieldError(join_path(path, "evictionPolicyName"), f'EvictionPolicy "{policy}" not found')
            )
        queue_sort = _queue_sort(spec, implemented, features)
        if queue_sort is None:
            continue  # invalid on its own; its own errors are reported elsewhere
        if queue_sort_owner is None:
            queue_sort_owner = (name, queue_sort)
        elif queue_sort != queue_sort_owner[1]:
            message = (
                f"queueSort plugin and its args must be the same for all profiles ({SCHEDULING_PROFILE_KIND} "
                f'"{queue_sort_owner[0]}" uses {queue_sort_owner[1][0]})'
            )
            errors[name].append(FieldError(join_path(path, "plugins", "queueSort"), message))
    return {name: PolicyError(errs) for name, errs in errors.items() if errs}


def _queue_sort(
    spec: SchedulingProfileSpec, implemented: frozenset[str] | None, features: Features | None
) -> tuple[str, dict[str, Any]] | None:
    """The effective queueSort plugin and its args, or None if the profile does not resolve."""
    try:
        resolved = resolve_spec(spec, implemented, features=features)
    except PolicyError:
        return None
    name = resolved.points["queueSort"][0].name
    return name, resolved.plugin_config.get(name, {})


def compile_profile_objects(
    objects: Sequence[Mapping[str, Any]],
    *,
    implemented: frozenset[str] | None = None,
    eviction_policy_names: Collection[str] | None = None,
    features: Features | None = None,
) -> list[core.ProfileConfig]:
    """SchedulingProfile objects (whole manifests) -> ProfileConfigs, fully validated for
    `features`' release (None: the newest); resolve them with the same `features`.

    `implemented` defaults to every registered plugin (out-of-tree ones included).
    Raises PolicyError whose paths start with the object (`SchedulingProfile "fast": spec...`).
    """
    if implemented is None:
        implemented = implemented_plugin_names()
    specs: dict[str, SchedulingProfileSpec] = {}
    errors: list[FieldError] = []
    for i, obj in enumerate(objects):
        name = _object_name(obj, i)
        where = f'{SCHEDULING_PROFILE_KIND} "{name}": spec'
        kind = obj.get("kind", SCHEDULING_PROFILE_KIND)
        api_version = obj.get("apiVersion", API_VERSION)
        if kind != SCHEDULING_PROFILE_KIND or api_version != API_VERSION:
            errors.append(
                FieldError(
                    f'{SCHEDULING_PROFILE_KIND} "{name}"', f"not a {API_VERSION} {SCHEDULING_PROFILE_KIND}"
                )
            )
            continue
        try:
            specs[name] = parse_profile_spec(
                obj.get("spec"), implemented=implemented, path=where, features=features
            )
        except PolicyError as exc:
            errors.extend(exc.errors)
    cross = validate_profiles(
        specs, eviction_policy_names=eviction_policy_names, implemented=implemented, features=features
    )
    for name, problem in cross.items():
        errors.extend(
            FieldError(f'{SCHEDULING_PROFILE_KIND} "{name}": {e.path}', e.message) for e in problem.errors
        )
    if errors:
        raise PolicyError(errors)
    return [compile_profile(spec, features=features) for spec in specs.values()]


def _object_name(obj: Mapping[str, Any], index: int) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return str(name) if name else f"#{index}"
