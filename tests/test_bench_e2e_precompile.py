"""bench_e2e runs policy-scheduler from byte-compiled modules, as the installed wheel does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from policy_scheduler import operator_main
from policy_scheduler.bench_e2e import contenders


def test_launching_policy_scheduler_byte_compiles_the_package(tmp_path: Path) -> None:
    launch = contenders.launch(contenders.POLICY, tmp_path / "kubeconfig", "bench-0", tmp_path)
    assert "policy_scheduler.cli" in launch.argv
    assert Path(importlib.util.cache_from_source(operator_main.__file__)).is_file()
