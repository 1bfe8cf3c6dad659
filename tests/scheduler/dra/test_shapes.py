"""Node shapes: nodes searched once per shape get the answer a search of their own would give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.dra.allocator import AllocationError, Allocator, Features
from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    Device,
    DeviceClass,
    DeviceConstraint,
    DeviceId,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.pools import node_matcher, slice_targets_node
from policy_scheduler.scheduler.dra.shapes import PoolCache
from policy_scheduler.scheduler.framework.events import Resource
from policy_scheduler.scheduler.model import Node
from tests.scheduler.dra._build import (
    CLASS_A,
    DRIVER_A,
    REGION1,
    all_request,
    claim,
    consumes,
    counter_set,
    counter_slice,
    device,
    device_class,
    i,
    network_slice,
    prioritized,
    request,
    s,
    slice_with_devices,
    sub_request,
)
from tests.scheduler.dra.test_dynamicresources import World, claim_pod, devices_of, gpu_claim, gpus

NODES = tuple(f"node-{k}" for k in range(4))
CLASSES = [device_class(CLASS_A, DRIVER_A)]


def _local(node: str, *devices: Device) -> ResourceSlice:
    return slice_with_devices(f"{node}-slice", node, node, DRIVER_A, *devices)


def _gpus(node: str, models: tuple[str, ...] = ("a", "a", "b")) -> ResourceSlice:
    return _local(node, *(device(f"dev-{k}", model=s(m), numa=i(k % 2)) for k, m in enumerate(models)))


class _Counting:
    """The class lookup, counted: the allocator looks a class up once per request per search."""

    def __init__(self) -> None:
        self.calls = 0
        self.classes = {c.name: c for c in CLASSES}

    def __call__(self, name: str) -> DeviceClass | None:
        self.calls += 1
        return self.classes.get(name)


def _allocator(
    slices: list[ResourceSlice],
    allocated: frozenset[DeviceId],
    lookup: Callable[[str], DeviceClass | None],
    features: Features,
) -> Allocator:
    return Allocator(allocated, lookup, slices, compile_selector, features)


def _visible(slices: list[ResourceSlice], node: Node, features: Features) -> list[ResourceSlice]:
    matches = node_matcher(node)
    return [sl for sl in slices if slice_targets_node(sl, matches, features.partitionable_devices)]


def _answers(
    slices: list[ResourceSlice],
    claims: list[ResourceClaim],
    allocated: frozenset[DeviceId] = frozenset(),
    features: Features | None = None,
) -> tuple[dict[str, list[AllocationResult] | None], dict[str, list[AllocationResult] | None], int]:
    """Per node: the answer of one allocator shared by all nodes (as in a cycle), the answer of
    a fresh allocator per node (a search of its own), and how many searches the shared one ran."""
    features = features or Features()
    lookup = _Counting()
    shared = _allocator(slices, allocated, lookup, features)
    once: dict[str, list[AllocationResult] | None] = {}
    alone: dict[str, list[AllocationResult] | None] = {}
    for name in NODES:
        node = Node(name, labels={"region": REGION1})
        visible = _visible(slices, node, features)
        once[name] = shared.allocate(name, visible, claims, node=node)
        fresh = _allocator(slices, allocated, CLASSES_BY_NAME.get, features)
        alone[name] = fresh.allocate(name, visible, claims, node=node)
    lookups = sum(len(r.first_available) or 1 for c in claims for r in c.requests)
    return once, alone, lookup.calls // lookups


CLASSES_BY_NAME = {c.name: c for c in CLASSES}
ONE = claim("claim-0", request("req-0", CLASS_A, 1))
TWO_SAME_NUMA = claim(
    "claim-0",
    request("req-0", CLASS_A, 2),
    constraints=(DeviceConstraint(match_attribute=f"{DRIVER_A}/numa"),),
)
MODEL_B = claim("claim-0", request("req-0", CLASS_A, 1, 'device.attributes["driver-a"].model == "b"'))
FIRST_AVAILABLE = claim(
    "claim-0",
    prioritized(
        "req-0",
        sub_request("big", CLASS_A, 3),
        sub_request("small", CLASS_A, 1),
    ),
)


@pytest.mark.parametrize(
    ("claims", "allocated", "searches"),
    [
        # Every node the same, nothing in use: one search.
        ([ONE], frozenset(), 1),
        ([TWO_SAME_NUMA], frozenset(), 1),
        ([MODEL_B], frozenset(), 1),
        ([FIRST_AVAILABLE], frozenset(), 1),
        ([ONE, MODEL_B], frozenset(), 1),
        # Devices in use differ: node-0 and node-3 have none in use, the others one each.
        ([ONE], frozenset({DeviceId(DRIVER_A, "node-1", "dev-0"), DeviceId(DRIVER_A, "node-2", "dev-1")}), 3),
        # node-1 and node-2 have the same device in use: one shape.
        ([ONE], frozenset({DeviceId(DRIVER_A, "node-1", "dev-0"), DeviceId(DRIVER_A, "node-2", "dev-0")}), 2),
        # The only "b" in use on node-1: nothing there, and the answer is not re-targeted elsewhere.
        ([MODEL_B], frozenset({DeviceId(DRIVER_A, "node-1", "dev-2")}), 2),
        ([TWO_SAME_NUMA], frozenset({DeviceId(DRIVER_A, "node-2", "dev-0")}), 2),
    ],
)
def test_nodes_of_one_shape_are_searched_once_and_get_their_own_devices(
    claims: list[ResourceClaim], allocated: frozenset[DeviceId], searches: int
) -> None:
    slices = [_gpus(n) for n in NODES]
    once, alone, ran = _answers(slices, claims, allocated)
    assert once == alone
    assert ran == searches
    for name, answer in once.items():
        if answer is None:
            continue
        for result in answer:
            assert {r.pool for r in result.results} == {name}
            assert result.node_selector is not None
            assert result.node_selector[0].match_fields[0].values == (name,)


ALL_B = claim("claim-0", all_request("req-0", CLASS_A, 'device.attributes["driver-a"].model == "b"'))
ADMIN = claim("claim-0", request("req-0", CLASS_A, 1, admin=True))
_CLAIMS = (ONE, TWO_SAME_NUMA, MODEL_B, FIRST_AVAILABLE, ALL_B, ADMIN)
_node_devices = st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 1), st.booleans()), max_size=3)


def _outcome(
    a: Allocator, name: str, slices: list[ResourceSlice], claims: list[ResourceClaim]
) -> list[AllocationResult] | str | None:
    node = Node(name, labels={"region": REGION1})
    try:
        return a.allocate(name, _visible(slices, node, Features()), claims, node=node)
    except AllocationError as e:
        return f"{type(e).__name__}: {e}"


@pytest.fixture(scope="module", autouse=True)
def _cel_ready() -> None:
    """The first CEL compile raises the recursion limit, which hypothesis warns of in a test."""
    compile_selector('device.driver == "x"')


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_node_devices, min_size=len(NODES), max_size=len(NODES)),
    st.lists(st.sampled_from(_CLAIMS), min_size=1, max_size=2, unique=True),
    st.booleans(),
)
def test_searching_once_per_shape_answers_as_searching_every_node(
    nodes: list[list[tuple[str, int, bool]]], picked: list[ResourceClaim], network: bool
) -> None:
    """Random nodes of few device kinds (many share a shape), some devices in use: every node's
    answer, error or none is the one a search of its own gives."""
    slices = [
        _local(n, *(device(f"dev-{k}", model=s(m), numa=i(numa)) for k, (m, numa, _) in enumerate(devs)))
        for n, devs in zip(NODES, nodes, strict=True)
    ]
    if network:
        slices.append(network_slice("net", "net-pool", DRIVER_A, device("net-0", model=s("b"), numa=i(0))))
    allocated = frozenset(
        DeviceId(DRIVER_A, n, f"dev-{k}")
        for n, devs in zip(NODES, nodes, strict=True)
        for k, (_, _, used) in enumerate(devs)
        if used
    )
    claims = [replace(c, name=f"claim-{k}", uid=f"uid-{k}") for k, c in enumerate(picked)]
    shared = Allocator(allocated, CLASSES_BY_NAME.get, slices, compile_selector)
    for name in NODES:
        alone = Allocator(allocated, CLASSES_BY_NAME.get, slices, compile_selector)
        assert _outcome(shared, name, slices, claims) == _outcome(alone, name, slices, claims)


def test_a_device_that_differs_in_anything_but_its_name_makes_another_shape() -> None:
    slices = [_gpus(n) for n in NODES]
    # node-2's "b" is another model: a claim for "b" finds nothing there.
    slices[2] = _gpus("node-2", ("a", "a", "c"))
    # node-3's devices have other names only: same shape as node-0 and node-1.
    renamed = tuple(replace(d, name=f"other-{k}") for k, d in enumerate(slices[3].devices))
    slices[3] = replace(slices[3], devices=renamed)
    once, alone, ran = _answers(slices, [MODEL_B])
    assert once == alone
    assert ran == 2
    assert once["node-2"] is None
    answer = once["node-3"]
    assert answer is not None
    assert answer[0].results[0].device == "other-2"


def test_network_attached_devices_are_the_same_devices_for_every_node() -> None:
    shared = network_slice("net", "net-pool", DRIVER_A, device("net-0", model=s("b")), region=REGION1)
    slices = [_gpus(n, ("a",)) for n in NODES] + [shared]
    once, alone, ran = _answers(slices, [MODEL_B])
    assert once == alone
    assert ran == 1
    for answer in once.values():
        assert answer is not None
        assert [(r.pool, r.device) for r in answer[0].results] == [("net-pool", "net-0")]
        assert answer[0].node_selector is not None
        assert answer[0].node_selector[0].match_expressions[0].key == "region"


def test_nodes_whose_answer_depends_on_more_than_their_devices_are_always_searched() -> None:
    partitionable = Features(partitionable_devices=True)
    # Devices drawing on shared counters: what the pool's other devices consume matters.
    counted = [
        counter_slice(f"{n}-counters", n, n, DRIVER_A, 2, counter_set("set", memory="2Gi")) for n in NODES
    ]
    parts = [
        slice_with_devices(
            f"{n}-parts",
            n,
            n,
            DRIVER_A,
            replace(device("part-0"), consumes_counters=consumes("set", memory="1Gi")),
        )
        for n in NODES
    ]
    parts = [replace(p, pool=ResourcePool(p.pool.name, 1, 2)) for p in parts]
    once, alone, ran = _answers([*counted, *parts], [ONE], features=partitionable)
    assert once == alone
    assert ran == len(NODES)
    # Devices that allow several allocations: each share gets its own id.
    shareable = [_local(n, replace(device("dev-0"), allow_multiple_allocations=True)) for n in NODES]
    once, alone, ran = _answers(shareable, [ONE], features=Features(consumable_capacity=True))
    assert ran == len(NODES)
    assert [a is not None for a in once.values()] == [a is not None for a in alone.values()]


def test_pool_cache_gathers_once_per_set_of_visible_slices() -> None:
    cache = PoolCache(partitionable=False)
    slices = [_gpus(n) for n in NODES]
    first = cache.node_pools([slices[0]], slices)
    assert cache.node_pools([slices[0]], slices) is first
    other = cache.node_pools([slices[1]], slices)
    assert other is not first
    assert other.shape == first.shape
    assert [d.device for d, _, _ in other.devices] == ["dev-0", "dev-1", "dev-2"]
    assert {d.pool for d, _, _ in other.devices} == {"node-1"}


def test_a_pool_cache_kept_across_cycles_gives_each_cycle_its_own_answer() -> None:
    # As the plugin keeps it while the slices stay: the claims and the devices in use change.
    slices = [_gpus(n) for n in NODES]
    cache = PoolCache(partitionable=False)
    used = frozenset({DeviceId(DRIVER_A, n, "dev-0") for n in NODES})
    for claims, allocated, want in (
        ([ONE], frozenset(), ("req-0", "dev-0")),
        ([claim("claim-1", request("other", CLASS_A, 1))], frozenset(), ("other", "dev-0")),
        ([ONE], used, ("req-0", "dev-1")),
        ([MODEL_B], used, ("req-0", "dev-2")),
    ):
        a = Allocator(allocated, CLASSES_BY_NAME.get, slices, compile_selector, pool_cache=cache)
        for name in NODES:
            node = Node(name)
            answer = a.allocate(name, _visible(slices, node, Features()), claims, node=node)
            assert answer is not None
            [result] = answer[0].results
            assert (result.request, result.device, result.pool) == (*want, name)


# ---- through the plugin: answers never outlive the slices or the allocations -------------------


def _filled(nodes: int, devices: int, pods: int) -> World:
    """Nodes with the same devices, and pods with a claim for one device each, scheduled."""
    w = World(nodes=nodes)
    for n in range(nodes):
        w.store.upsert_slice(gpus(f"n{n}", devices))
    for k in range(pods):
        w.store.upsert_claim(gpu_claim(f"c{k}"))
        w.engine.pod_added(claim_pod(f"p{k}", f"c{k}"))
    w.run()
    return w


def test_nodes_of_one_shape_fill_up_one_device_at_a_time() -> None:
    w = _filled(nodes=3, devices=2, pods=7)
    placed = {p: n for p, n in w.hooks.scheduled_on.items()}
    assert len(placed) == 6
    held: set[tuple[str, str]] = set()
    for k in range(7):
        c = w.claim(f"c{k}")
        if c.allocation is None:
            continue
        node = placed[f"p{k}"]
        assert {r.pool for r in c.allocation.results} == {node}
        held.update((node, d) for d in devices_of(c))
    assert len(held) == 6
    assert "cannot allocate all claims" in w.failure(
        next(p for p in (f"p{k}" for k in range(7)) if p not in placed)
    )


def test_a_changed_slice_is_seen_by_the_next_cycle() -> None:
    w = World(nodes=2)
    for n in range(2):
        w.store.upsert_slice(gpus(f"n{n}", 1, model="a100"))
    w.store.upsert_claim(gpu_claim("c", 1, 'device.attributes["gpu.example.com"].model == "h100"'))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {}
    # Same slice name and shape of pool, another model on n1 only.
    changed = gpus("n1", 1, model="h100")
    w.store.upsert_slice(changed)
    w.engine.dra_changed(Resource.RESOURCE_SLICE, None, changed)
    w.run()
    assert w.hooks.scheduled_on == {"p": "n1"}
    assert devices_of(w.claim("c")) == ["gpu-0"]


def test_a_deallocated_device_is_free_again_in_the_next_cycle() -> None:
    w = _filled(nodes=2, devices=1, pods=3)
    assert len(w.hooks.scheduled_on) == 2
    waiting = next(f"p{k}" for k in range(3) if f"p{k}" not in w.hooks.scheduled_on)
    freed = next(k for k in range(3) if f"p{k}" in w.hooks.scheduled_on)
    old = w.claim(f"c{freed}")
    node = w.hooks.scheduled_on[f"p{freed}"]
    released = replace(old, allocation=None, reserved_for=())
    w.store.upsert_claim(released)
    w.engine.dra_changed(Resource.RESOURCE_CLAIM, old, released)
    w.run()
    assert w.hooks.scheduled_on[waiting] == node
