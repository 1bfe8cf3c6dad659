"""The Eviction API (and pod DELETE) as the evictor uses it: request bodies, what an answer
means for the victim, and calls with retries of transient failures."""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from policy_scheduler.kube.client import CONNECTION_ERRORS, ApiError, call
from policy_scheduler.kube.fence import UNFENCED, Fence, NotLeading
from policy_scheduler.kube.paths import pod_path
from policy_scheduler.kube.podstatus import patch_status, rfc3339
from policy_scheduler.kube.retry import Answer, RetryPolicy, Sleep, retryable, with_retries

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
DEFAULT_GRACE = 30  # the API's default terminationGracePeriodSeconds
API_FAILURES: tuple[type[BaseException], ...] = (ApiError, *CONNECTION_ERRORS)
# A DisruptionTarget that could not be written, refusals by the fence included: it only informs.
MARK_FAILURES: tuple[type[BaseException], ...] = (*API_FAILURES, NotLeading)

CallFn = Callable[..., Awaitable[Answer]]
DRY_RUN_ALL: Mapping[str, str] = MappingProxyType({"dryRun": "All"})


class Outcome(enum.Enum):
    EVICTED = "evicted"
    GONE = "gone"  # 404, or a different pod now has the name
    BUDGET = "budget"  # 429 from a PodDisruptionBudget
    THROTTLED = "throttled"  # 429 from API priority and fairness: retry
    MULTIPLE_BUDGETS = "multiple_budgets"  # 500: the Eviction API refuses pods under several budgets
    TRANSIENT = "transient"
    FAILED = "failed"


def status_text(body: bytes) -> tuple[str, list[str]]:
    """The Status message and its causes' reasons, as far as the body is a Status."""
    try:
        doc = json.loads(body)
    except ValueError:
        return body[:300].decode("utf-8", "replace"), []
    if not isinstance(doc, dict):
        return "", []
    details = doc.get("details") or {}
    causes = [str(c.get("reason", "")) for c in details.get("causes") or [] if isinstance(c, dict)]
    return str(doc.get("message", "")), causes


def classify(status: int, body: bytes) -> Outcome:
    """What an answer of the Eviction API (or of a pod DELETE) means for the victim."""
    message, causes = status_text(body)
    if 200 <= status < 300:
        return Outcome.EVICTED
    if status == 404:
        return Outcome.GONE
    if status == 409 and "precondition" in message.lower():
        return Outcome.GONE  # the uid precondition failed: the victim was replaced
    if status == 429:
        if "DisruptionBudget" in causes or "disruption budget" in message.lower():
            return Outcome.BUDGET
        return Outcome.THROTTLED
    if status == 500 and "more than one poddisruptionbudget" in message.lower():
        return Outcome.MULTIPLE_BUDGETS
    if retryable(status) or status == 409:
        return Outcome.TRANSIENT
    return Outcome.FAILED


def grace_period(pod_grace: int | None, max_grace: int | None) -> int | None:
    """gracePeriodSeconds to send: the pod's own, capped by the policy; None leaves it out."""
    if max_grace is None:
        return None  # the pod's terminationGracePeriodSeconds applies
    return max_grace if pod_grace is None else min(pod_grace, max_grace)


def delete_options(uid: str, grace: int | None) -> dict[str, Any]:
    options: dict[str, Any] = {"preconditions": {"uid": uid}} if uid else {}
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    return options


def eviction_body(namespace: str, name: str, uid: str, grace: int | None) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
        "deleteOptions": delete_options(uid, grace),
    }


def disruption_target_patch(scheduler_name: str, uid: str, now: float) -> dict[str, Any]:
    """The condition kube-scheduler sets on a victim before deleting it."""
    condition = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
        "lastTransitionTime": rfc3339(now),
    }
    body: dict[str, Any] = {"status": {"conditions": [condition]}}
    if uid:
        body["metadata"] = {"uid": uid}
    return body


class VictimMeta(msgspec.Struct, rename="camel"):
    uid: str = ""
    deletion_timestamp: str | None = None


class VictimSpec(msgspec.Struct, rename="camel"):
    termination_grace_period_seconds: int | None = None


class Victim(msgspec.Struct):
    metadata: VictimMeta = msgspec.field(default_factory=VictimMeta)
    spec: VictimSpec = msgspec.field(default_factory=VictimSpec)


_VICTIM_DECODER = msgspec.json.Decoder(Victim)


class Result(msgspec.Struct, frozen=True):
    """An eviction or delete as the victim sees it; `retry_after` is the server's, if any."""

    outcome: Outcome
    message: str
    retry_after: float | None = None


class EvictionApi:
    def __init__(
        self,
        api: ApiClient,
        *,
        retry: RetryPolicy,
        call_fn: CallFn = call,
        sleep: Sleep = asyncio.sleep,
        fence: Fence = UNFENCED,
    ) -> None:
        self.api = api
        self.retry = retry
        self.call_fn = call_fn
        self.sleep = sleep
        self.fence = fence  # evictions and DisruptionTarget go out only while we may act as leader

    async def send(
        self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None
    ) -> Result:
        """One logical write with retries of transient failures and throttling; NotLeading when
        the fence refuses an attempt."""

        async def once() -> Answer:
            if query:
                return await self.call_fn(self.api, method, path, body=body, query=query, fence=self.fence)
            return await self.call_fn(self.api, method, path, body=body, fence=self.fence)

        try:
            answer = await with_retries(
                once,
                self.retry,
                connection_errors=CONNECTION_ERRORS,
                final=lambda a: classify(a.status, a.body) not in (Outcome.TRANSIENT, Outcome.THROTTLED),
                sleep=self.sleep,
                what=f"{method} {path}",
            )
        except CONNECTION_ERRORS as exc:
            return Result(Outcome.FAILED, f"{type(exc).__name__}: {exc}")
        outcome = classify(answer.status, answer.body)
        if outcome in (Outcome.TRANSIENT, Outcome.THROTTLED):
            outcome = Outcome.FAILED  # retries ran out
        message = status_text(answer.body)[0] or f"HTTP {answer.status}"
        return Result(outcome, message, answer.retry_after)

    async def evict(
        self, namespace: str, name: str, uid: str, grace: int | None, *, dry_run: bool = False
    ) -> Result:
        """`dry_run`: dryRun=All, the API server checks everything (PodDisruptionBudgets
        included) and evicts nothing; EVICTED then means "would be evicted"."""
        path = pod_path(namespace, name) + "/eviction"
        body = eviction_body(namespace, name, uid, grace)
        return await self.send("POST", path, body, query=DRY_RUN_ALL if dry_run else None)

    async def delete(self, namespace: str, name: str, uid: str, grace: int | None) -> Result:
        return await self.send("DELETE", pod_path(namespace, name), delete_options(uid, grace))

    async def read_victim(self, namespace: str, name: str, uid: str) -> Victim | None:
        """The victim as the API has it now; None when it is gone or replaced. If it cannot be
        read, a stand-in with the known uid (grace period unknown)."""
        try:
            answer = await self.call_fn(self.api, "GET", pod_path(namespace, name))
        except CONNECTION_ERRORS:
            answer = Answer(0, b"")
        if answer.status == 404:
            return None
        if answer.status != 200:
            return Victim(VictimMeta(uid))
        try:
            found = _VICTIM_DECODER.decode(answer.body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return Victim(VictimMeta(uid))
        return None if uid and found.metadata.uid != uid else found

    async def mark_disruption_target(self, namespace: str, name: str, uid: str, scheduler_name: str) -> None:
        body = disruption_target_patch(scheduler_name, uid, time.time())
        try:
            await patch_status(self.api, namespace, name, body, fence=self.fence)
        except MARK_FAILURES as exc:  # informative only: the eviction stands
            log.info(
                "cannot set DisruptionTarget", extra={"victim": f"{namespace}/{name}", "error": str(exc)}
            )
