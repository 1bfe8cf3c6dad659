"""The registry is the one list of plugins: what a registered class implements and the args type
it names are what profile validation and the framework use, with no table to keep beside it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.scheduler.config import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginRef,
    PluginSet,
    ProfileConfig,
)
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.runtime import Framework
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.registry import (
    ENTRY_POINT_GROUP,
    implemented_plugin_names,
    plugin_registry,
)
from policy_scheduler.scheduler.profile_resolution import ProfileError, effective_plugins, resolve_profile
from tests.plugin_probe import Probe, ProbeArgs, RawProbe


@pytest.fixture
def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe and RawProbe installed as a distribution's entry points, as a pip install would."""
    dist_info = tmp_path / "policy_scheduler_probe-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: policy-scheduler-probe\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nProbe = tests.plugin_probe:Probe\nRawProbe = tests.plugin_probe:RawProbe\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def profile(points: Mapping[str, PluginSet], args: dict[str, Any] | None = None) -> ProfileConfig:
    return ProfileConfig(plugins=dict(points), plugin_config={"Probe": args} if args is not None else {})


def enabled(name: str) -> PluginSet:
    return PluginSet(enabled=(PluginRef(name),))


def test_the_registered_class_decides_where_a_plugin_may_be_enabled(registered: None) -> None:
    assert plugin_registry()["Probe"] is Probe
    implemented = implemented_plugin_names()
    resolved = resolve_profile(profile({MULTI_POINT: enabled("Probe")}), implemented)
    placed = {point for point, names in effective_plugins(resolved).items() if "Probe" in names}
    assert placed == {"filter", "score"}
    for point in EXTENSION_POINTS:
        config = profile({point: PluginSet(enabled=(PluginRef("Probe"),), disabled=(PluginRef("*"),))})
        if point in ("filter", "score"):
            assert "Probe" in effective_plugins(resolve_profile(config, implemented))[point]
            continue
        with pytest.raises(ProfileError) as info:
            resolve_profile(config, implemented)
        assert info.value.errors[0] == (
            f"spec.plugins.{point}.enabled[0].name",
            f'plugin "Probe" does not implement the {point} extension point (it implements filter, score)',
        )


def test_an_unregistered_plugin_is_unknown() -> None:
    assert "Probe" not in plugin_registry()
    with pytest.raises(ProfileError, match='unknown plugin "Probe"'):
        resolve_profile(profile({"filter": enabled("Probe")}), implemented_plugin_names())


def framework(config: ProfileConfig) -> Framework:
    resolved = resolve_profile(config, implemented_plugin_names())
    return Framework(resolved, plugin_registry(), Handle(NodeTable()))


def test_the_framework_decodes_args_once_into_the_args_type(
    registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[Mapping[str, Any]] = []
    defaulted = ProbeArgs.defaulted.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ProbeArgs], raw: Mapping[str, Any]) -> ProbeArgs:
        decoded.append(raw)
        return defaulted(cls, raw)  # type: ignore[no-any-return]

    monkeypatch.setattr(ProbeArgs, "defaulted", classmethod(counting))
    built = framework(profile({MULTI_POINT: enabled("Probe")}, {"weight": 3}))
    plugin = built.plugins["Probe"]
    assert [p.name for p in built.points.filter].count("Probe") == 1
    assert [p.name for p, _weight in built.points.score].count("Probe") == 1
    assert isinstance(plugin, Probe)
    assert plugin.args == ProbeArgs(3)
    assert decoded == [{"weight": 3}]  # once, for both points
    assert framework(profile({MULTI_POINT: enabled("Probe")})).plugins["Probe"].args == ProbeArgs(1)


def test_invalid_args_stop_the_framework_with_the_args_types_message(registered: None) -> None:
    with pytest.raises(ArgsError, match=r"\Aweight: Invalid value: -1: must be >= 0\Z"):
        framework(profile({MULTI_POINT: enabled("Probe")}, {"weight": -1}))
    with pytest.raises(ValueError, match=r"\Aweight: expected an integer, got 'x'\Z"):
        framework(profile({MULTI_POINT: enabled("Probe")}, {"weight": "x"}))


def test_a_plugin_without_an_args_type_gets_the_profile_args_as_they_are(registered: None) -> None:
    raw = {"anything": [1, {"nested": True}]}
    config = ProfileConfig(plugins={"filter": enabled("RawProbe")}, plugin_config={"RawProbe": raw})
    plugin = framework(config).plugins["RawProbe"]
    assert isinstance(plugin, RawProbe)
    assert plugin.args is raw
