"""Out-of-tree plugins: the example package installs, a profile enables it through its entry point."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.observability.profile_stats import ProfileStats
from policy_scheduler.policy.compile import compile_profile, parse_profile_spec
from policy_scheduler.policy.errors import PolicyError
from policy_scheduler.scheduler.config import PluginRef, PluginSet, ProfileConfig
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names, plugin_registry
from policy_scheduler.scheduler.profile_resolution import ProfileError, resolve_profile
from tests.paths import REPO

EXAMPLE = REPO / "examples" / "plugins" / "require-node-label"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        check=True,
    )
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        sys.modules.pop("require_node_label", None)
        importlib.invalidate_caches()


def profile_with_plugin(args: dict[str, object] | None = None) -> ProfileConfig:
    return ProfileConfig(
        plugins={"filter": PluginSet(enabled=(PluginRef("RequireNodeLabel"),))},
        plugin_config={"RequireNodeLabel": args or {}},
    )


def test_a_missing_plugin_is_refused_by_name() -> None:
    assert "RequireNodeLabel" not in implemented_plugin_names() or "require_node_label" in sys.modules
    with pytest.raises(ProfileError, match='unknown plugin "RequireNodeLabel"'):
        resolve_profile(profile_with_plugin(), frozenset({"PrioritySort", "DefaultBinder"}))


def test_a_profile_naming_a_plugin_not_installed_is_refused_and_the_last_good_one_stays() -> None:
    assert "RequireNodeLabel" not in plugin_registry(), "runs before the example is installed"
    published: list[list[Any]] = []
    store = ProfileStore(compile_profile_spec, published.append, eviction_policy_problem=lambda _n: None)
    store.apply("p", "u1", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    store.apply(
        "p",
        "u1",
        2,
        "2026-01-01T00:00:00Z",
        {"schedulerName": "s", "plugins": {"filter": {"enabled": [{"name": "RequireNodeLabel"}]}}},
    )
    assert [p.scheduler_name for p in published[-1]] == ["s"]
    assert "RequireNodeLabel" not in [r.name for r in published[-1][0].points["filter"]]
    status = store.status("p", ProfileStats(), synced=True)
    assert status is not None
    accepted = next(c for c in status["conditions"] if c["type"] == "Accepted")
    assert accepted["status"] == "False"
    assert 'unknown plugin "RequireNodeLabel"' in accepted["message"]
    assert status["lastAcceptedGeneration"] == 1


def test_installed_plugin_schedules(installed: Path) -> None:
    assert "RequireNodeLabel" in plugin_registry()
    resolved = resolve_profile(profile_with_plugin({"labelKey": "pool"}), implemented_plugin_names())
    assert [r.name for r in resolved.points["filter"]][-1] == "RequireNodeLabel"
    engine = Engine(seed=1)
    engine.set_profiles([resolved])
    engine.node_added(Node("plain", allocatable={"cpu": 4000, "pods": 10}))
    engine.node_added(Node("pooled", labels={"pool": "a"}, allocatable={"cpu": 1000, "pods": 10}))
    bound: dict[str, str] = {}

    class Binder:
        async def bind(self, pod: Pod, node_name: str) -> None:
            bound[pod.name] = node_name

    engine.base_handle.binder = Binder()
    engine.frameworks[resolved.scheduler_name].handle.binder = engine.base_handle.binder
    engine.pod_added(Pod("p", uid="p", containers=(Container("c", requests={"cpu": 100}),)))
    task = engine.scheduler.schedule_one(engine.queue.try_pop())  # type: ignore[arg-type]
    assert task is not None
    assert task.node_name == "pooled"


def test_installed_plugin_args_are_checked_by_its_args_type(installed: Path) -> None:
    spec = {
        "schedulerName": "labelled",
        "plugins": {"filter": {"enabled": [{"name": "RequireNodeLabel"}]}},
        "pluginConfig": [{"name": "RequireNodeLabel", "args": {"labelKey": ""}}],
    }
    with pytest.raises(PolicyError, match=r"pluginConfig\[0\]\.args\.labelKey: .*must not be empty"):
        parse_profile_spec(spec, implemented=implemented_plugin_names())
    spec["pluginConfig"] = [{"name": "RequireNodeLabel", "args": {}}]
    parsed = parse_profile_spec(spec, implemented=implemented_plugin_names())
    assert compile_profile(parsed).plugin_config["RequireNodeLabel"] == {"labelKey": "example.com/pool"}
