"""The gang-arrivals micro-benchmark runs (no speed asserted): every gang completes, the
unrelated pods stay unschedulable (the run's own assertions)."""

from __future__ import annotations

import pytest

from policy_scheduler.bench.gang_arrivals import main, run


def test_small_run_completes_every_gang() -> None:
    assert run(gangs=3, size=4, unrelated=5) >= 0.0


def test_cli_prints_the_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--gangs", "2", "--size", "3", "--unrelated", "2"]) == 0
    assert "2 gangs x 3 beside 2 unschedulable pods" in capsys.readouterr().out
