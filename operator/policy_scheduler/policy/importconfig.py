"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) -> SchedulingProfile manifests.

Each profile becomes one SchedulingProfile, named after its schedulerName, with the profile's
fields unchanged plus the top-level percentageOfNodesToScore, podInitialBackoffSeconds and
podMaxBackoffSeconds when the profile does not set them. Operational settings (parallelism,
leaderElection, clientConnection, profiling, delayCacheUntilActive) belong to the deployment,
not to policy, and are dropped; extenders are not supported and are an error.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from policy_scheduler.policy.compile import parse_profile_spec, validate_profiles
from policy_scheduler.policy.constants import (
    API_VERSION,
    KUBE_SCHEDULER_CONFIG_API_VERSION,
    KUBE_SCHEDULER_CONFIG_KIND,
    SCHEDULING_PROFILE_KIND,
)
from policy_scheduler.policy.errors import FieldError, PolicyError, field_error, join_path, parse_model
from policy_scheduler.policy.scheduling_profile import SchedulingProfileSpec
from policy_scheduler.scheduler.config import DEFAULT_SCHEDULER_NAME
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.versioning.features import Features, default_features
from policy_scheduler.scheduler.versioning.version import V1_36, V1_37, KubernetesVersion

CARRIED_FIELDS = ("percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds")
IGNORED_FIELDS = (
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "delayCacheUntilActive",
)
_MAX_NAME = 63

# Plugins fields for workload (pod group) scheduling, by the release whose
# kubescheduler.config.k8s.io/v1 added them (k8s.io/kube-scheduler config/v1 types.go). No plugin
# we implement extends them (upstream's TopologyPlacementGenerator and PodGroupPodsCount are
# alpha), so a profile may disable plugins there but not enable one.
WORKLOAD_POINTS: Mapping[str, KubernetesVersion] = MappingProxyType(
    {"placementGenerate": V1_36, "placementScore": V1_36, "podGroupPostFilter": V1_37}
)


class _TopLevel(BaseModel):
    """The top-level fields that carry over, validated where the user wrote them."""

    model_config = ConfigDict(strict=True, extra="ignore")

    percentage_of_nodes_to_score: int | None = Field(None, alias="percentageOfNodesToScore", ge=0, le=100)
    pod_initial_backoff_seconds: int | None = Field(None, alias="podInitialBackoffSeconds", ge=1)
    pod_max_backoff_seconds: int | None = Field(None, alias="podMaxBackoffSeconds", ge=1)

    @model_validator(mode="after")
    def _backoff_order(self) -> _TopLevel:
        initial = self.pod_initial_backoff_seconds or 1
        maximum = self.pod_max_backoff_seconds or 10
        if maximum < initial:
            raise field_error(
                "podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds"
            )
        return self


def import_config(
    text: str, *, implemented: frozenset[str] | None = None, features: Features | None = None
) -> list[dict[str, Any]]:
    """SchedulingProfile manifests for the profiles of a KubeSchedulerConfiguration YAML.

    `implemented` defaults to every registered plugin (Coscheduling, installed out-of-tree ones).
    `features`: the release the profiles are checked for (None: the newest supported).

    Raises PolicyError (a ValueError) naming the offending field, e.g. `profiles[0].plugins...`.
    """
    if implemented is None:
        implemented = implemented_plugin_names()
    doc = _load(text)
    errors: list[FieldError] = []
    carried = {key: doc[key] for key in CARRIED_FIELDS if doc.get(key) is not None}
    try:
        parse_model(_TopLevel, doc, "")
    except PolicyError as exc:
        errors.extend(exc.errors)
        carried = {}  # reported once, where the user wrote them, not again per profile
    profiles = doc.get("profiles") or [{}]  # upstream: no profiles means one default profile
    if not isinstance(profiles, list):
        raise PolicyError([*errors, FieldError("profiles", "must be a list")])
    specs: dict[str, SchedulingProfileSpec] = {}
    for i, profile in enumerate(profiles):
        path = join_path("profiles", i)
        try:
            raw = _profile_with_defaults(profile, carried, path, single=len(profiles) == 1)
            raw = _without_workload_points(raw, path, (features or default_features()).version)
            spec = parse_profile_spec(raw, implemented=implemented, path=path, features=features)
        except PolicyError as exc:
            errors.extend(exc.errors)
            continue
        specs[_unique_name(object_name(spec.scheduler_name), specs)] = spec
    index = {name: i for i, name in enumerate(specs)}
    for name, problem in validate_profiles(specs, implemented=implemented, features=features).items():
        prefix = join_path("profiles", index[name])
        errors.extend(FieldError(prefix + e.path.removeprefix("spec"), e.message) for e in problem.errors)
    if errors:
        raise PolicyError(errors)
    return [_manifest(name, spec) for name, spec in specs.items()]


def _load(text: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError([FieldError("", f"not valid YAML: {exc}")]) from None
    if not isinstance(doc, dict):
        raise PolicyError([FieldError("", f"must be a {KUBE_SCHEDULER_CONFIG_KIND} object")])
    errors: list[FieldError] = []
    if doc.get("apiVersion") != KUBE_SCHEDULER_CONFIG_API_VERSION:
        message = f'must be "{KUBE_SCHEDULER_CONFIG_API_VERSION}", got {doc.get("apiVersion")!r}'
        errors.append(FieldError("apiVersion", message))
    if doc.get("kind") != KUBE_SCHEDULER_CONFIG_KIND:
        errors.append(FieldError("kind", f'must be "{KUBE_SCHEDULER_CONFIG_KIND}", got {doc.get("kind")!r}'))
    if doc.get("extenders"):
        errors.append(FieldError("extenders", "scheduler extenders are not supported by policy-scheduler"))
    known = {"apiVersion", "kind", "profiles", "extenders", *CARRIED_FIELDS, *IGNORED_FIELDS}
    errors.extend(FieldError(str(key), "unknown field") for key in doc if key not in known)
    if errors:
        raise PolicyError(errors)
    return doc


def _profile_with_defaults(
    profile: Any, carried: dict[str, Any], path: str, *, single: bool
) -> dict[str, Any]:
    if not isinstance(profile, dict):
        raise PolicyError([FieldError(path, "must be an object")])
    raw = dict(profile)
    if raw.get("schedulerName") is None:
        if not single:  # upstream defaults the name only when there is a single profile
            raise PolicyError(
                [FieldError(join_path(path, "schedulerName"), "required when there are several profiles")]
            )
        raw["schedulerName"] = DEFAULT_SCHEDULER_NAME
    for key, value in carried.items():
        if raw.get(key) is None:
            raw[key] = value
    return raw


def _without_workload_points(raw: dict[str, Any], path: str, version: KubernetesVersion) -> dict[str, Any]:
    """The profile without the Plugins fields of workload scheduling, once they are checked for
    `version`: a field the release does not have is unknown there, and a plugin enabled in one
    is a plugin we do not have (disabling is allowed and changes nothing)."""
    plugins = raw.get("plugins")
    if not isinstance(plugins, dict) or not any(point in plugins for point in WORKLOAD_POINTS):
        return raw
    errors: list[FieldError] = []
    for point, since in WORKLOAD_POINTS.items():
        if point not in plugins:
            continue
        point_path = join_path(path, "plugins", point)
        if version < since:
            errors.append(
                FieldError(
                    point_path,
                    f"unknown field: kubescheduler.config.k8s.io/v1 has it since Kubernetes {since} "
                    f"(importing for {version})",
                )
            )
            continue
        plugin_set = plugins[point] or {}
        if not isinstance(plugin_set, dict):
            errors.append(FieldError(point_path, "must be an object with enabled and disabled lists"))
            continue
        for i, entry in enumerate(plugin_set.get("enabled") or []):
            name = entry.get("name") if isinstance(entry, dict) else None
            errors.append(
                FieldError(
                    join_path(point_path, "enabled", i, "name"),
                    f'plugin "{name}" is not supported by policy-scheduler (no plugin for {point}: '
                    "workload placement plugins are not implemented)",
                )
            )
    if errors:
        raise PolicyError(errors)
    kept = {point: value for point, value in plugins.items() if point not in WORKLOAD_POINTS}
    return {**raw, "plugins": kept}


def object_name(scheduler_name: str) -> str:
    """A DNS-1123 label for the object of `scheduler_name` (dots become dashes; long names hashed)."""
    name = re.sub(r"[^a-z0-9]+", "-", scheduler_name.lower()).strip("-") or "profile"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(scheduler_name.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9].rstrip('-')}-{digest}"
    return name


def _unique_name(name: str, taken: dict[str, Any]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"-{n}"
        candidate, n = f"{name[: _MAX_NAME - len(suffix)]}{suffix}", n + 1
    return candidate


def _manifest(name: str, spec: SchedulingProfileSpec) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": SCHEDULING_PROFILE_KIND,
        "metadata": {"name": name},
        "spec": spec.model_dump(mode="json", exclude_unset=True),
    }
