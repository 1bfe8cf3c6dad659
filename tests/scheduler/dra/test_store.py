"""DraStore: the devices allocations hold, kept as claims change, equal a walk over every claim."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    DeviceId,
    DeviceRequestAllocationResult,
    ResourceClaim,
)
from policy_scheduler.scheduler.dra.store import AllocatedState, DraStore

DEVICES = ("d0", "d1")
CLAIMS = ("c0", "c1", "c2")


def _walk(store: DraStore, in_flight: dict[str, ResourceClaim]) -> AllocatedState:
    """foreachAllocatedDevice over every claim and in-flight allocation, as upstream walks them."""
    devices: set[DeviceId] = set()
    shared: set[DeviceId] = set()
    aggregated: dict[DeviceId, dict[str, Decimal]] = {}
    for claim in (*store.claims(), *in_flight.values()):
        if claim.allocation is None:
            continue
        for r in claim.allocation.results:
            if r.admin_access:
                continue
            did = DeviceId(r.driver, r.pool, r.device)
            if r.share_id is None:
                devices.add(did)
                continue
            shared.add(did)
            if r.consumed_capacity is not None:
                total = aggregated.setdefault(did, {})
                for name, value in r.consumed_capacity.items():
                    total[name] = total.get(name, Decimal(0)) + value
    return AllocatedState(frozenset(devices), frozenset(shared), aggregated)


_results = st.builds(
    DeviceRequestAllocationResult,
    request=st.just("req"),
    driver=st.just("drv"),
    pool=st.just("pool"),
    device=st.sampled_from(DEVICES),
    admin_access=st.sampled_from((None, True)),
    share_id=st.sampled_from((None, "share")),
    consumed_capacity=st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(("memory", "cores")), st.integers(0, 4).map(Decimal), max_size=2),
    ),
)
_allocations = st.one_of(
    st.none(), st.lists(_results, max_size=3).map(lambda rs: AllocationResult(tuple(rs)))
)
_steps = st.lists(
    st.tuples(
        st.sampled_from(("upsert", "assume", "delete", "signal", "remove")),
        st.sampled_from(CLAIMS),
        _allocations,
        st.integers(1, 9),
    ),
    max_size=25,
)


def _share(capacity: dict[str, Decimal]) -> AllocationResult:
    return AllocationResult(
        (DeviceRequestAllocationResult("req", "drv", "pool", "d0", share_id="s", consumed_capacity=capacity),)
    )


@settings(max_examples=300, deadline=None)
@given(_steps)
# Two shares of one device, only one consuming memory: when it goes, memory goes too.
@example(
    [
        ("upsert", "c0", _share({"memory": Decimal(1)}), 1),
        ("upsert", "c1", _share({}), 1),
        ("delete", "c0", None, 1),
    ]
)
def test_the_held_devices_follow_every_claim_change(
    steps: list[tuple[str, str, AllocationResult | None, int]],
) -> None:
    store = DraStore()
    in_flight: dict[str, ResourceClaim] = {}
    for action, name, allocation, version in steps:
        claim = ResourceClaim(name, uid=f"uid-{name}", allocation=allocation, resource_version=str(version))
        if action == "upsert":
            store.upsert_claim(claim)
        elif action == "assume":
            store.assume_claim(claim)
        elif action == "delete":
            store.delete_claim("default", name)
        elif action == "signal" and allocation is not None:
            store.signal_pending_allocation(claim)
            in_flight[claim.uid] = claim
        elif action == "remove":
            store.remove_pending_allocation(claim.uid)
            in_flight.pop(claim.uid, None)
        want = _walk(store, in_flight)
        got = store.allocated_state()
        assert got == want
        assert store.allocated_devices() == want.devices | want.shared


def test_an_informer_event_older_than_what_we_wrote_changes_nothing() -> None:
    store = DraStore()
    held = AllocationResult((DeviceRequestAllocationResult("req", "drv", "pool", "d0"),))
    store.assume_claim(ResourceClaim("c", uid="u", allocation=held, resource_version="5"))
    store.upsert_claim(ResourceClaim("c", uid="u", resource_version="4"))
    assert store.allocated_devices() == {DeviceId("drv", "pool", "d0")}
    store.upsert_claim(replace(ResourceClaim("c", uid="u", resource_version="6")))
    assert store.allocated_devices() == frozenset()
