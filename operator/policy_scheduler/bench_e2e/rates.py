"""Throughput from bind timestamps: one-second samples, their mean and percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Throughput:
    samples: list[int]  # binds per full second, from the first bind on
    average: float
    p50: float
    p90: float
    p99: float


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of `values`; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return float(ordered[rank - 1])


def one_second_samples(times: Sequence[float]) -> list[int]:
    """Binds in each full second after the first bind (the last, partial second is left out)."""
    if not times:
        return []
    start = min(times)
    full = int(max(times) - start)
    counts = [0] * full
    for t in times:
        second = int(t - start)
        if second < full:
            counts[second] += 1
    return counts


def throughput(times: Sequence[float]) -> Throughput:
    """As scheduler_perf reports SchedulingThroughput: the mean of the 1 s samples, except the
    first (it holds the start-up burst or lull). A run too short for two full seconds falls back
    to binds over the whole span."""
    samples = one_second_samples(times)
    measured = [float(s) for s in samples[1:]]
    if not measured:
        span = max(times) - min(times) if len(times) > 1 else 0.0
        rate = (len(times) - 1) / span if span > 0 else float(len(times))
        measured = [rate]
    return Throughput(
        samples,
        sum(measured) / len(measured),
        percentile(measured, 50),
        percentile(measured, 90),
        percentile(measured, 99),
    )


def slice_rates(times: Sequence[float], size: int) -> list[float]:
    """Pods/s of each consecutive slice of `size` binds (the last may be shorter), each from
    the previous slice's last bind (the first: from the first bind) to its own last bind:
    whether the cost per pod stays flat as the cluster fills."""
    ordered = sorted(times)
    rates: list[float] = []
    start = 0
    while start < len(ordered):
        end = min(start + size, len(ordered))
        begin = ordered[start - 1] if start else ordered[0]
        binds = end - start if start else end - 1  # the first bind only starts the clock
        span = ordered[end - 1] - begin
        if binds > 0 and span > 0:
            rates.append(binds / span)
        start = end
    return rates
