"""The API server's version: read at start (retried), re-read while running, a change counted
once confirmed; the operator's profiles follow the release it names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy_scheduler.controllers.profile_store import ProfileStore, compile_profile_spec
from policy_scheduler.kube import server_version
from policy_scheduler.kube.client import ApiError
from policy_scheduler.kube.retry import Answer, RetryPolicy
from policy_scheduler.kube.server_version import ServerVersionTimings, ServerVersionWatch, read_server_version
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.versioning.features import FeatureGateError, Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37
from policy_scheduler.service.kubernetes_version import FEATURE_GATES_REFUSED, KubernetesSemantics
from tests.no_api import NO_API

NO_WAIT = RetryPolicy(initial=0.0, cap=0.0, max_attempts=3)
TIMINGS = ServerVersionTimings(interval=0.0, confirmations=2, retry=NO_WAIT)


def version_body(git_version: str) -> bytes:
    return json.dumps(
        {"major": "1", "minor": "37", "gitVersion": git_version, "platform": "linux/amd64"}
    ).encode()


class Answers:
    def __init__(self, *answers: Answer | BaseException) -> None:
        self.answers = list(answers)
        self.paths: list[tuple[str, str]] = []

    async def call(self, api: Any, method: str, path: str, **_: Any) -> Answer:
        self.paths.append((method, path))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


async def test_read_is_a_get_of_version_retried_through_an_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Answers(ConnectionResetError(), Answer(503, b""), Answer(200, version_body("v1.36.3")))
    monkeypatch.setattr(server_version, "call", server.call)
    assert await read_server_version(NO_API, NO_WAIT) == "v1.36.3"
    assert server.paths == [("GET", "/version")] * 3


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (Answer(403, b'{"kind":"Status","reason":"Forbidden","message":"no"}'), "Forbidden"),
        (Answer(200, b"{}"), "BadVersion"),
    ],
)
async def test_unreadable_versions_are_api_errors(
    monkeypatch: pytest.MonkeyPatch, answer: Answer, reason: str
) -> None:
    monkeypatch.setattr(server_version, "call", Answers(answer).call)
    with pytest.raises(ApiError) as info:
        await read_server_version(NO_API, NO_WAIT)
    assert info.value.reason == reason


def test_a_change_counts_once_confirmed() -> None:
    seen: list[str | None] = []
    watch = ServerVersionWatch(NO_API, lambda v, _why: seen.append(v), TIMINGS)
    watch.current = "v1.36.3"
    assert not watch.observe("v1.37.2")  # once: a rolling upgrade may still answer the old one
    assert not watch.observe("v1.36.3")  # back: the count starts again
    assert not watch.observe("v1.37.2")
    assert not watch.observe(None)  # a failed read changes nothing
    assert not watch.observe("v1.37.2")
    assert watch.observe("v1.37.2")
    assert watch.current == "v1.37.2"


def test_after_a_failed_first_read_the_first_answer_counts() -> None:
    watch = ServerVersionWatch(NO_API, lambda v, _why: None, TIMINGS)
    assert watch.current is None
    assert watch.observe("v1.35.4")


class _Published:
    def __init__(self) -> None:
        self.profiles: list[ResolvedProfile] = []

    def __call__(self, profiles: list[ResolvedProfile]) -> None:
        self.profiles = profiles


async def test_profiles_follow_the_api_servers_release(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Answers(Answer(200, version_body("v1.35.4")), Answer(200, version_body("v1.36.3")))
    monkeypatch.setattr(server_version, "call", server.call)
    published = _Published()
    store = ProfileStore(compile_profile_spec, published)
    store.apply("p", "u", 1, "2026-01-01T00:00:00Z", {"schedulerName": "s"})
    kubernetes = KubernetesSemantics(NO_API, store, timings=TIMINGS)
    await kubernetes.start()
    assert published.profiles[0].features == Features(V1_35)
    kubernetes._on_version("v1.36.3", "")
    assert published.profiles[0].features == Features(V1_36)


async def test_unreadable_version_means_the_newest_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_version, "call", Answers(*[Answer(500, b"")] * 3).call)
    store = ProfileStore(compile_profile_spec, _Published())
    await KubernetesSemantics(NO_API, store, timings=TIMINGS).start()
    assert store.semantics.features == Features(V1_37)
    assert store.semantics.reason == "ServerVersionUnknown"


async def test_feature_gates_that_do_not_fit_stop_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_version, "call", Answers(Answer(200, version_body("v1.37.2"))).call)
    store = ProfileStore(compile_profile_spec, _Published())
    gates = (("NodeDeclaredFeatures", False),)  # locked on in v1.37
    with pytest.raises(FeatureGateError, match="locked to true"):
        await KubernetesSemantics(NO_API, store, feature_gates=gates, timings=TIMINGS).start()


async def test_after_start_gates_that_do_not_fit_keep_the_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_version, "call", Answers(Answer(200, version_body("v1.36.3"))).call)
    store = ProfileStore(compile_profile_spec, _Published())
    gates = (("NodeDeclaredFeatures", True),)  # fine in v1.36, locked (to true: fine) in v1.37
    kubernetes = KubernetesSemantics(
        NO_API, store, feature_gates=(("InPlacePodLevelResourcesVerticalScaling", False),), timings=TIMINGS
    )
    await kubernetes.start()
    assert store.semantics.features.version == V1_36
    kubernetes._on_version("v1.35.4", "")  # v1.35: that gate is alpha and settable; fine
    assert store.semantics.features.version == V1_35
    kubernetes.feature_gates = (*gates, ("CompositePodGroup", False))  # only v1.37 has it
    kubernetes._on_version("v1.36.3", "")
    assert store.semantics.reason == FEATURE_GATES_REFUSED
    assert store.semantics.features.version == V1_35
    assert "does not accept --feature-gates" in store.semantics.why
