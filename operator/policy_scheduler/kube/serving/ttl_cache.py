"""A bounded map whose entries expire: the delegating authenticator's and authorizer's caches."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """Entries live `ttl` seconds from when they were put (each put may give its own); beyond
    `cap` entries the oldest put goes first, so a flood of distinct keys cannot grow it."""

    def __init__(self, cap: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self.clock = clock
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._items[key] = (self.clock() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.cap:
            self._items.popitem(last=False)

    def get(self, key: K) -> tuple[bool, V | None]:
        """(found, value): found is False for a missing or expired entry."""
        entry = self._items.get(key)
        if entry is None:
            return False, None
        expires, value = entry
        if self.clock() >= expires:
            del self._items[key]
            return False, None
        return True, value

    def __len__(self) -> int:
        return len(self._items)
