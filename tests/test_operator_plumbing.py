"""Small operator pieces: --profile-selector, log formats, pending-reason grouping."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any

import pytest

from policy_scheduler.app.cli import build_parser
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.kube import early_policies
from policy_scheduler.kube.paths import EVICTION_POLICIES, SCHEDULING_PROFILES
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.observability.logs import JsonFormatter, KeyValueFormatter
from policy_scheduler.observability.profile_stats import ProfileStats, reason_key
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.operator import Operator


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("", {}, True),
        ("shard=a", {"shard": "a"}, True),
        ("shard=a", {"shard": "b"}, False),
        ("shard==a", {"shard": "a"}, True),
        ("shard!=a", {}, True),
        ("shard!=a", {"shard": "a"}, False),
        ("canary", {"canary": ""}, True),
        ("canary", {}, False),
        ("!e2e-isolated", {}, True),
        ("!e2e-isolated", {"e2e-isolated": "leader"}, False),
        ("shard=a,!canary", {"shard": "a", "canary": "x"}, False),
        ("shard=a, !canary", {"shard": "a"}, True),
    ],
)
def test_profile_selector(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_selector(selector)(labels) is matches


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "bind failed", None, None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_text_logs_carry_structured_fields() -> None:
    line = KeyValueFormatter("%(levelname)s %(message)s").format(_record(pod="ns/a", error="409 Conflict"))
    assert line == 'WARNING bind failed pod=ns/a error="409 Conflict"'


def test_json_logs_carry_structured_fields() -> None:
    entry = json.loads(JsonFormatter().format(_record(pod="ns/a", attempts=3)))
    assert (entry["msg"], entry["pod"], entry["attempts"], entry["level"]) == (
        "bind failed",
        "ns/a",
        3,
        "WARNING",
    )


def test_pending_reasons_group_fit_errors_by_reason_not_node_count() -> None:
    assert reason_key("0/3 nodes are available: 3 Insufficient cpu.") == "Insufficient cpu"
    assert (
        reason_key("0/5 nodes are available: 2 Insufficient memory, 3 node(s) had untolerated taint(s).")
        == "Insufficient memory, node(s) had untolerated taint(s)"
    )
    stats = ProfileStats()
    stats.record_failure("ns/a", "0/3 nodes are available: 3 Insufficient cpu.")
    stats.record_failure("ns/b", "0/9 nodes are available: 9 Insufficient cpu.")
    stats.record_failure("ns/c", "0/9 nodes are available: 9 Insufficient memory.")
    assert stats.top_reasons() == [("Insufficient cpu", 2), ("Insufficient memory", 1)]
    stats.record_scheduled("ns/a")
    assert stats.top_reasons() == [("Insufficient cpu", 1), ("Insufficient memory", 1)]


def test_operator_config_from_the_command_line() -> None:
    args = build_parser().parse_args(
        ["run", "--no-leader-elect", "--secure-port", "0", "--profile-selector", "shard=a", "--install-crds"]
    )
    config = OperatorConfig.from_args(args)
    assert (
        config.leader_elect,
        config.serving.secure_port,
        config.profile_selector,
        config.install_crds,
    ) == (
        False,
        0,
        "shard=a",
        True,
    )
    assert config.kubeconfig is None
    assert config.identity is None
    assert config.timings.eviction == DEFAULTS.eviction  # timings are not command-line options
    assert config.timings.events == DEFAULTS.events
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.leader_elect = True  # type: ignore[misc]


def test_event_rate_from_the_command_line() -> None:
    args = build_parser().parse_args(["run", "--event-qps", "5000", "--event-burst", "6000"])
    events = OperatorConfig.from_args(args).timings.events
    assert (events.qps, events.burst) == (5000.0, 6000)
    assert events.queue_size == DEFAULTS.events.queue_size


def test_operator_is_composed_in_dependency_order() -> None:
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    pod = Pod(name="p", namespace="ns", uid="u1")
    operator.engine.pod_added(pod)
    # The evictor sees the engine's pending pods, and preemption's gate is the evictor's.
    assert operator.evictor.pods.pending("ns/p") is operator.engine.unassigned["ns/p"]
    assert not operator.evictor.in_progress(pod)
    assert operator.policies.profiles is operator.profiles
    assert operator.cluster.pdbs is operator.pdbs
    assert not operator.synced()


def _object(name: str, spec: dict[str, object], generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "generation": generation}, "spec": spec}


async def test_policies_from_the_early_lists_and_what_kopf_listed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Profiles apply from the early lists before kopf runs; once kopf has listed, what it lacks
    was deleted in between and goes; later calls change nothing."""
    lists = {
        SCHEDULING_PROFILES: [
            _object("kept", {"schedulerName": "kept-scheduler", "evictionPolicyName": "gentle"}),
            _object("deleted-early", {"schedulerName": "gone-scheduler"}),
        ],
        EVICTION_POLICIES: [_object("gentle", {}), _object("deleted-policy", {})],
    }

    async def early_lists(page_size: int) -> dict[str, list[dict[str, Any]]]:
        assert page_size == DEFAULTS.informer.page_size
        return lists

    monkeypatch.setattr(early_policies, "take", early_lists)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    notes: list[tuple[Any, ...]] = []
    operator.profiles.notify = lambda *note: notes.append(note)
    assert await operator._apply_early_policies()
    assert set(operator.engine.frameworks) == {"kept-scheduler", "gone-scheduler"}
    # The policies came first: no "preemption is off" warning, no "resolved" afterwards.
    assert operator.profiles.records["kept"].policy_problem is None
    assert notes == []
    operator.on_kopf_listed({"kept"}, {"gentle"})
    assert set(operator.engine.frameworks) == {"kept-scheduler"}
    assert set(operator.policies.records) == {"gentle"}
    operator.on_kopf_listed(set(), set())  # only the first listing says what was deleted
    assert set(operator.engine.frameworks) == {"kept-scheduler"}


async def test_without_early_lists_kopf_brings_the_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_lists(page_size: int) -> None:
        return None

    monkeypatch.setattr(early_policies, "take", no_lists)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    assert not await operator._apply_early_policies()
    operator.on_kopf_listed(set(), set())
    operator.on_profile_event(None, _object("p", {"schedulerName": "p-scheduler"}))
    assert set(operator.engine.frameworks) == {"p-scheduler"}


async def test_kopf_waits_for_the_first_bind_only_while_there_is_a_pod_to_bind() -> None:
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    await asyncio.wait_for(operator._until_first_bind(), 1)  # nothing pending: at once
    operator.on_profile_event(None, _object("p", {"schedulerName": "p-scheduler"}))
    pod = Pod(name="a", namespace="ns", uid="u-a", scheduler_name="p-scheduler")
    operator.engine.pod_added(pod)
    assert operator.engine.queue.pending_counts()["active"] == 1
    waiting = asyncio.create_task(operator._until_first_bind())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    operator.reporter.scheduled(pod, "node-1", operator.engine.frameworks["p-scheduler"])
    await asyncio.wait_for(waiting, 1)


async def test_kopf_starts_after_the_deferred_cas_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import kopf

    from policy_scheduler.kube import deferred_cas

    order: list[str] = []

    async def fake_operator(**_: object) -> None:
        order.append("kopf")

    monkeypatch.setattr(deferred_cas, "load", lambda: order.append("cas"))
    monkeypatch.setattr(kopf, "operator", fake_operator)
    operator = Operator(None, OperatorConfig(leader_elect=False, identity="me"))
    stop = asyncio.Event()
    kopf_stop: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    await asyncio.wait_for(operator._start_kopf(stop, kopf_stop), 1)
    assert order == ["cas", "kopf"]
    assert stop.is_set()  # kopf ended: so does the operator


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        (["run"], "INFO"),
        (["explain", "ns/pod"], "WARNING"),
        (["simulate", "x.yaml"], "WARNING"),
        (["-v", "simulate", "x.yaml"], "INFO"),
        (["-vv", "explain", "ns/pod"], "DEBUG"),
        (["--log-level", "ERROR", "run"], "ERROR"),
    ],
)
def test_commands_other_than_run_log_warnings_only(argv: list[str], level: str) -> None:
    from policy_scheduler.app.cli import log_level

    assert log_level(build_parser().parse_args(argv)) == level
