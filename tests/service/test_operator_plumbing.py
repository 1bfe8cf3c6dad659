"""Small operator pieces: --profile-selector, log formats, pending-reason grouping, the policy
informers feeding the stores."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from typing import Any

import pytest

from policy_scheduler.app.cli import build_parser
from policy_scheduler.controllers.selector import parse_selector
from policy_scheduler.kube import informer as informer_module
from policy_scheduler.kube.event_objects import ObjectRef
from policy_scheduler.kube.paths import EVICTION_POLICIES, SCHEDULING_PROFILES
from policy_scheduler.kube.retry import Answer
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.observability.logs import JsonFormatter, KeyValueFormatter
from policy_scheduler.observability.profile_stats import ProfileStats, reason_key
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.semantics import choose_semantics
from policy_scheduler.service.config import OperatorConfig
from policy_scheduler.service.operator import Operator
from tests.no_api import NO_API


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


def test_catch_up_list_threshold_from_the_command_line() -> None:
    default = OperatorConfig.from_args(build_parser().parse_args(["run"])).timings.informer
    assert default == DEFAULTS.informer
    args = build_parser().parse_args(["run", "--catch-up-list-below", "0"])
    assert OperatorConfig.from_args(args).timings.informer.catch_up_list_below == 0


@pytest.mark.parametrize("value", ["-1", "many"])
def test_catch_up_list_threshold_must_be_a_whole_number(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--catch-up-list-below", value])
    assert "--catch-up-list-below" in capsys.readouterr().err


def test_operator_is_composed_in_dependency_order() -> None:
    operator = Operator(NO_API, OperatorConfig(leader_elect=False, identity="me"))
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


class PolicyLists:
    """Answers the policy informers' lists (path -> items, resourceVersion) and records the order."""

    def __init__(self, items: dict[str, list[dict[str, Any]]], version: str = "10") -> None:
        self.items = items
        self.version = version
        self.asked: list[str] = []
        self.policies_answer = asyncio.Event()  # the EvictionPolicy list is answered once set

    async def call(self, _api: Any, _method: str, path: str, **_: Any) -> Answer:
        self.asked.append(path)
        if path == EVICTION_POLICIES:
            await self.policies_answer.wait()
        body = {"kind": "List", "metadata": {"resourceVersion": self.version}, "items": self.items[path]}
        return Answer(200, json.dumps(body).encode())


def _versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


async def _never_watch(**_: Any) -> None:
    await asyncio.Event().wait()


async def test_policies_reach_the_stores_through_their_informers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both kinds are listed at once, but the profiles are applied only once the EvictionPolicies
    are: no "preemption is off" flashes at start. A relist drops what went away and applies what
    changed."""
    lists = PolicyLists(
        {
            EVICTION_POLICIES: [_versioned(_object("gentle", {}), "1"), _versioned(_object("old", {}), "2")],
            SCHEDULING_PROFILES: [
                _versioned(_object("kept", {"schedulerName": "kept", "evictionPolicyName": "gentle"}), "3"),
                _versioned(_object("gone", {"schedulerName": "gone"}), "4"),
            ],
        }
    )
    monkeypatch.setattr(informer_module, "call", lists.call)
    operator = Operator(NO_API, OperatorConfig(leader_elect=False, identity="me"))
    notes: list[tuple[Any, ...]] = []
    operator.profiles.notify = lambda *note: notes.append(note)
    for informer in operator.policy_informers.informers():
        monkeypatch.setattr(informer, "_watch", _never_watch)
    running = asyncio.create_task(operator.policy_informers.run())
    await asyncio.wait_for(operator.policy_informers.profiles.has_synced.wait(), 5)
    assert set(lists.asked) == {EVICTION_POLICIES, SCHEDULING_PROFILES}
    assert not operator.engine.frameworks  # listed, held back
    lists.policies_answer.set()
    await asyncio.wait_for(operator.policy_informers.wait_synced(), 5)
    assert set(operator.engine.frameworks) == {"kept", "gone"}
    assert operator.profiles.records["kept"].policy_problem is None
    assert notes == []  # the policy was in before the profile that names it
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running

    # A relist (after the watch expired): one profile deleted, one policy changed.
    lists.items = {
        EVICTION_POLICIES: [_versioned(_object("gentle", {"dryRun": True}, generation=2), "5")],
        SCHEDULING_PROFILES: [lists.items[SCHEDULING_PROFILES][0]],
    }
    for informer in operator.policy_informers.informers():
        await informer._list_and_sync()
    assert set(operator.engine.frameworks) == {"kept"}
    assert set(operator.policies.records) == {"gentle"}
    assert operator.policies.settings_for_scheduler("kept").config.dry_run


def test_watch_events_reach_the_profile_handler_and_the_selector_applies() -> None:
    operator = Operator(NO_API, OperatorConfig(leader_elect=False, identity="me", profile_selector="shard=a"))
    profiles = operator.policy_informers.profiles
    operator.policy_informers.eviction_policies.has_synced.set()  # no profile is held back

    def event(kind: str, labels: dict[str, str], version: str, scheduler: str = "p") -> bytes:
        obj = _versioned(_object("p", {"schedulerName": scheduler}), version)
        obj["metadata"]["labels"] = labels
        return json.dumps({"type": kind, "object": obj}).encode()

    profiles._handle_line(event("ADDED", {"shard": "a"}, "1"))
    assert set(operator.engine.frameworks) == {"p"}
    profiles._handle_line(event("MODIFIED", {"shard": "a"}, "2", scheduler="q"))
    assert set(operator.engine.frameworks) == {"q"}
    profiles._handle_line(event("MODIFIED", {"shard": "b"}, "3", scheduler="q"))  # left the selector
    assert not operator.engine.frameworks
    profiles._handle_line(event("MODIFIED", {"shard": "a"}, "4", scheduler="q"))  # back in
    assert set(operator.engine.frameworks) == {"q"}
    profiles._handle_line(event("DELETED", {"shard": "a"}, "5", scheduler="q"))
    assert not operator.engine.frameworks
    assert operator.profiles.records == {}


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


def test_a_server_release_we_do_not_support_is_one_warning_event_per_profile_and_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    operator = Operator(NO_API, OperatorConfig(leader_elect=False, identity="me"))
    profiles = operator.policy_informers.profiles
    operator.policy_informers.eviction_policies.has_synced.set()
    obj = _versioned(_object("p", {"schedulerName": "p"}), "1")
    profiles._handle_line(json.dumps({"type": "ADDED", "object": obj}).encode())
    sent: list[tuple[str, str, str]] = []

    def event(ref: ObjectRef, type_: str, reason: str, action: str, note: str, **_: Any) -> None:
        sent.append((ref.name, type_, reason))

    monkeypatch.setattr(operator.events, "event", event)

    operator.profiles.set_semantics(choose_semantics("v1.37.2"))
    operator._refresh_status()
    assert sent == []  # a supported release: the condition says so, no Event
    operator.profiles.set_semantics(choose_semantics("v1.38.0"))
    operator._refresh_status()
    operator._refresh_status()
    assert sent == [("p", "Warning", "NewerThanSupported")]
    operator.profiles.set_semantics(choose_semantics("v1.39.1"))
    operator._refresh_status()
    assert len(sent) == 2  # another server version is told again
