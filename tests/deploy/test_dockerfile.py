"""The runtime image leaves developer-only code out, and the CLI says so instead of failing."""

from __future__ import annotations

import re

import pytest

from policy_scheduler.app import cli
from tests.paths import REPO

ROOT = REPO
PACKAGE = ROOT / "operator" / "policy_scheduler"
DEV_ONLY = ("devcluster", "parity", "bench", "bench_e2e")


def builder_stage() -> str:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    stages = text.split("\nFROM ")
    assert " AS builder" in stages[1].splitlines()[0]
    return stages[1]


def test_builder_removes_dev_only_code_before_building_the_wheel() -> None:
    stage = builder_stage().replace("\\\n", " ")
    removal = re.search(r"RUN rm -rf ([^&\n]+)&& pip wheel", stage)
    assert removal is not None, "the builder must delete dev-only code in the RUN that builds the wheel"
    removed = set(removal.group(1).split())
    for name in DEV_ONLY:
        assert f"operator/policy_scheduler/{name}" in removed
        assert (PACKAGE / name).exists(), f"{name} moved: update the Dockerfile and this test"


def test_cli_dev_modules_are_the_removed_ones() -> None:
    assert {m.removeprefix("policy_scheduler.") for m in cli.DEV_MODULES} <= {
        n.removesuffix(".py") for n in DEV_ONLY
    }
    assert cli.dev_tools_available()  # this is a source checkout


@pytest.mark.parametrize("argv", [["dev-cluster", "up", "--nodes", "3"], ["demo"]])
def test_dev_commands_explain_themselves_without_dev_code(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "dev_tools_available", lambda: False)
    assert cli.main(argv) == 2
    assert f"`{argv[0]}` is a developer command" in capsys.readouterr().err
