"""Building the control plane from e2e fixtures: the first build takes many minutes, so its
progress is shown instead of captured."""

from __future__ import annotations

import pytest

from policy_scheduler.devcluster.build import build_all, missing_binaries
from policy_scheduler.devcluster.versions import ControlPlaneVersions, bin_dir, control_plane


def build_if_needed(config: pytest.Config, versions: ControlPlaneVersions | None = None) -> None:
    """Build `versions` (default: the selected version) unless all its binaries are there."""
    versions = versions or control_plane()
    if not missing_binaries(bin_dir(versions)):
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        build_all(versions)
