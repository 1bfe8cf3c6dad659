"""`run`'s start-up: imports happen without the collector, then leave its generations."""

from __future__ import annotations

import argparse
import gc
from typing import Any

import pytest

from policy_scheduler import cli, operator_main
from policy_scheduler.config import OperatorConfig


def test_run_imports_without_the_collector_then_freezes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_run_operator(config: Any) -> int:
        seen["enabled"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()
        return 0

    monkeypatch.setattr(operator_main, "run_operator", fake_run_operator)
    monkeypatch.setattr(OperatorConfig, "from_args", staticmethod(lambda args: args))
    try:
        assert cli._run(argparse.Namespace()) == 0
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
    assert seen["enabled"] is True  # the operator runs with the collector on
    assert seen["frozen"] > 0
