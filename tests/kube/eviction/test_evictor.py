"""Evictor decisions with a fake request layer: classification, grace periods, rate limits and
what happens after a refusal. Pure logic only; e2e/test_preemption.py runs it for real."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from policy_scheduler.kube.event_objects import WARNING, ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction import api as eviction_api
from policy_scheduler.kube.eviction import nominations
from policy_scheduler.kube.eviction.api import Outcome, classify, eviction_body, grace_period
from policy_scheduler.kube.eviction.evictor import Evictor
from policy_scheduler.kube.eviction.limiter import Limiter
from policy_scheduler.kube.fence import Fence
from policy_scheduler.kube.retry import Answer
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.policy.eviction_settings import EvictionRecord, EvictionSettings, RateLimits
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import EvictionPolicyConfig
from tests.aio import eventually, settle
from tests.builders import make_pod
from tests.fence import SwitchFence
from tests.no_api import NO_API


def status_body(message: str, causes: list[str] | None = None) -> bytes:
    doc: dict[str, Any] = {"kind": "Status", "message": message}
    if causes:
        doc["details"] = {"causes": [{"reason": c} for c in causes]}
    return json.dumps(doc).encode()


PDB_429 = status_body(
    "Cannot evict pod as it would violate the pod's disruption budget.", ["DisruptionBudget"]
)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (201, b"{}", Outcome.EVICTED),
        (200, b"{}", Outcome.EVICTED),
        (404, status_body('pods "x" not found'), Outcome.GONE),
        (
            409,
            status_body("Precondition failed: UID in precondition: a, UID in object meta: b"),
            Outcome.GONE,
        ),
        (409, status_body("the object has been modified"), Outcome.TRANSIENT),
        (429, PDB_429, Outcome.BUDGET),
        (429, status_body("Too many requests, please try again later."), Outcome.THROTTLED),
        (
            500,
            status_body(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            ),
            Outcome.MULTIPLE_BUDGETS,
        ),
        (500, status_body("etcdserver: request timed out"), Outcome.TRANSIENT),
        (503, b"not json", Outcome.TRANSIENT),
        (403, status_body("forbidden"), Outcome.FAILED),
    ],
)
def test_classify(status: int, body: bytes, expected: Outcome) -> None:
    assert classify(status, body) is expected


@pytest.mark.parametrize(
    ("pod_grace", "max_grace", "expected"),
    [(30, None, None), (None, None, None), (30, 5, 5), (2, 5, 2), (None, 5, 5), (0, 5, 0)],
)
def test_grace_period(pod_grace: int | None, max_grace: int | None, expected: int | None) -> None:
    assert grace_period(pod_grace, max_grace) == expected


def test_eviction_body() -> None:
    assert eviction_body("ns", "web", "u1", 5) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "ns"},
        "deleteOptions": {"preconditions": {"uid": "u1"}, "gracePeriodSeconds": 5},
    }
    assert eviction_body("ns", "web", "u1", None)["deleteOptions"] == {"preconditions": {"uid": "u1"}}


# ---- the limiter ---------------------------------------------------------------------------------------


def test_limiter_burst_then_rate() -> None:
    limiter = Limiter(RateLimits(evictions_per_minute=6, burst=2, max_in_flight=100))
    assert limiter.try_acquire("a", "n1", 0.0) == 0
    assert limiter.try_acquire("a", "n1", 0.0) == 0
    assert limiter.try_acquire("a", "n1", 0.0) == pytest.approx(10.0)  # one token per 10 s
    assert limiter.try_acquire("a", "n1", 4.0) == pytest.approx(6.0)
    assert limiter.try_acquire("a", "n1", 10.0) == 0


def test_limiter_scoped_buckets_take_all_or_nothing() -> None:
    limiter = Limiter(
        RateLimits(evictions_per_minute=60, burst=10, max_in_flight=100, per_namespace_per_minute=1)
    )
    assert limiter.try_acquire("a", "n1", 0.0) == 0
    assert limiter.try_acquire("a", "n1", 0.0) == pytest.approx(60.0)  # namespace a is spent
    assert limiter.try_acquire("b", "n1", 0.0) == 0  # and the refusal took no total token
    assert limiter.total.tokens == pytest.approx(8.0)


def test_limiter_per_node() -> None:
    limiter = Limiter(RateLimits(evictions_per_minute=60, burst=10, per_node_per_minute=2))
    assert limiter.try_acquire("a", "n1", 0.0) == 0
    assert limiter.try_acquire("b", "n1", 0.0) == 0
    assert limiter.try_acquire("c", "n1", 0.0) == pytest.approx(30.0)
    assert limiter.try_acquire("c", "n2", 0.0) == 0


def test_limiter_max_in_flight() -> None:
    limiter = Limiter(RateLimits(evictions_per_minute=600, burst=100, max_in_flight=1))
    assert limiter.try_acquire("a", "n1", 0.0) == 0
    limiter.evicted("v1", until=100.0)
    assert limiter.try_acquire("a", "n1", 1.0) == math.inf
    assert limiter.gone("v1")
    assert limiter.try_acquire("a", "n1", 1.0) == 0
    limiter.evicted("v2", until=5.0)
    assert limiter.try_acquire("a", "n1", 6.0) == 0  # a pod that never went away stops counting


# ---- the evictor with a fake API ---------------------------------------------------------------------


class FakeApi:
    """Answers by (method, path suffix); records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.answers: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.after: Callable[[str, str], None] = lambda method, path: None  # runs after each call

    def answer(self, method: str, suffix: str, *answers: tuple[Any, ...]) -> None:
        """Each answer: (status, body) or (status, body, Retry-After seconds)."""
        self.answers[(method, suffix)] = list(answers)

    async def request(
        self, api: Any, method: str, path: str, *, body: Any = None, fence: Fence | None = None, **_: Any
    ) -> Answer:
        if fence is not None:  # as client.call: a refused write never goes out
            fence.check()
        self.calls.append((method, path, body))
        self.after(method, path)
        for (m, suffix), answers in self.answers.items():
            if m == method and path.endswith(suffix) and answers:
                status, data, *retry_after = answers.pop(0) if len(answers) > 1 else answers[0]
                return Answer(status, data, *retry_after)
        if method == "GET":
            name = path.rsplit("/", 1)[1]
            pod = self.pods.get(name)
            return Answer(200, json.dumps(pod).encode()) if pod else Answer(404, b"{}")
        return Answer(201, b"{}")

    def posted(self) -> list[str]:
        return [path for method, path, _ in self.calls if method == "POST"]


class Events(EventRecorder):
    """Records what the evictor says, writes nothing."""

    def __init__(self) -> None:
        super().__init__(NO_API, instance="test")
        self.said: list[tuple[ObjectRef, str, str, str]] = []

    def event(
        self,
        regarding: ObjectRef,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: ObjectRef | None = None,
        controller: str | None = None,
    ) -> None:
        self.said.append((regarding, type_, reason, note))
        super().event(regarding, type_, reason, action, note, related, controller)


class Policies:
    def __init__(self, settings: EvictionSettings) -> None:
        self.settings = settings
        self.records: list[EvictionRecord] = []

    def settings_for_scheduler(self, scheduler_name: str) -> EvictionSettings:
        return self.settings

    def record(self, policy: str | None, entry: EvictionRecord) -> None:
        self.records.append(entry)


class Pods:
    def __init__(self, pods: dict[str, Pod], requeued: list[str]) -> None:
        self.pods = pods
        self.requeued = requeued

    def pending(self, key: str) -> Pod | None:
        return self.pods.get(key)

    def requeue(self, pod: Pod) -> None:
        self.requeued.append(pod.key)


class Harness:
    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        config: EvictionPolicyConfig,
        limits: RateLimits | None = None,
        *,
        unavailable: str | None = None,
        **timings: float,
    ) -> None:
        self.api = FakeApi()
        self.fence = SwitchFence()
        self.preemptor = make_pod("high", namespace="ns", uid="p-uid", priority=1000)
        self.preemptor.nominated_node_name = "n1"  # the reporter's write has landed
        self.pods: dict[str, Pod] = {self.preemptor.key: self.preemptor}
        self.requeued: list[str] = []
        self.cleared: list[str] = []
        self.patched: list[dict[str, Any]] = []
        self.sleeps: list[float] = []

        async def fake_clear(api: Any, ns: str, name: str, node: str, **_: Any) -> bool:
            self.cleared.append(f"{ns}/{name}={node}")
            return True

        async def fake_patch(
            api: Any, ns: str, name: str, body: dict[str, Any], *, fence: Fence | None = None, **_: Any
        ) -> bool:
            if fence is not None:
                fence.check()
            self.patched.append(body)
            return True

        async def fake_sleep(seconds: float) -> None:  # the API retries' waits
            self.sleeps.append(seconds)

        monkeypatch.setattr(nominations, "set_nominated_node", fake_clear)
        monkeypatch.setattr(eviction_api, "patch_status", fake_patch)
        self.policies = Policies(EvictionSettings("policy", config, limits, unavailable_reason=unavailable))
        self.records = self.policies.records
        self.events = Events()
        # A requeue after a failure is due at once: settle() then lets it happen, no time passes.
        quick: dict[str, Any] = {"requeue_initial": 0.0, "nomination_settle": 0.05, **timings}
        self.evictor = Evictor(
            NO_API,
            self.events,
            fence=self.fence,
            policies=self.policies,
            timings=dataclasses.replace(DEFAULTS.eviction, **quick),
            call_fn=self.api.request,
            sleep=fake_sleep,
        )
        self.evictor.attach(Pods(self.pods, self.requeued))

    def victim(self, name: str, uid: str, grace: int | None = 30) -> Pod:
        """A victim as the scheduler's cache has it (nothing is read from the API)."""
        victim = make_pod(name, namespace="ns", uid=uid, priority=10, node_name="n1")
        victim.termination_grace_period_seconds = grace
        return victim

    async def run(self, *victims: Pod) -> None:
        self.evictor.submit(self.preemptor, victims, "n1", "sched")
        await self.evictor.drain()
        await settle()  # the requeues due now

    def results(self) -> list[tuple[str, str]]:
        return [(r.name, r.result) for r in self.records]


async def test_evicts_with_condition_capped_grace_and_requeues(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(max_grace_period_seconds=5))
    a, b = h.victim("a", "ua", grace=30), h.victim("b", "ub", grace=2)
    await h.run(a, b)
    posts = [(path, body) for method, path, body in h.api.calls if method == "POST"]
    assert [p for p, _ in posts] == [
        "/api/v1/namespaces/ns/pods/a/eviction",
        "/api/v1/namespaces/ns/pods/b/eviction",
    ]
    assert [body["deleteOptions"]["gracePeriodSeconds"] for _, body in posts] == [5, 2]
    condition = h.patched[0]["status"]["conditions"][0]
    assert (condition["type"], condition["reason"]) == ("DisruptionTarget", "PreemptionByScheduler")
    assert condition["message"] == "sched: preempting to accommodate a higher priority pod"
    assert h.results() == [("a", "Evicted"), ("b", "Evicted")]
    assert h.requeued == ["ns/high"]
    assert h.cleared == []
    assert not h.evictor.in_progress(h.preemptor)


async def test_in_progress_gates_while_running(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.evictor.submit(h.preemptor, [h.victim("a", "ua")], "n1", "sched")
    assert h.evictor.in_progress(h.preemptor)
    h.evictor.submit(h.preemptor, [h.victim("b", "ub")], "n1", "sched")  # ignored: one at a time
    await h.evictor.drain()
    assert h.api.posted() == ["/api/v1/namespaces/ns/pods/a/eviction"]


async def test_enforce_budget_refusal_abandons_the_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(budget_mode="Enforce"))
    h.api.answer("POST", "/a/eviction", (429, PDB_429))
    await h.run(h.victim("a", "ua"), h.victim("b", "ub"))
    assert h.api.posted() == ["/api/v1/namespaces/ns/pods/a/eviction"]  # b is left alone
    assert not any(method == "DELETE" for method, _, _ in h.api.calls)
    assert h.results() == [("a", "BlockedByBudget")]
    assert h.cleared == ["ns/high="]
    assert h.requeued == ["ns/high"]


async def test_best_effort_deletes_after_a_budget_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(budget_mode="BestEffort"))
    h.api.answer("POST", "/a/eviction", (429, PDB_429))
    await h.run(h.victim("a", "ua", grace=7))
    deletes = [(path, body) for method, path, body in h.api.calls if method == "DELETE"]
    assert deletes == [("/api/v1/namespaces/ns/pods/a", {"preconditions": {"uid": "ua"}})]
    assert h.results() == [("a", "BlockedByBudget"), ("a", "Evicted")]
    assert h.cleared == []


async def test_multiple_budgets_is_a_failure_under_enforce(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.api.answer(
        "POST",
        "/a/eviction",
        (
            500,
            status_body(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            ),
        ),
    )
    await h.run(h.victim("a", "ua"))
    assert h.results() == [("a", "Failed")]
    assert h.cleared == ["ns/high="]


async def test_transient_errors_are_retried_after_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.api.answer(
        "POST", "/a/eviction", (503, b""), (429, status_body("Too many requests"), 7.0), (201, b"{}")
    )
    await h.run(h.victim("a", "ua"))
    assert len(h.api.posted()) == 3
    assert h.results() == [("a", "Evicted")]
    assert len(h.sleeps) == 2
    assert h.sleeps[0] <= 0.5
    assert h.sleeps[1] == 7.0


async def test_a_conflict_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.api.answer("POST", "/a/eviction", (409, status_body("the object has been modified")))
    await h.run(h.victim("a", "ua"))
    assert len(h.api.posted()) == 1
    assert h.sleeps == []
    assert h.results() == [("a", "Failed")]
    assert h.cleared == ["ns/high="]


async def test_enforce_budget_refusal_requeues_after_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(budget_mode="Enforce"))
    h.api.answer("POST", "/a/eviction", (429, PDB_429, 30.0))
    await h.run(h.victim("a", "ua"))
    assert len(h.api.posted()) == 1  # abandoned at once, as before
    assert h.results() == [("a", "BlockedByBudget")]
    assert h.cleared == ["ns/high="]
    assert h.requeued == []  # not after requeue_initial: the server asked for 30 s
    assert h.evictor.in_progress(h.preemptor)
    await h.evictor.stop()


async def test_unavailable_policy_evicts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = 'EvictionPolicy "strict" not found'
    h = Harness(monkeypatch, EvictionPolicyConfig(), unavailable=reason)
    await h.run(h.victim("a", "ua"), h.victim("b", "ub"))
    assert h.api.calls == []
    assert h.patched == []
    assert [(r.name, r.result, r.message) for r in h.records] == [
        ("a", "Failed", reason),
        ("b", "Failed", reason),
    ]
    warnings = [(ref.name, reason_) for ref, type_, reason_, _ in h.events.said if type_ == WARNING]
    assert warnings == [("high", "PreemptionBlocked")]
    assert reason in h.events.said[0][3]
    assert h.cleared == ["ns/high="]
    assert h.requeued == ["ns/high"]


async def test_gone_replaced_and_terminating_victims(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is read before an eviction (as kube-scheduler): a victim gone or replaced since
    the cycle is answered 404 or 409 by the Eviction API (the uid precondition) and needs
    nothing more; one terminating in the cycle's view is skipped without a call."""
    h = Harness(monkeypatch, EvictionPolicyConfig())
    gone, replaced = h.victim("gone", "ug"), h.victim("replaced", "old-uid")
    terminating = h.victim("t", "ut")
    terminating.deletion_timestamp = 1.0
    h.api.answer("POST", "/pods/gone/eviction", (404, status_body('pods "gone" not found')))
    h.api.answer(
        "POST",
        "/pods/replaced/eviction",
        (409, status_body("Precondition failed: UID in precondition: old-uid, UID in object meta: new")),
    )
    await h.run(gone, replaced, terminating)
    assert [m for m, _, _ in h.api.calls] == ["POST", "POST"]  # no read, none for the terminating one
    assert [body["deleteOptions"]["preconditions"]["uid"] for _, _, body in h.api.calls] == ["ug", "old-uid"]
    assert h.records == []
    assert h.patched == []  # nobody marked as disrupted
    assert h.requeued == ["ns/high"]


async def test_nothing_is_evicted_for_a_preemptor_that_is_gone_or_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.pods[h.preemptor.key] = make_pod("high", namespace="ns", uid="p-uid", priority=1000, node_name="n2")
    await h.run(h.victim("a", "ua"))
    h.pods.clear()
    await h.run(h.victim("a", "ua"))
    assert h.api.calls == []
    assert h.requeued == []


async def test_dry_run_records_and_clears_the_nomination(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(dry_run=True))
    h.evictor.submit(h.preemptor, [h.victim("a", "ua"), h.victim("b", "ub")], "n1", "sched")
    assert not h.evictor.in_progress(h.preemptor)  # nothing to wait for while it reports
    await h.evictor.drain()
    assert h.api.calls == []
    assert h.results() == [("a", "WouldEvict"), ("b", "WouldEvict")]
    assert h.cleared == ["ns/high="]
    assert h.requeued == []
    assert h.evictor.in_progress(h.preemptor)  # held: clearing the nomination must not loop


async def test_dry_run_hold_ends_with_a_requeue(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(dry_run=True), dry_run_retry=0.05)
    await h.run(h.victim("a", "ua"))
    await eventually(lambda: h.requeued == ["ns/high"])
    assert not h.evictor.in_progress(h.preemptor)


async def test_rate_limit_defers_after_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(
        monkeypatch, EvictionPolicyConfig(), RateLimits(evictions_per_minute=1, burst=1), max_rate_wait=0.05
    )
    await h.run(h.victim("a", "ua"), h.victim("b", "ub"))
    assert h.api.posted() == ["/api/v1/namespaces/ns/pods/a/eviction"]
    assert h.results() == [("a", "Evicted"), ("b", "RateLimited")]
    assert h.cleared == ["ns/high="]
    assert h.requeued == ["ns/high"]


async def test_in_flight_slot_frees_when_the_victim_is_deleted(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(
        monkeypatch, EvictionPolicyConfig(), RateLimits(evictions_per_minute=600, burst=10, max_in_flight=1)
    )
    a, b = h.victim("a", "ua"), h.victim("b", "ub")
    h.evictor.submit(h.preemptor, [a, b], "n1", "sched")
    await eventually(lambda: bool(h.api.posted()))
    await settle()
    assert len(h.api.posted()) == 1  # b waits for a to go
    h.evictor.pod_deleted(a)
    await h.evictor.drain()
    assert len(h.api.posted()) == 2
    assert h.results() == [("a", "Evicted"), ("b", "RateLimited"), ("b", "Evicted")]


async def test_a_victim_deleted_while_being_marked_frees_its_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deletion (grace 0) is seen while the DisruptionTarget write is still awaited: the slot
    was taken before the eviction, so that deletion frees it and b need not wait the slack out."""
    h = Harness(
        monkeypatch, EvictionPolicyConfig(), RateLimits(evictions_per_minute=600, burst=10, max_in_flight=1)
    )
    a, b = h.victim("a", "ua", grace=0), h.victim("b", "ub", grace=0)

    async def deleted_meanwhile(api: Any, ns: str, name: str, body: dict[str, Any], **_: Any) -> bool:
        h.evictor.pod_deleted(a if name == "a" else b)
        return True

    monkeypatch.setattr(eviction_api, "patch_status", deleted_meanwhile)
    await h.run(a, b)
    assert h.results() == [("a", "Evicted"), ("b", "Evicted")]
    assert len(h.api.posted()) == 2


async def test_dry_run_clears_again_after_a_repeat_and_reports_once(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig(dry_run=True))
    victims = [h.victim("a", "ua")]
    h.evictor.submit(h.preemptor, victims, "n1", "sched")
    h.evictor.submit(h.preemptor, victims, "n1", "sched")  # preempted again before the clear
    await h.evictor.drain()
    h.evictor.submit(h.preemptor, victims, "n1", "sched")  # a later retry, same decision
    await h.evictor.drain()
    assert h.cleared == ["ns/high="] * 3
    assert h.results() == [("a", "WouldEvict")]


async def test_a_long_throttle_abandons_and_requeues_after_retry_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.api.answer("POST", "/a/eviction", (429, status_body("Too many requests"), 600.0))
    await h.run(h.victim("a", "ua"))
    assert len(h.api.posted()) == 1
    assert h.sleeps == []
    assert h.results() == [("a", "Failed")]
    assert h.cleared == ["ns/high="]
    assert h.requeued == []
    assert h.evictor.in_progress(h.preemptor)
    await h.evictor.stop()


# ---- fencing: a replica that may no longer act as the leader evicts nothing more ---------------------


async def test_a_fence_closed_after_an_eviction_stops_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    a, b = h.victim("a", "ua"), h.victim("b", "ub")

    def close_after_a(method: str, path: str) -> None:
        if method == "POST" and path.endswith("/a/eviction"):
            h.fence.open = False

    h.api.after = close_after_a
    await h.run(a, b)
    assert h.api.posted() == ["/api/v1/namespaces/ns/pods/a/eviction"]
    assert h.patched == []  # its DisruptionTarget was refused too (informative only)
    assert h.results() == [("a", "Evicted")]  # what did happen is still reported
    assert h.requeued == ["ns/high"]  # whoever leads now decides for it
    assert not h.evictor.in_progress(h.preemptor)


async def test_an_eviction_refused_by_the_fence_frees_its_in_flight_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = RateLimits(evictions_per_minute=600, burst=100, max_in_flight=1)
    h = Harness(monkeypatch, EvictionPolicyConfig(), limits)
    a = h.victim("a", "ua")

    limiter = h.evictor.limiters.get("policy", limits)
    assert limiter is not None
    grant = limiter.try_acquire

    def grant_then_close(namespace: str, node: str, now: float) -> float:
        wait = grant(namespace, node, now)
        h.fence.open = False  # after the slot is taken, before the eviction is sent
        return wait

    limiter.try_acquire = grant_then_close  # type: ignore[method-assign]
    await h.run(a)
    assert h.api.posted() == []
    assert h.results() == []
    limiter = h.evictor.limiters.get("policy", limits)
    assert limiter is not None
    assert limiter.in_flight == {}
    assert h.requeued == ["ns/high"]


async def test_no_eviction_starts_while_the_fence_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    h = Harness(monkeypatch, EvictionPolicyConfig())
    h.fence.open = False
    await h.run(h.victim("a", "ua"))
    assert h.api.calls == []
    assert not h.evictor.in_progress(h.preemptor)
