"""`run` keeps the cyclic garbage collector off while it imports and takes its first lists, and
turns it back on as soon as the informers have synced (service/collector.py), not at the deadline that
only guards against a first sync that never comes."""

from __future__ import annotations

from fixtures_operator import OperatorProcess
from polling import wait_until


def test_the_operator_resumes_the_collector_once_its_informers_have_synced(
    operator_process: OperatorProcess,
) -> None:
    def resumed() -> str | None:
        operator_process.log.flush()
        lines = operator_process.log_path.read_text().splitlines()
        return next((line for line in lines if "collector resumed" in line), None)

    # The deadline is 120 s after start; synced informers resume it within seconds.
    line = wait_until("the collector resumed", resumed, timeout=30, interval=0.2)
    assert "informers synced" in line, line
