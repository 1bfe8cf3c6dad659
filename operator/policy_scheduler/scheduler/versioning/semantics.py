"""Which release to decide like: the API server's, the nearest supported one, or the one asked for.

The operator reads the API server's version (kube/server_version.py) and calls `choose_semantics`
at start and whenever the version changes; `simulate` and the other offline commands name the
release themselves (`requested_semantics`). Pure: the reading is the adapter's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import (
    NEWEST_SUPPORTED,
    OLDEST_SUPPORTED,
    KubernetesVersion,
    VersionError,
    nearest_supported,
)

# Reasons of the SchedulingProfile condition that says which release we decide like.
SUPPORTED = "Supported"  # the API server's release
EMULATED = "Emulated"  # the release --emulated-version named
REQUESTED = "Requested"  # the release a command's --kubernetes-version named
OLDER_THAN_SUPPORTED = "OlderThanSupported"
NEWER_THAN_SUPPORTED = "NewerThanSupported"
SERVER_VERSION_UNKNOWN = "ServerVersionUnknown"


@dataclass(frozen=True, slots=True)
class Semantics:
    """The release and operator-wide feature gates profiles start from, and why."""

    features: Features
    reason: str
    # Why, in a sentence without the gates: "API server v1.35.4", "API server v1.38.0 is newer
    # than the newest supported release v1.37".
    why: str
    server_version: str | None = None  # the API server's gitVersion as read

    @property
    def matches_cluster(self) -> bool:
        """True when we decide like the release we were told to (no nearest-release fallback)."""
        return self.reason in (SUPPORTED, EMULATED, REQUESTED)

    def describe(self, features: Features | None = None) -> str:
        """For logs and conditions: `features` (default: the operator's) and why, plus the gates
        whose value here the core does not implement."""
        chosen = self.features if features is None else features
        text = f"deciding as kube-scheduler {chosen.describe()} does ({self.why})"
        missing = chosen.unimplemented()
        if missing:
            text += f"; not implemented by policy-scheduler: {', '.join(missing)}"
        return text


def choose_semantics(
    server_version: str | None,
    *,
    emulated: KubernetesVersion | None = None,
    feature_gates: Iterable[tuple[str, bool]] = (),
    unknown_because: str = "not read yet",
) -> Semantics:
    """The semantics for an API server reporting `server_version` (its gitVersion; None when it
    could not be read), the operator's --emulated-version and --feature-gates. FeatureGateError
    when the gates do not fit the chosen release."""
    settings = tuple(feature_gates)
    if emulated is not None:
        server = f"; API server {server_version}" if server_version else ""
        return Semantics(
            Features(emulated, settings), EMULATED, f"--emulated-version{server}", server_version
        )
    if server_version is None:
        why = f"the API server's version is unknown ({unknown_because}); the newest supported release"
        return Semantics(Features(NEWEST_SUPPORTED, settings), SERVER_VERSION_UNKNOWN, why)
    try:
        version = KubernetesVersion.parse(server_version)
    except VersionError:
        why = f"the API server's version {server_version!r} is not a release; the newest supported release"
        return Semantics(Features(NEWEST_SUPPORTED, settings), SERVER_VERSION_UNKNOWN, why, server_version)
    chosen = nearest_supported(version)
    if chosen == version:
        return Semantics(
            Features(chosen, settings), SUPPORTED, f"API server {server_version}", server_version
        )
    if version < OLDEST_SUPPORTED:
        why = f"API server {server_version} is older than the oldest supported release {OLDEST_SUPPORTED}"
        return Semantics(Features(chosen, settings), OLDER_THAN_SUPPORTED, why, server_version)
    why = f"API server {server_version} is newer than the newest supported release {NEWEST_SUPPORTED}"
    return Semantics(Features(chosen, settings), NEWER_THAN_SUPPORTED, why, server_version)


def requested_semantics(
    version: KubernetesVersion, feature_gates: Iterable[tuple[str, bool]] = ()
) -> Semantics:
    """The semantics a command's --kubernetes-version names."""
    return Semantics(Features(version, tuple(feature_gates)), REQUESTED, "--kubernetes-version")


def command_semantics(
    requested: KubernetesVersion | None, server_version: str | None = None, *, from_cluster: bool = False
) -> Semantics:
    """What an offline command (simulate, validate, explain, import-config) decides like: the
    release --kubernetes-version names; else, on a cluster's snapshot, the cluster's (the
    nearest supported one); else the newest supported."""
    if requested is not None:
        return requested_semantics(requested)
    if from_cluster:
        return choose_semantics(server_version, unknown_because="the snapshot has no /version")
    return requested_semantics(NEWEST_SUPPORTED)
