"""DynamicResources with extended resources backed by DRA: the "extended-resource-*" cases of
dynamicresources_test.go (v1.37.2) at the plugin's points, and whole cycles through the Engine."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.dra.extended import (
    DEVICE_CLASS_PREFIX,
    IN_MEMORY_CLAIM_NAME,
    ContainerExtendedResourceRequest,
    ExtendedResourceClaimStatus,
)
from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceRequestAllocationResult,
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.services import (
    ClaimWriteError,
    DraServices,
    StoreClaimWriter,
    generated_name,
)
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Container, Node, NodeSelectorTerm, Pod, Requirement
from policy_scheduler.scheduler.plugins.dynamicresources import DynamicResources
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

from .test_dynamicresources import Hooks, WatchingBinder

NODE = "worker"
DRIVER = "some-driver"
CLASS = "my-resource-class"
GPU = "example.com/gpu"
GPU2 = "example.com/gpu2"
IMPLICIT = DEVICE_CLASS_PREFIX + CLASS
POD = "my-pod"
POD_UID = "1234"
# The name the API server would give the claim PreBind creates (the store writer's stand-in).
CREATED = generated_name("my-pod-extended-resources-", f"default/{POD}/{POD_UID}")


def slice_with(n: int, node: str = NODE) -> ResourceSlice:
    devices = tuple(Device(f"instance-{i}") for i in range(1, n + 1))
    return ResourceSlice(f"{node}-slice", DRIVER, ResourcePool(node), devices, node_name=node)


def ext_class(name: str = CLASS, resource: str | None = GPU) -> DeviceClass:
    return DeviceClass(name, (f'device.driver == "{DRIVER}"',), extended_resource_name=resource)


def pod_with(*containers: dict[str, int], name: str = POD, uid: str = POD_UID) -> Pod:
    return Pod(
        name,
        uid=uid,
        containers=tuple(Container(f"con{i}", requests=r) for i, r in enumerate(containers)),
    )


def pinned(node: str) -> tuple[NodeSelectorTerm, ...]:
    return (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (node,)),)),)


def created_claim(*requests: DeviceRequest, node: str = NODE) -> ResourceClaim:
    """extendedResourceClaim: what a previous cycle created (named, annotated, owned, allocated)."""
    results = tuple(DeviceRequestAllocationResult(r.name, DRIVER, node, "instance-1") for r in requests)
    return ResourceClaim(
        "my-pod-extended-resources-0",
        uid="claim-uid",
        requests=requests,
        allocation=AllocationResult(results, pinned(node)),
        owner_pod_uid=POD_UID,
        extended_resource=True,
        owner_pod_name=POD,
    )


def request(name: str, count: int = 1, cls: str = CLASS) -> DeviceRequest:
    return DeviceRequest(name, ExactDeviceRequest(cls, count=count))


class FlakyWriter(StoreClaimWriter):
    """The store as the cluster, with the API failures upstream's table injects."""

    def __init__(self, store: DraStore, *, fail_create: bool = False, fail_patch: bool = False) -> None:
        super().__init__(store)
        self.fail_create, self.fail_patch = fail_create, fail_patch
        self.deleted: list[str] = []

    async def create_extended_claim(self, claim: ResourceClaim, pod: Pod) -> ResourceClaim:
        if self.fail_create:
            raise ClaimWriteError("create claim for extended resources default/: claim creation errors")
        return await super().create_extended_claim(claim, pod)

    async def set_extended_claim_status(self, pod: Pod, status: ExtendedResourceClaimStatus) -> None:
        if self.fail_patch:
            raise ClaimWriteError(f"update pod default/{pod.name} ExtendedResourceClaimStatus: patch error")
        await super().set_extended_claim_status(pod, status)

    def delete_claim(self, claim: ResourceClaim) -> None:
        self.deleted.append(claim.name)
        super().delete_claim(claim)


class World:
    def __init__(
        self,
        nodes: list[Node] | None = None,
        version: KubernetesVersion = V1_37,
        fail_create: bool = False,
        fail_patch: bool = False,
    ) -> None:
        self.store = DraStore()
        self.writer = FlakyWriter(self.store, fail_create=fail_create, fail_patch=fail_patch)
        self.hooks, self.binder = Hooks(), WatchingBinder()
        services = ClusterServices(dra=DraServices(self.store, compile_selector, self.writer))
        self.engine = Engine(hooks=self.hooks, binder=self.binder, seed=7, services=services)
        self.binder.engine = self.engine
        profile = resolve_profile(
            ProfileConfig(scheduler_name="default-scheduler"),
            implemented_plugin_names(),
            features=Features(version),
        )
        self.engine.set_profiles((profile,))
        for node in nodes if nodes is not None else [worker()]:
            self.engine.node_added(node)

    def plugin(self) -> DynamicResources:
        fw = self.engine.frameworks["default-scheduler"]
        return next(p for p in fw.plugins.values() if isinstance(p, DynamicResources))

    def run(self) -> None:
        async def loop() -> None:
            while self.engine.schedule_next():
                await self.engine.scheduler.drain_binding()
            await self.engine.scheduler.drain_binding()

        asyncio.run(loop())

    def extended_claims(self) -> list[ResourceClaim]:
        return [c for c in self.store.claims() if c.extended_resource]

    def failure(self, pod: str) -> str:
        return next(m for p, _, m in reversed(self.hooks.failures) if p == pod)


def worker(name: str = NODE, **extended: int) -> Node:
    allocatable = {
        "cpu": 4000,
        "memory": 1 << 34,
        "pods": 110,
        **{k.replace("__", "/"): v for k, v in extended.items()},
    }
    return Node(name, labels={"kubernetes.io/hostname": name}, allocatable=allocatable)


def gpu_node(name: str = NODE, gpus: int = 0) -> Node:
    node = worker(name)
    return dataclasses.replace(node, allocatable={**node.allocatable, GPU: gpus})


# ---- the table (dynamicresources_test.go) ----------------------------------------------------------


@dataclass
class Want:
    prefilter: Code = Code.SUCCESS
    filter: Status | None = None  # on NODE; None: passes
    postfilter: Status | None = None
    in_flight: tuple[DeviceRequest, ...] | None = None  # requests of the claim Reserve signals
    created: tuple[DeviceRequest, ...] | None = None  # requests of the claim PreBind creates
    prebind: Status | None = None  # None: success
    deleted: list[str] = field(default_factory=list)  # claims deleted (PostFilter or Unreserve)


@dataclass
class Case:
    name: str
    pod: Pod
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    want: Want
    node: Node = field(default_factory=worker)
    claims: list[ResourceClaim] = field(default_factory=list)
    fail_create: bool = False
    fail_patch: bool = False
    unreserve_after_prebind: bool = False


ONE_GPU = pod_with({GPU: 1})
CASES = [
    Case("empty-with-extended-resources-enabled", Pod("foo"), [], [], Want(prefilter=Code.SKIP)),
    Case(
        "extended-resource-name-with-node-resource",
        ONE_GPU,
        [ext_class()],
        [],
        Want(),  # the device plugin serves it: nothing to allocate, nothing created
        node=gpu_node(gpus=1),
    ),
    Case(
        "extended-resource-one-device-plugin-one-dra",
        pod_with({GPU: 1, GPU2: 1}),
        [ext_class(), ext_class(CLASS + "2", GPU2)],
        [slice_with(1)],
        Want(
            in_flight=(request("container-0-request-1", cls=CLASS + "2"),),
            created=(request("container-0-request-1", cls=CLASS + "2"),),
        ),
        node=gpu_node(gpus=1),
    ),
    Case(
        "extended-resource-name-with-zero-allocatable",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(in_flight=(request("container-0-request-0"),), created=(request("container-0-request-0"),)),
        node=gpu_node(gpus=0),
    ),
    Case(
        "non-DRA-extended-resource-name-with-zero-allocatable",
        ONE_GPU,
        [ext_class(resource=None)],
        [slice_with(1)],
        Want(prefilter=Code.SKIP),
        node=gpu_node(gpus=0),
    ),
    Case(
        "extended-resource-name-no-resource",
        ONE_GPU,
        [ext_class()],
        [],
        Want(
            filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("cannot allocate all claims",)),
            postfilter=Status(Code.UNSCHEDULABLE),
        ),
    ),
    Case(
        "extended-resource-name-with-resources",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(in_flight=(request("container-0-request-0"),), created=(request("container-0-request-0"),)),
    ),
    Case(
        "implicit-extended-resource-name-with-resources",
        pod_with({IMPLICIT: 1, GPU: 2}),
        [ext_class()],
        [slice_with(4)],
        Want(
            in_flight=(request("container-0-request-0"), request("container-0-request-1", 2)),
            created=(request("container-0-request-0"), request("container-0-request-1", 2)),
        ),
    ),
    Case(
        "implicit-extended-resource-name-two-containers-with-resources",
        pod_with({IMPLICIT: 1}, {GPU: 2}),
        [ext_class()],
        [slice_with(4)],
        Want(
            in_flight=(request("container-0-request-0"), request("container-1-request-0", 2)),
            created=(request("container-0-request-0"), request("container-1-request-0", 2)),
        ),
    ),
    Case(
        "extended-resource-name-with-resources-fail-patch",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(
            in_flight=(request("container-0-request-0"),),
            created=(request("container-0-request-0"),),
            prebind=Status(
                Code.ERROR, ("update pod default/my-pod ExtendedResourceClaimStatus: patch error",)
            ),
            deleted=[CREATED],  # by the Unreserve that follows
        ),
        fail_patch=True,
    ),
    Case(
        "extended-resource-name-with-resources-has-claim",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(
            filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("cannot schedule extended resource claim",)),
            postfilter=Status(Code.UNSCHEDULABLE, ("deletion of ResourceClaim completed",)),
            deleted=["my-pod-extended-resources-0"],
        ),
        claims=[created_claim(request("container-0-request-0"))],
    ),
    Case(
        "extended-resource-name-with-resources-delete-claim",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(
            filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("cannot schedule extended resource claim",)),
            postfilter=Status(Code.UNSCHEDULABLE, ("deletion of ResourceClaim completed",)),
            deleted=["my-pod-extended-resources-0"],
        ),
        claims=[created_claim(request("container-0-request-0"), node="worker-2")],
    ),
    Case(
        "extended-resource-name-bind-failure",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(
            in_flight=(request("container-0-request-0"),),
            created=(request("container-0-request-0"),),
            deleted=[CREATED],
        ),
        unreserve_after_prebind=True,
    ),
    Case(
        "extended-resource-name-claim-creation-failure",
        ONE_GPU,
        [ext_class()],
        [slice_with(1)],
        Want(
            in_flight=(request("container-0-request-0"),),
            prebind=Status(
                Code.ERROR, ("create claim for extended resources default/: claim creation errors",)
            ),
        ),
        fail_create=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plugin_points(case: Case) -> None:
    w = World([case.node], fail_create=case.fail_create, fail_patch=case.fail_patch)
    for c in case.classes:
        w.store.upsert_class(c)
    for sl in case.slices:
        w.store.upsert_slice(sl)
    for claim in case.claims:
        w.store.upsert_claim(claim)
    pl, state, pod, want = w.plugin(), CycleState(), case.pod, case.want
    _, status = pl.pre_filter(state, pod)
    assert status.code == want.prefilter
    if want.prefilter == Code.SKIP:
        return
    result = pl.filter(state, pod, np.arange(1, dtype=np.intp))
    got = result.status_of(0)
    if want.filter is not None:
        assert (got.code, got.reasons) == (want.filter.code, want.filter.reasons)
        _, post = pl.post_filter(state, pod, None)  # type: ignore[arg-type]
        assert want.postfilter is not None
        assert (post.code, post.reasons) == (want.postfilter.code, want.postfilter.reasons)
        assert w.writer.deleted == want.deleted
        if want.deleted:
            assert w.store.claim("default", want.deleted[0]) is None
        return
    assert got.is_success
    assert pl.reserve(state, pod, NODE).is_success
    in_flight = [c for c in w.store._in_flight.values() if c.extended_resource]
    if want.in_flight is None:
        assert in_flight == []
    else:
        assert [c.requests for c in in_flight] == [want.in_flight]
        assert in_flight[0].name == IN_MEMORY_CLAIM_NAME
    prebind = asyncio.run(pl.pre_bind(state, pod, NODE))
    if want.prebind is None:
        assert prebind.is_success, prebind
    else:
        assert (prebind.code, prebind.reasons) == (want.prebind.code, want.prebind.reasons)
    created = w.extended_claims()
    if want.created is None:
        assert created == []
        assert w.writer.extended_claim_statuses == {}
    else:
        (claim,) = created
        assert claim.requests == want.created
        assert claim.owner_pod_uid == POD_UID
        assert claim.owner_pod_name == POD
        assert claim.allocation is not None
        assert claim.is_reserved_for(POD_UID)
        assert claim.allocation.node_selector == pinned(NODE)
        assert not w.store.has_pending_allocation(claim.uid)
        if want.prebind is None:
            recorded = w.writer.extended_claim_statuses["default/my-pod"]
            assert recorded.resource_claim_name == claim.name
            assert {m.request_name for m in recorded.request_mappings} == {r.name for r in want.created}
    if want.prebind is not None or case.unreserve_after_prebind:
        pl.unreserve(state, pod, NODE)
        assert w.writer.deleted == want.deleted
        assert w.extended_claims() == []
        assert not w.store._in_flight


def test_a_claim_already_created_by_an_earlier_cycle_is_found_by_annotation_and_owner() -> None:
    w = World()
    w.store.upsert_class(ext_class())
    other_pod = dataclasses.replace(created_claim(request("r")), owner_pod_uid="other")
    not_annotated = dataclasses.replace(created_claim(request("r")), name="x", extended_resource=False)
    w.store.upsert_claim(other_pod)
    w.store.upsert_claim(not_annotated)
    assert w.store.extended_resource_claim(ONE_GPU) is None
    mine = dataclasses.replace(created_claim(request("r")), name="mine")
    w.store.upsert_claim(mine)
    assert w.store.extended_resource_claim(ONE_GPU) == mine


# ---- whole cycles --------------------------------------------------------------------------------


def test_pod_is_placed_where_devices_are_and_its_claim_and_status_are_written() -> None:
    w = World([worker("n0"), worker("n1")])
    w.store.upsert_class(ext_class())
    w.store.upsert_slice(slice_with(2, node="n1"))
    w.engine.pod_added(pod_with({GPU: 1}, name="a", uid="a"))
    w.engine.pod_added(pod_with({GPU: 1}, name="b", uid="b"))
    w.engine.pod_added(pod_with({GPU: 1}, name="c", uid="c"))
    w.run()
    assert w.hooks.scheduled_on == {"a": "n1", "b": "n1"}
    claims = {c.owner_pod_name: c for c in w.extended_claims()}
    assert set(claims) == {"a", "b"}
    devices = [r.device for c in claims.values() for r in (c.allocation.results if c.allocation else ())]
    assert sorted(devices) == ["instance-1", "instance-2"]  # never the same device twice
    status = w.writer.extended_claim_statuses["default/a"]
    assert status == ExtendedResourceClaimStatus(
        claims["a"].name, (ContainerExtendedResourceRequest("con0", GPU, "container-0-request-0"),)
    )
    # More than exist: c waits with upstream's reason (no node lists the resource, n0 has no devices).
    assert (
        w.failure("c")
        == "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_devices_of_a_claim_in_flight_are_not_handed_out_again() -> None:
    # Binding is not drained between cycles: the second pod sees the first one's Reserve.
    w = World([worker("n0")])
    w.store.upsert_class(ext_class())
    w.store.upsert_slice(slice_with(1, node="n0"))
    w.engine.pod_added(pod_with({GPU: 1}, name="a", uid="a"))
    w.engine.pod_added(pod_with({GPU: 1}, name="b", uid="b"))

    async def loop() -> None:
        while w.engine.schedule_next():
            pass
        await w.engine.scheduler.drain_binding()

    asyncio.run(loop())
    assert list(w.hooks.scheduled_on) == ["a"]
    assert "cannot allocate all claims" in w.failure("b")


def test_user_claims_and_extended_resources_are_allocated_together() -> None:
    w = World([worker("n0")])
    w.store.upsert_class(ext_class())
    w.store.upsert_slice(slice_with(2, node="n0"))
    user = ResourceClaim("mine", uid="mine", requests=(request("gpu"),))
    w.store.upsert_claim(user)
    from policy_scheduler.scheduler.storage.volumes import PodResourceClaim

    p = dataclasses.replace(
        pod_with({GPU: 1}, name="p", uid="p"),
        resource_claims=(PodResourceClaim("gpu", resource_claim_name="mine"),),
    )
    w.engine.pod_added(p)
    w.run()
    assert w.hooks.scheduled_on == {"p": "n0"}
    mine = w.store.claim("default", "mine")
    (ext,) = w.extended_claims()
    assert mine is not None
    assert mine.allocation is not None
    assert ext.allocation is not None
    assert {r.device for r in mine.allocation.results} | {r.device for r in ext.allocation.results} == {
        "instance-1",
        "instance-2",
    }


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37])
def test_without_the_gate_a_pod_asking_for_an_unlisted_resource_waits_on_fit(
    version: KubernetesVersion,
) -> None:
    w = World([worker("n0")], version=version)
    w.store.upsert_class(ext_class())
    w.store.upsert_slice(slice_with(1, node="n0"))
    w.engine.pod_added(pod_with({GPU: 1}, name="a", uid="a"))
    w.run()
    if version == V1_35:  # DRAExtendedResource is off: NodeResourcesFit counts the resource
        assert w.hooks.scheduled_on == {}
        assert w.failure("a").startswith("0/1 nodes are available: 1 Insufficient example.com/gpu.")
        assert w.extended_claims() == []
    else:
        assert w.hooks.scheduled_on == {"a": "n0"}


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37])
def test_claim_deletion_requeues_from_v1_37(version: KubernetesVersion) -> None:
    from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource

    pl = World(version=version).plugin()
    [claims] = [e for e in pl.events_to_register() if e.event.resource == Resource.RESOURCE_CLAIM]
    assert bool(claims.event.action & Action.DELETE) == (version == V1_37)
    allocated = created_claim(request("r"))
    assert pl._claim_hint(ONE_GPU, allocated, None) == QueueingHint.QUEUE
    unallocated = dataclasses.replace(allocated, allocation=None)
    assert pl._claim_hint(ONE_GPU, unallocated, None) == QueueingHint.SKIP


def test_nodes_seeing_the_same_slices_get_the_claim_shaped_for_each() -> None:
    # n0 lists the resource (its device plugin serves it), n1 does not: both see one
    # network-attached device, so they share a slice group but not the claim's shape.
    w = World([gpu_node("n0", gpus=1), worker("n1")])
    w.store.upsert_class(ext_class())
    shared = ResourceSlice("net", DRIVER, ResourcePool("net"), (Device("instance-1"),), all_nodes=True)
    w.store.upsert_slice(shared)
    pl, state, pod = w.plugin(), CycleState(), ONE_GPU
    assert pl.pre_filter(state, pod)[1].is_success
    assert pl.filter(state, pod, np.arange(2, dtype=np.intp)).passed.tolist() == [True, True]
    assert pl.reserve(state, pod, "n0").is_success  # nothing for DRA to do there
    assert not [c for c in w.store._in_flight.values() if c.extended_resource]
    assert pl.reserve(state, pod, "n1").is_success
    (in_flight,) = [c for c in w.store._in_flight.values() if c.extended_resource]
    assert in_flight.requests == (request("container-0-request-0"),)
    assert in_flight.allocation is not None
    assert [r.device for r in in_flight.allocation.results] == ["instance-1"]
    assert in_flight.allocation.node_selector is None  # a network-attached device pins no node


@settings(max_examples=25, deadline=None)
@given(
    devices=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    asks=st.lists(st.integers(1, 3), min_size=1, max_size=6),
)
def test_no_device_is_handed_out_twice_and_every_placement_is_backed(
    devices: list[int], asks: list[int]
) -> None:
    """Whatever the devices per node and the pods' asks: a bound pod's claim holds exactly its
    ask, on its node, no device twice; a pod left waiting has no claim."""
    nodes = [worker(f"n{i}") for i in range(len(devices))]
    w = World(nodes)
    w.store.upsert_class(ext_class())
    for i, n in enumerate(devices):
        if n:
            w.store.upsert_slice(slice_with(n, node=f"n{i}"))
    for k, ask in enumerate(asks):
        w.engine.pod_added(pod_with({GPU: ask}, name=f"p{k}", uid=f"p{k}"))
    w.run()
    claims = {c.owner_pod_name: c for c in w.extended_claims()}
    assert set(claims) == set(w.hooks.scheduled_on)
    taken: list[tuple[str, str]] = []
    for name, node in w.hooks.scheduled_on.items():
        claim = claims[name]
        assert claim.allocation is not None
        assert claim.is_reserved_for(name)
        assert len(claim.allocation.results) == asks[int(name[1:])]
        assert {r.pool for r in claim.allocation.results} == {node}
        taken += [(r.pool, r.device) for r in claim.allocation.results]
        assert w.writer.extended_claim_statuses[f"default/{name}"].resource_claim_name == claim.name
    assert len(taken) == len(set(taken))
    # A pod left waiting could not have fit in what the others left on any node.
    free = {f"n{i}": n for i, n in enumerate(devices)}
    for pool, _ in taken:
        free[pool] -= 1
    for k, ask in enumerate(asks):
        if f"p{k}" not in w.hooks.scheduled_on:
            assert ask > max(free.values())
