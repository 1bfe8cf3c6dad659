"""bench_e2e runs policy-scheduler from byte-compiled modules, as the installed wheel does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from policy_scheduler.bench_e2e import contenders
from policy_scheduler.service import operator as operator_main


def test_launching_policy_scheduler_byte_compiles_the_package(tmp_path: Path) -> None:
    launch = contenders.launch(contenders.POLICY, tmp_path / "kubeconfig", "bench-0", tmp_path)
    assert launch.argv[1:3] == ["-m", "policy_scheduler"]
    assert Path(importlib.util.cache_from_source(operator_main.__file__)).is_file()
