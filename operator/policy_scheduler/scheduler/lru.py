"""A map that keeps its `cap` most recently put entries."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    """Putting a key makes it the newest; beyond `cap` entries the oldest are dropped.
    Reading does not refresh an entry."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._items: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.cap:
            self._items.popitem(last=False)

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def values(self) -> Iterable[V]:
        return self._items.values()

    def __len__(self) -> int:
        return len(self._items)
