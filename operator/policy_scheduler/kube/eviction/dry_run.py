"""Dry runs: report a preemptor's decision once (for a while), not at every retry.

Clearing the nomination requeues the preemptor, which then preempts again with the same
decision; only a new decision, or the same one after `memory` seconds, is reported again.
"""

from __future__ import annotations

from collections.abc import Callable

from policy_scheduler.kube.eviction.job import Job

Decision = tuple[str, frozenset[str]]  # (node, victim uids)


class DryRunMemory:
    def __init__(self, memory: float, clock: Callable[[], float]) -> None:
        self.memory = memory
        self.clock = clock
        self._seen: dict[str, tuple[Decision, float]] = {}  # preemptor uid -> decision, since

    def is_new(self, job: Job) -> bool:
        """Remember the job's decision; True when it is to be reported."""
        decision = (job.node, frozenset(v.uid for v in job.victims))
        now = self.clock()
        self._seen = {k: v for k, v in self._seen.items() if now - v[1] < self.memory}
        seen = self._seen.get(job.preemptor.uid)
        new = seen is None or seen[0] != decision
        self._seen[job.preemptor.uid] = (decision, now if new or seen is None else seen[1])
        return new

    def forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
