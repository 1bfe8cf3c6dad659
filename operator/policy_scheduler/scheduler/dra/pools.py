"""GatherPools (structured/internal/stable/pools_stable.go) for the slices one node can see."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from policy_scheduler.scheduler.dra.model import ResourceSlice


@dataclass(slots=True)
class Pool:
    driver: str
    pool: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.pool}"


def gather_pools(visible: Iterable[ResourceSlice], all_slices: Sequence[ResourceSlice]) -> list[Pool]:
    """Pools of the visible slices at their newest generation; sorted by id (Go's map order is random)."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in visible:
        key = (s.driver, s.pool.name)
        pool = pools.get(key)
        if pool is None:
            pools[key] = Pool(s.driver, s.pool.name, [s])
            continue
        current = pool.slices[0].pool.generation
        if s.pool.generation < current:
            continue
        if s.pool.generation > current:
            pool.slices = []
        pool.slices.append(s)
    result: list[Pool] = []
    for key in sorted(pools):
        pool = pools[key]
        head = pool.slices[0].pool
        complete = len(pool.slices) == head.resource_slice_count
        if not complete:
            obsolete, count = _slices_in_pool(all_slices, pool, head.generation)
            if obsolete:
                continue
            complete = count == head.resource_slice_count
        pool.incomplete = not complete
        pool.invalid, pool.invalid_reason = _invalid(pool)
        result.append(pool)
    return result


def _slices_in_pool(all_slices: Sequence[ResourceSlice], pool: Pool, generation: int) -> tuple[bool, int]:
    count = 0
    for s in all_slices:
        if s.driver != pool.driver or s.pool.name != pool.pool:
            continue
        if s.pool.generation == generation:
            count += 1
        elif s.pool.generation > generation:
            return True, 0
    return False, count


def _invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for s in pool.slices:
        for d in s.devices:
            if d.name in seen:
                return True, f"duplicate device name {d.name}"
            seen.add(d.name)
    return False, ""
