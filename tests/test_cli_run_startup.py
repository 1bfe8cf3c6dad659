"""`run`'s start-up: the collector stays off from the imports until the informers have synced,
and the first lists of nodes and pods, with the informers' own selectors, are asked for before
the operator's heavy imports."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Iterator
from typing import Any
from unittest.mock import Mock

import pytest

from policy_scheduler import cli, operator_main, startup_gc
from policy_scheduler.apiobjects.default_selector import DefaultSelectorIndex
from policy_scheduler.config import DEFAULTS, OperatorConfig
from policy_scheduler.kube import prefetch
from policy_scheduler.kube.cluster_informers import ClusterInformers
from policy_scheduler.kube.informer import Informer
from policy_scheduler.kube.paths import FIRST_LISTS, NODES, PODS, POLICY_LISTS


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
    assert cli._run(argparse.Namespace()) == 0
    assert seen["enabled"] is False  # off until the first sync
    timings = config.informer
    lists = {**FIRST_LISTS, **POLICY_LISTS}  # the informers' first lists and the policies
    assert seen["prefetch"] == ("/some/kubeconfig", lists, timings.page_size, timings.list_timeout)
    before = gc.get_freeze_count()
    startup_gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # the imports' objects leave the generations


def test_the_early_lists_are_exactly_the_informers_first_lists() -> None:
    """An early answer is taken only for the very request the informer would make: a selector
    here that differs from the informer's would silently waste the early pod list."""
    cluster = ClusterInformers(
        None,
        Mock(),  # never called: nothing is listed
        on_pod_deleted=lambda pod: None,
        owners=DefaultSelectorIndex(),
        pdbs=ClusterInformers.pdb_informer(None, DEFAULTS.informer),
        timings=DEFAULTS.informer,
    )
    informers: dict[str, Informer[Any, Any]] = {
        cluster.nodes.path: cluster.nodes,
        cluster.pods.path: cluster.pods,
    }
    assert set(FIRST_LISTS) == {NODES, PODS} == set(informers)
    for path, (selectors, accept) in FIRST_LISTS.items():
        assert dict(selectors) == informers[path].selectors()
        assert accept == informers[path].list_format.accept


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
