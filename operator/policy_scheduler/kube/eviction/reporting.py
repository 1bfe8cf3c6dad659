"""What the evictor tells: records for the policy's status, metrics, and events."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from policy_scheduler.kube.event_objects import NORMAL, WARNING, ObjectRef
from policy_scheduler.kube.events import EventRecorder
from policy_scheduler.kube.eviction.job import Job
from policy_scheduler.observability import metrics
from policy_scheduler.policy.eviction_settings import (
    EVICTED,
    RESULT_METRIC_LABEL,
    WOULD_EVICT,
    EvictionRecord,
)
from policy_scheduler.scheduler.model import Pod

log = logging.getLogger(__name__)

REASON_DRY_RUN = "PreemptionDryRun"
REASON_BLOCKED = "PreemptionBlocked"

OnRecord = Callable[[str | None, EvictionRecord], None]


class Reporter:
    def __init__(self, events: EventRecorder, on_record: OnRecord | None) -> None:
        self.events = events
        self.on_record = on_record

    def record(self, job: Job, victim: Pod, result: str, message: str = "", *, metric: str = "") -> None:
        policy = job.settings.policy_name
        metrics.evictions.labels(metric or RESULT_METRIC_LABEL[result], policy or "").inc()
        if self.on_record is not None:
            entry = EvictionRecord(
                time.time(),
                victim.namespace,
                victim.name,
                victim.uid,
                job.preemptor.uid,
                job.node,
                result,
                message,
            )
            self.on_record(policy, entry)

    def blocked(self, job: Job, victim: Pod, why: str) -> None:
        """A Warning on the preemptor: this candidate is given up for now."""
        note = f"eviction of {victim.key} on node {job.node} refused: {why}; retrying the pod later"
        self.events.event(ObjectRef.for_pod(job.preemptor), WARNING, REASON_BLOCKED, "Preempting", note)

    def evicted(self, job: Job, victim: Pod) -> None:
        self.record(job, victim, EVICTED)
        self.events.preempted(victim, job.preemptor, job.node)
        log.info(
            "evicted preemption victim",
            extra={"victim": victim.key, "preemptor": job.preemptor.key, "node": job.node},
        )

    def would_evict(self, job: Job) -> None:
        name = job.settings.policy_name or "(default)"
        for victim in job.victims:
            if victim.terminating:
                continue
            self.record(job, victim, WOULD_EVICT)
            note = (
                f"Would be preempted by pod {job.preemptor.uid} on node {job.node} "
                f"(dryRun in EvictionPolicy {name})"
            )
            self.events.event(
                ObjectRef.for_pod(victim),
                NORMAL,
                REASON_DRY_RUN,
                "Preempting",
                note,
                related=ObjectRef.for_pod(job.preemptor),
            )
        log.info(
            "dry run: would evict",
            extra={"preemptor": job.preemptor.key, "node": job.node, "victims": [v.key for v in job.victims]},
        )
