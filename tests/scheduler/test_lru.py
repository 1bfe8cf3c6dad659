"""BoundedLru: the newest `cap` puts survive; a read does not refresh an entry."""

from __future__ import annotations

from policy_scheduler.scheduler.lru import BoundedLru


def test_the_oldest_put_goes_first_and_a_put_refreshes() -> None:
    lru: BoundedLru[str, int] = BoundedLru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    lru.put("a", 3)  # refreshed: "b" is now the oldest
    lru.put("c", 4)
    assert [lru.get(k) for k in ("a", "b", "c")] == [3, None, 4]
    assert len(lru) == 2
    assert list(lru.values()) == [3, 4]


def test_a_read_does_not_refresh_and_pop_forgets() -> None:
    lru: BoundedLru[str, int] = BoundedLru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1
    lru.put("c", 3)  # "a" was read, not put: it is still the oldest
    assert lru.get("a") is None
    assert lru.pop("b") == 2
    assert lru.pop("b") is None
    assert list(lru.values()) == [3]
