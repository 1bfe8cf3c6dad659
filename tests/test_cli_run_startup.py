"""`run`'s start-up: imports happen without the collector, then leave its generations; the first
lists of nodes and pods are asked for before the operator's heavy imports."""

from __future__ import annotations

import argparse
import gc
from typing import Any

import pytest

from policy_scheduler import cli, operator_main
from policy_scheduler.config import OperatorConfig
from policy_scheduler.kube import prefetch
from policy_scheduler.kube.paths import NODES, PODS


def test_run_imports_without_the_collector_then_freezes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_run_operator(config: Any) -> int:
        seen["enabled"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()
        return 0

    def fake_prefetch(kubeconfig: str | None, paths: Any, page_size: int, timeout: float) -> None:
        seen["prefetch"] = (kubeconfig, tuple(paths), page_size, timeout)

    config = OperatorConfig(kubeconfig="/some/kubeconfig")
    monkeypatch.setattr(operator_main, "run_operator", fake_run_operator)
    monkeypatch.setattr(OperatorConfig, "from_args", staticmethod(lambda args: config))
    monkeypatch.setattr(prefetch, "start", fake_prefetch)
    try:
        assert cli._run(argparse.Namespace()) == 0
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
    assert seen["enabled"] is True  # the operator runs with the collector on
    assert seen["frozen"] > 0
    timings = config.informer
    assert seen["prefetch"] == ("/some/kubeconfig", (NODES, PODS), timings.page_size, timings.list_timeout)
