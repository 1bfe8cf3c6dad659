"""`run`'s start-up: the collector stays off from the imports until the informers have synced,
every informer's first list, with its own selectors, is asked for before the operator's heavy
imports, and numpy's BLAS starts no threads."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

from policy_scheduler import dataclass_code_cache
from policy_scheduler.app import cli
from policy_scheduler.kube import prefetch
from policy_scheduler.kube.paths import EARLY_LISTS, NODES, PODS, POLICY_LISTS
from policy_scheduler.service import collector as startup_gc
from policy_scheduler.service import operator as operator_main
from policy_scheduler.service.config import OperatorConfig
from tests.fresh_interpreter import run_python


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """Whatever a test does to the collector, the rest of the session collects as usual."""
    thresholds = gc.get_threshold()
    yield
    startup_gc.resume()
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    gc.enable()


@pytest.mark.usefixtures("collector_restored")
def test_run_keeps_the_collector_off_until_the_operator_resumes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}

    def fake_run_operator(config: Any) -> int:
        seen["enabled"] = gc.isenabled()
        return 0

    def fake_prefetch(kubeconfig: str | None, lists: Any, page_size: int, timeout: float) -> None:
        seen["prefetch"] = (kubeconfig, lists, page_size, timeout)

    config = OperatorConfig(kubeconfig="/some/kubeconfig")
    monkeypatch.setattr(operator_main, "run_operator", fake_run_operator)
    monkeypatch.setattr(OperatorConfig, "from_args", staticmethod(lambda args: config))
    monkeypatch.setattr(prefetch, "start", fake_prefetch)
    # The dataclass method cache: installed before the imports, saved after (here: only noted).
    monkeypatch.setattr(
        dataclass_code_cache, "install", lambda: seen.setdefault("cache", []).append("install")
    )
    monkeypatch.setattr(dataclass_code_cache, "save", lambda: seen.setdefault("cache", []).append("save"))
    assert cli._run(argparse.Namespace()) == 0
    assert seen["cache"] == ["install", "save"]
    assert seen["enabled"] is False  # off until the first sync
    timings = config.timings.informer
    assert seen["prefetch"] == ("/some/kubeconfig", EARLY_LISTS, timings.page_size, timings.list_timeout)
    before = gc.get_freeze_count()
    startup_gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # the imports' objects leave the generations


def test_the_early_lists_are_exactly_the_informers_first_lists() -> None:
    """An early answer is taken only for the very request the informer would make: a selector
    here that differs from the informer's would silently waste the early pod list, and an
    informer missing here would list after the node decode and hold the first cycle back."""
    operator = operator_main.Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    informers = {informer.path: informer for informer in operator.informers()}
    assert len(informers) == len(operator.informers())  # one informer per path
    assert set(EARLY_LISTS) == set(informers) | set(POLICY_LISTS)
    assert set(informers).isdisjoint(POLICY_LISTS)  # kopf reads the policies, not an informer
    for path, informer in informers.items():
        selectors, accept = EARLY_LISTS[path]
        assert dict(selectors) == informer.selectors(), path
        assert accept == informer.list_format.accept, path
    # The big lists leave first; the node list, the biggest, before all.
    assert list(EARLY_LISTS)[:2] == [NODES, PODS]


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
    """OpenBLAS would start a thread per CPU at numpy's import (about 60 ms of CPU per start)."""
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
    # Building every model's validator at import is CPU before the first bind (issue 12).
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
    # Counting walks every frozen object (about 20 ms at 5000 nodes, before the first cycle).
    counted: list[int] = []
    real_count = gc.get_freeze_count

    def count() -> int:
        counted.append(real_count())
        return counted[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gc, "get_freeze_count", count)
        caplog.set_level("INFO", logger=startup_gc.__name__)
        startup_gc.pause()
        startup_gc.resume()
        assert not counted
        assert "collector resumed" in caplog.text
        caplog.set_level("DEBUG", logger=startup_gc.__name__)
        startup_gc.pause()
        startup_gc.resume()
        assert len(counted) == 1


@pytest.mark.usefixtures("collector_restored")
def test_resume_only_undoes_pause() -> None:
    gc.disable()  # someone else's choice
    startup_gc.resume()
    assert not gc.isenabled()
    gc.enable()
    startup_gc.pause()
    assert not gc.isenabled()
    before = gc.get_freeze_count()
    garbage: list[Any] = []
    garbage.append(garbage)  # a cycle made while paused ...
    del garbage
    startup_gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # ... is frozen with the rest, not rescanned later
    startup_gc.resume()  # twice is harmless
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_restored")
def test_resume_collects_the_young_generation_less_often() -> None:
    gc.set_threshold(700, 10, 10)  # Python's defaults
    startup_gc.pause()
    startup_gc.resume()
    assert gc.get_threshold() == (startup_gc.YOUNG_THRESHOLD, 10, 10)
    gc.set_threshold(50_000, 5, 5)  # a larger one chosen elsewhere stays
    startup_gc.pause()
    startup_gc.resume()
    assert gc.get_threshold() == (50_000, 5, 5)


@pytest.mark.usefixtures("collector_restored")
async def test_the_deadline_resumes_the_collector_when_the_lists_never_come() -> None:
    startup_gc.pause()
    startup_gc.resume_after(0.0)
    assert not gc.isenabled()
    for _ in range(3):  # the loop runs the timer at its next turn
        await asyncio.sleep(0)
    assert gc.isenabled()
