"""Kubernetes versions as the core's semantics know them: major.minor, the patch ignored.

kube-scheduler's decisions change between minor releases (feature gate defaults, plugin
behaviour); patch releases of one minor decide alike, so a version here has no patch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


class VersionError(ValueError):
    """A version string that is not a Kubernetes version."""


@dataclass(frozen=True, order=True, slots=True)
class KubernetesVersion:
    major: int
    minor: int

    @staticmethod
    def parse(text: str) -> KubernetesVersion:
        """ "v1.37.2", "1.37", "v1.36.0-rc.1", "v1.35.4+k3s1" → the release's major.minor."""
        match = _VERSION.match(text.strip())
        if match is None:
            raise VersionError(f'"{text}" is not a Kubernetes version (expected e.g. v1.37.2 or 1.37)')
        return KubernetesVersion(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}"


V1_35 = KubernetesVersion(1, 35)
V1_36 = KubernetesVersion(1, 36)
V1_37 = KubernetesVersion(1, 37)
SUPPORTED_VERSIONS: tuple[KubernetesVersion, ...] = (V1_35, V1_36, V1_37)
OLDEST_SUPPORTED = SUPPORTED_VERSIONS[0]
NEWEST_SUPPORTED = SUPPORTED_VERSIONS[-1]


def supported_list() -> str:
    return ", ".join(str(v) for v in SUPPORTED_VERSIONS)


def nearest_supported(version: KubernetesVersion) -> KubernetesVersion:
    """The supported version closest to `version` (itself when supported)."""
    return min(max(version, OLDEST_SUPPORTED), NEWEST_SUPPORTED)


def parse_supported(text: str) -> KubernetesVersion:
    """A version a user asked for by name (--kubernetes-version): must be supported."""
    version = KubernetesVersion.parse(text)
    if version not in SUPPORTED_VERSIONS:
        raise VersionError(f"Kubernetes {version} is not supported (supported: {supported_list()})")
    return version
