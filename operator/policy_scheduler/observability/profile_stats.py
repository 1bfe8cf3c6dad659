"""Per-profile scheduling health for CR status: counts, pending reasons, latency percentiles."""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

LATENCY_WINDOW = 1000  # recent attempts kept for p50/p99
TOP_REASONS = 5


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def reason_key(message: str) -> str:
    """Group FitError messages by their reasons, not by node counts ("Insufficient cpu")."""
    _, _, rest = message.partition(": ")
    reasons = [part.split(" ", 1)[-1].rstrip(".") for part in rest.split(", ") if part]
    return ", ".join(reasons) if reasons else message


@dataclass(slots=True)
class ProfileStats:
    scheduled: int = 0
    failed_attempts: int = 0
    preemptions: int = 0
    last_scheduled: float | None = None
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    # pod key -> reason of its last failure, while it is pending
    pending: dict[str, str] = field(default_factory=dict)
    dirty: bool = True

    def record_scheduled(self, pod_key: str) -> None:
        self.scheduled += 1
        self.last_scheduled = time.time()
        self.pending.pop(pod_key, None)
        self.dirty = True

    def record_latency(self, seconds: float) -> None:
        self.latencies.append(seconds)

    def record_failure(self, pod_key: str, message: str) -> None:
        self.failed_attempts += 1
        self.pending[pod_key] = reason_key(message)
        self.dirty = True

    def forget(self, pod_key: str) -> None:
        if self.pending.pop(pod_key, None) is not None:
            self.dirty = True

    def top_reasons(self) -> list[tuple[str, int]]:
        return Counter(self.pending.values()).most_common(TOP_REASONS)

    def latency(self, q: float) -> float:
        return _percentile(sorted(self.latencies), q)
