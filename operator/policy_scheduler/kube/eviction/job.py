"""One preemptor's eviction job, and how it can end."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from policy_scheduler.policy.eviction_settings import EvictionSettings
from policy_scheduler.scheduler.model import Pod


class End(enum.Enum):
    DONE = "done"  # every victim is evicted or gone: the preemptor waits for them
    ABANDONED = "abandoned"  # this candidate failed: clear the nomination, retry later
    STALE = "stale"  # the preemptor is gone or bound, or we lost the lease: nothing to do


@dataclass(slots=True)
class Job:
    preemptor: Pod
    victims: tuple[Pod, ...]
    node: str
    scheduler_name: str
    settings: EvictionSettings
    started: float = field(default_factory=time.monotonic)
    newer: Job | None = None  # a dry run's preemptor preempted again while this job ran
    retry_after: float | None = None  # the API asked us to wait this long before trying again

    @property
    def dry_run(self) -> bool:
        return self.settings.config.dry_run
