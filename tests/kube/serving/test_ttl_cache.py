"""The caches behind delegated authentication and authorization."""

from __future__ import annotations

from policy_scheduler.kube.serving.ttl_cache import TtlCache
from tests.fakeclock import FakeClock


def test_an_entry_lives_its_ttl_and_no_longer(fake_clock: FakeClock) -> None:
    cache: TtlCache[str, int] = TtlCache(10, fake_clock)
    cache.put("a", 1, ttl=10.0)
    fake_clock.advance(9.9)
    assert cache.get("a") == (True, 1)
    fake_clock.advance(0.1)
    assert cache.get("a") == (False, None)
    assert len(cache) == 0


def test_a_cached_none_is_found_and_a_zero_ttl_is_not_kept(fake_clock: FakeClock) -> None:
    cache: TtlCache[str, int | None] = TtlCache(10, fake_clock)
    cache.put("refused", None, ttl=5.0)
    cache.put("never", 1, ttl=0.0)
    assert cache.get("refused") == (True, None)
    assert cache.get("never") == (False, None)


def test_beyond_its_cap_the_oldest_put_goes_first(fake_clock: FakeClock) -> None:
    cache: TtlCache[int, int] = TtlCache(3, fake_clock)
    for key in range(3):
        cache.put(key, key, ttl=60.0)
    cache.put(0, 0, ttl=60.0)  # put again: now the newest
    cache.put(3, 3, ttl=60.0)
    assert [cache.get(key)[0] for key in range(4)] == [True, False, True, True]
    assert len(cache) == 3
