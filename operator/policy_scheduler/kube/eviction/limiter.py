"""One EvictionPolicy's rate limits: a total bucket, optional per-namespace and per-node
buckets, and a cap on evicted pods not yet gone. A grant takes a token from every bucket, or
from none."""

from __future__ import annotations

import math

from policy_scheduler.kube.ratelimit import TokenBucket
from policy_scheduler.policy.eviction_settings import RateLimits


def _per_minute(per_minute: int, burst: int) -> TokenBucket:
    return TokenBucket(per_minute / 60.0, burst)


class Limiter:
    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits
        self.total = _per_minute(limits.evictions_per_minute, limits.burst)
        self.namespaces: dict[str, TokenBucket] = {}
        self.nodes: dict[str, TokenBucket] = {}
        self.in_flight: dict[str, float] = {}  # victim uid -> when it stops counting

    def _scoped(self, buckets: dict[str, TokenBucket], key: str, per_minute: int | None) -> list[TokenBucket]:
        if per_minute is None:
            return []
        bucket = buckets.get(key)
        if bucket is None:
            bucket = buckets[key] = _per_minute(per_minute, min(self.limits.burst, per_minute))
        return [bucket]

    def _buckets(self, namespace: str, node: str) -> list[TokenBucket]:
        return [
            self.total,
            *self._scoped(self.namespaces, namespace, self.limits.per_namespace_per_minute),
            *self._scoped(self.nodes, node, self.limits.per_node_per_minute),
        ]

    def try_acquire(self, namespace: str, node: str, now: float) -> float:
        """0.0 when granted; else seconds to wait (math.inf: until an evicted pod is gone)."""
        self.in_flight = {uid: until for uid, until in self.in_flight.items() if until > now}
        if len(self.in_flight) >= self.limits.max_in_flight:
            return math.inf
        buckets = self._buckets(namespace, node)
        wait = max(bucket.delay(now) for bucket in buckets)
        if wait > 0:
            return wait
        for bucket in buckets:
            bucket.take()
        return 0.0

    def give_back(self, namespace: str, node: str) -> None:
        """The grant was not used: nothing was evicted (a budget refused it, the pod was gone)."""
        for bucket in self._buckets(namespace, node):
            bucket.give_back()

    def evicted(self, uid: str, until: float) -> None:
        self.in_flight[uid] = until

    def gone(self, uid: str) -> bool:
        return self.in_flight.pop(uid, None) is not None


class Limiters:
    """The limiter of each policy, kept across policy updates (evicted pods still count)."""

    def __init__(self) -> None:
        self._by_policy: dict[str | None, Limiter] = {}

    def get(self, policy: str | None, limits: RateLimits | None) -> Limiter | None:
        if limits is None:
            return None
        limiter = self._by_policy.get(policy)
        if limiter is None or limiter.limits != limits:
            fresh = Limiter(limits)
            if limiter is not None:
                fresh.in_flight = limiter.in_flight  # evicted pods still count under new limits
            limiter = self._by_policy[policy] = fresh
        return limiter

    def gone(self, uid: str) -> bool:
        """An evicted pod went away: True when that freed an in-flight slot."""
        return any([limiter.gone(uid) for limiter in self._by_policy.values()])
