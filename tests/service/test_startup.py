"""`run`'s start-up (service/startup.py): the collector stays off from the operator's imports until
its informers have synced, scheduling starts only then, and numpy's BLAS starts no threads."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from policy_scheduler.app import cli
from policy_scheduler.kube import client
from policy_scheduler.service import operator as operator_module
from policy_scheduler.service.collector import YOUNG_THRESHOLD, StartupCollector
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.startup import Startup
from tests.fresh_interpreter import run_python


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """Whatever a test does to the collector, the rest of the session collects as usual."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    gc.enable()


class FakeApi:
    closed = False

    async def close(self) -> None:
        self.closed = True


class FakeOperator:
    """Records the start-up's calls, with whether the collector was on at each."""

    steps: list[tuple[str, bool]] = []

    def __init__(self, api: Any, config: OperatorConfig, first_lists: Any) -> None:
        self.failed = False

    def _note(self, step: str) -> None:
        self.steps.append((step, gc.isenabled()))

    async def start(self) -> None:
        self._note("start")

    async def wait_synced(self) -> None:
        self._note("wait_synced")

    def start_scheduling(self, stop: asyncio.Event) -> None:
        self._note("start_scheduling")
        stop.set()  # as SIGTERM would

    async def stop(self) -> None:
        self._note("stop")


@pytest.mark.usefixtures("collector_restored")
def test_run_keeps_the_collector_off_until_the_informers_have_synced(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi()

    async def fake_client(kubeconfig: str | None) -> FakeApi:
        assert kubeconfig == "/some/kubeconfig"
        return api

    config = OperatorConfig(kubeconfig="/some/kubeconfig")
    monkeypatch.setattr(OperatorConfig, "from_args", staticmethod(lambda args: config))
    monkeypatch.setattr(client, "make_api_client", fake_client)
    monkeypatch.setattr(operator_module, "Operator", FakeOperator)
    FakeOperator.steps = []
    before = gc.get_freeze_count()
    assert cli._run(argparse.Namespace()) == 0
    assert FakeOperator.steps == [
        ("start", False),
        ("wait_synced", False),
        ("start_scheduling", True),  # resumed in between
        ("stop", True),
    ]
    assert api.closed
    assert gc.get_freeze_count() > before  # the imports' objects left the generations


@pytest.mark.usefixtures("collector_restored")
def test_a_stop_before_the_first_sync_never_starts_scheduling(monkeypatch: pytest.MonkeyPatch) -> None:
    class NeverSynced(FakeOperator):
        async def wait_synced(self) -> None:
            self._note("wait_synced")
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.Event().wait()

    async def fake_client(kubeconfig: str | None) -> FakeApi:
        return FakeApi()

    monkeypatch.setattr(client, "make_api_client", fake_client)
    monkeypatch.setattr(operator_module, "Operator", NeverSynced)
    FakeOperator.steps = []
    assert Startup(OperatorConfig()).run() == 0
    assert [step for step, _ in FakeOperator.steps] == ["start", "wait_synced", "stop"]


def test_the_cli_imports_the_operator_only_to_run_it() -> None:
    """`run` pauses the collector before the operator's imports: the CLI must not import them."""
    code = (
        "import sys\n"
        "from policy_scheduler.app import cli\n"
        "cli.build_parser()\n"
        "import policy_scheduler.service.startup\n"
        "print(sorted(m for m in ('policy_scheduler.service.operator', 'numpy', 'kopf', 'aiohttp') if m in sys.modules))"
    )
    assert run_python(code) == "[]"


BLAS_THREADS = """
    import contextlib, io, os
    {prepare}
    from policy_scheduler.app import cli
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["crds"])
    import numpy
    print(os.environ["OPENBLAS_NUM_THREADS"], len(os.listdir("/proc/self/task")))
"""


def test_the_cli_keeps_numpys_blas_to_the_main_thread() -> None:
    """OpenBLAS would start a thread per CPU at numpy's import, which costs CPU at every start."""
    unset = 'os.environ.pop("OPENBLAS_NUM_THREADS", None)'
    assert run_python(BLAS_THREADS.format(prepare=unset)) == "1 1"  # no thread but the main one


def test_the_users_blas_threads_stay() -> None:
    code = BLAS_THREADS.format(prepare="")
    assert run_python(code, {"OPENBLAS_NUM_THREADS": "2"}).split()[0] == "2"


def test_the_operator_imports_crd_rendering_only_to_install_crds() -> None:
    code = (
        "import sys\n"
        "import policy_scheduler.service.operator\n"
        "print('policy_scheduler.kube.crdinstall' in sys.modules, 'policy_scheduler.policy.crdgen' in sys.modules)"
    )
    assert run_python(code) == "False False"


def test_the_operator_imports_no_built_validator_and_a_model_builds_on_first_use() -> None:
    # Building every model's validator at import is CPU before the first bind.
    code = (
        "import policy_scheduler.service.operator\n"
        "from policy_scheduler.policy.base import CamelModel\n"
        "def models(cls):\n"
        "    for sub in cls.__subclasses__():\n"
        "        yield sub\n"
        "        yield from models(sub)\n"
        "print(sorted({m.__name__ for m in models(CamelModel) if m.__pydantic_complete__}))\n"
        "from policy_scheduler.policy.kube_types import LabelSelectorRequirement as R\n"
        "print(R.model_validate({'key': 'k', 'operator': 'Exists'}).key, R.__pydantic_complete__)"
    )
    built, used = run_python(code).splitlines()
    assert built == "[]"
    assert used == "k True"


@pytest.mark.usefixtures("collector_restored")
def test_resume_counts_the_frozen_objects_only_for_debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    # Counting walks every frozen object, just before the first cycle.
    counted: list[int] = []
    real_count = gc.get_freeze_count

    def count() -> int:
        counted.append(real_count())
        return counted[-1]

    collector = StartupCollector()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gc, "get_freeze_count", count)
        caplog.set_level("INFO", logger="policy_scheduler.service.collector")
        collector.pause()
        collector.resume()
        assert not counted
        assert "collector resumed" in caplog.text
        caplog.set_level("DEBUG", logger="policy_scheduler.service.collector")
        collector.pause()
        collector.resume()
        assert len(counted) == 1


@pytest.mark.usefixtures("collector_restored")
def test_resume_only_undoes_pause() -> None:
    collector = StartupCollector()
    gc.disable()  # someone else's choice
    collector.pause()
    collector.resume()
    assert not gc.isenabled()
    gc.enable()
    collector.pause()
    assert not gc.isenabled()
    before = gc.get_freeze_count()
    garbage: list[Any] = []
    garbage.append(garbage)  # a cycle made while paused ...
    del garbage
    collector.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # ... is frozen with the rest, not rescanned later
    collector.resume()  # twice is harmless
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_restored")
def test_resume_collects_the_young_generation_less_often() -> None:
    collector = StartupCollector()
    gc.set_threshold(700, 10, 10)  # Python's defaults
    collector.pause()
    collector.resume()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    gc.set_threshold(50_000, 5, 5)  # a larger one chosen elsewhere stays
    collector.pause()
    collector.resume()
    assert gc.get_threshold() == (50_000, 5, 5)
