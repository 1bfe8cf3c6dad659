"""DynamicResources through the Engine (cases after dynamicresources_test.go) and at its points."""

from __future__ import annotations

import asyncio
import dataclasses
from decimal import Decimal

import numpy as np
import pytest

from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    ConsumerReference,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    DeviceTaint,
    DeviceTaintRule,
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
)
from policy_scheduler.scheduler.dra.pools import device_targets_node, node_matcher
from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.events import QueueingHint, Resource
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.framework.unserved import DRA as DRA_API
from policy_scheduler.scheduler.model import (
    Container,
    Node,
    NodeSelectorTerm,
    Pod,
    Requirement,
)
from policy_scheduler.scheduler.plugins.dynamicresources import DynamicResources
from policy_scheduler.scheduler.plugins.dynamicresources.plugin import compute_score
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

DRIVER = "gpu.example.com"
GPU_CLASS = "gpu"


def gpus(node: str, n: int, model: str = "a100", memory_gi: int = 80) -> ResourceSlice:
    devices = tuple(
        Device(
            f"gpu-{i}",
            {"model": DeviceAttribute("string", model), "index": DeviceAttribute("int", i)},
            {"memory": Decimal(memory_gi * 2**30)},
        )
        for i in range(n)
    )
    return ResourceSlice(f"{node}-gpus", DRIVER, ResourcePool(node), devices, node_name=node)


def gpu_claim(name: str, count: int = 1, *selectors: str, owner: str = "") -> ResourceClaim:
    request = DeviceRequest("gpu", ExactDeviceRequest(GPU_CLASS, selectors, count=count))
    return ResourceClaim(name, "default", uid=f"uid-{name}", requests=(request,), owner_pod_uid=owner)


def claim_pod(name: str, claim: str, *, template: bool = False, generated: str | None = None) -> Pod:
    ref = (
        PodResourceClaim("gpu", resource_claim_template_name=claim)
        if template
        else PodResourceClaim("gpu", resource_claim_name=claim)
    )
    statuses = (("gpu", generated),) if generated is not None else ()
    return Pod(
        name,
        uid=name,
        containers=(Container("c", requests={"cpu": 100}),),
        resource_claims=(ref,),
        resource_claim_statuses=statuses,
    )


class Hooks:
    def __init__(self) -> None:
        self.failures: list[tuple[str, str, str]] = []
        self.scheduled_on: dict[str, str] = {}

    def scheduled(self, pod: Pod, node_name: str, framework: object) -> None:
        self.scheduled_on[pod.name] = node_name

    def failed(self, pod: Pod, reason: str, message: str, nominated: str | None, framework: object) -> None:
        self.failures.append((pod.name, reason, message))

    def preempting(self, pod: Pod, result: object, framework: object) -> None:
        pass

    def nomination_cleared(self, pod: Pod) -> None:
        pass

    def cycle_finished(self, framework: object, result: str, seconds: float) -> None:
        pass


class WatchingBinder:
    """Binds in memory and feeds the bound pod back, as the API watch would."""

    def __init__(self) -> None:
        self.engine: Engine | None = None

    async def bind(self, pod: Pod, node_name: str) -> None:
        assert self.engine is not None
        pending = self.engine.unassigned[pod.key]
        self.engine.pod_updated(pending, dataclasses.replace(pending, node_name=node_name))


class World:
    def __init__(self, nodes: int = 2, features: Features | None = None) -> None:
        self.store = DraStore()
        self.store.upsert_class(DeviceClass(GPU_CLASS, (f'device.driver == "{DRIVER}"',)))
        self.hooks, self.binder = Hooks(), WatchingBinder()
        services = ClusterServices(dra=DraServices(self.store, compile_selector))
        self.engine = Engine(hooks=self.hooks, binder=self.binder, seed=7, services=services)
        self.binder.engine = self.engine
        profile = resolve_profile(
            ProfileConfig(scheduler_name="default-scheduler"), implemented_plugin_names(), features=features
        )
        self.engine.set_profiles((profile,))
        for i in range(nodes):
            self.engine.node_added(
                Node(
                    f"n{i}",
                    labels={"zone": f"z{i}"},
                    allocatable={"cpu": 4000, "memory": 1 << 34, "pods": 110},
                )
            )

    def run(self, drain: bool = True) -> int:
        async def loop() -> int:
            cycles = 0
            while self.engine.schedule_next():
                cycles += 1
                if drain:
                    await self.engine.scheduler.drain_binding()
            await self.engine.scheduler.drain_binding()
            return cycles

        return asyncio.run(loop())

    def plugin(self) -> DynamicResources:
        fw = self.engine.frameworks["default-scheduler"]
        return next(p for p in fw.plugins.values() if isinstance(p, DynamicResources))

    def claim(self, name: str) -> ResourceClaim:
        c = self.store.claim("default", name)
        assert c is not None
        return c

    def failure(self, pod: str) -> str:
        return next(m for p, _, m in reversed(self.hooks.failures) if p == pod)


def devices_of(c: ResourceClaim) -> list[str]:
    assert c.allocation is not None
    return [r.device for r in c.allocation.results]


def test_pods_get_distinct_devices_and_claims_record_allocation_and_reservation() -> None:
    w = World()
    w.store.upsert_slice(gpus("n1", 2))
    for i in range(3):
        w.store.upsert_claim(gpu_claim(f"c{i}"))
        w.engine.pod_added(claim_pod(f"p{i}", f"c{i}"))
    w.run()
    assert w.hooks.scheduled_on == {"p0": "n1", "p1": "n1"}
    allocated = [d for i in range(2) for d in devices_of(w.claim(f"c{i}"))]
    assert sorted(allocated) == ["gpu-0", "gpu-1"]
    c0 = w.claim("c0")
    assert c0.reserved_for == (ConsumerReference("pods", "p0", "p0"),)
    assert c0.allocation is not None
    assert c0.allocation.node_selector == (
        NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n1",)),)),
    )
    assert "resource.kubernetes.io/delete-protection" in c0.finalizers
    msg = w.failure("p2")
    assert "cannot allocate all claims" in msg
    assert msg.startswith("0/2 nodes are available:")


def test_in_flight_allocations_keep_devices_apart_before_prebind() -> None:
    # Binding is not drained between cycles: the second pod must see the first one's Reserve.
    w = World()
    w.store.upsert_slice(gpus("n0", 2))
    for i in range(2):
        w.store.upsert_claim(gpu_claim(f"c{i}"))
        w.engine.pod_added(claim_pod(f"p{i}", f"c{i}"))
    w.run(drain=False)
    assert sorted(d for i in range(2) for d in devices_of(w.claim(f"c{i}"))) == ["gpu-0", "gpu-1"]


def test_selectors_pick_the_node_with_matching_devices() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 8, model="a100", memory_gi=40))
    w.store.upsert_slice(gpus("n1", 8, model="h100", memory_gi=80))
    sel = f'device.attributes["{DRIVER}"].model == "h100"'
    mem = f'device.capacity["{DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0'
    w.store.upsert_claim(gpu_claim("h", 2, sel))
    w.store.upsert_claim(gpu_claim("m", 1, mem))
    w.engine.pod_added(claim_pod("ph", "h"))
    w.engine.pod_added(claim_pod("pm", "m"))
    w.run()
    assert w.hooks.scheduled_on == {"ph": "n1", "pm": "n1"}
    assert set(devices_of(w.claim("h"))).isdisjoint(devices_of(w.claim("m")))


def test_shared_claim_is_allocated_once_and_reserved_for_every_pod() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1))
    w.store.upsert_claim(gpu_claim("shared"))
    w.engine.pod_added(claim_pod("a", "shared"))
    w.engine.pod_added(claim_pod("b", "shared"))
    w.run()
    assert w.hooks.scheduled_on == {"a": "n0", "b": "n0"}
    c = w.claim("shared")
    assert devices_of(c) == ["gpu-0"]
    assert {r.name for r in c.reserved_for} == {"a", "b"}


def test_template_claim_not_created_yet_waits_in_pre_enqueue() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1))
    p = claim_pod("p", "tmpl", template=True)
    status = w.plugin().pre_enqueue(p)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == 'pod "default/p": ResourceClaim not created yet'
    # The controller creates the claim and records its name in the pod status: the hint queues.
    w.store.upsert_claim(gpu_claim("p-gpu-abc", owner="p"))
    updated = dataclasses.replace(p, resource_claim_statuses=(("gpu", "p-gpu-abc"),))
    assert w.plugin()._pod_hint(p, p, updated) == QueueingHint.QUEUE
    assert w.plugin().pre_enqueue(updated).is_success


def test_generated_claim_of_another_pod_is_rejected() -> None:
    w = World()
    w.store.upsert_claim(gpu_claim("x", owner="someone-else"))
    status = w.plugin().pre_enqueue(claim_pod("p", "t", template=True, generated="x"))
    assert status.message == "ResourceClaim default/x was not created for pod default/p (pod is not owner)"


def test_missing_claim_and_missing_class() -> None:
    w = World()
    assert w.plugin().pre_enqueue(claim_pod("p", "nope")).message == (
        'resourceclaim.resource.k8s.io "nope" not found'
    )
    w.store.upsert_slice(gpus("n0", 1))
    bad = ResourceClaim("c", uid="c", requests=(DeviceRequest("gpu", ExactDeviceRequest("missing")),))
    w.store.upsert_claim(bad)
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert "request gpu: device class missing does not exist" in w.failure("p")


def test_unsatisfiable_claim_waits_and_a_new_slice_requeues_it() -> None:
    w = World()
    w.store.upsert_claim(gpu_claim("c", 4))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {}
    assert "2 cannot allocate all claims" in w.failure("p")
    slice_ = gpus("n0", 4)
    w.store.upsert_slice(slice_)
    w.engine.dra_changed(Resource.RESOURCE_SLICE, None, slice_)
    w.run()
    assert w.hooks.scheduled_on == {"p": "n0"}


def test_unsupported_cel_function_is_reported_not_passed() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1))
    w.store.upsert_claim(gpu_claim("c", 1, f'device.attributes["{DRIVER}"].model.lowerAscii() == "a100"'))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {}
    assert "unsupported CEL function(s) for device selectors: lowerAscii" in w.failure("p")


_NO_NEW_CLAIMS = "no new claims to deallocate, "


@pytest.mark.parametrize(
    ("version", "post_filter_text"),
    # v1.37's PostFilter returns Unschedulable without a reason when the pod has no claims: the
    # FitError message goes straight to preemption's.
    [(V1_35, _NO_NEW_CLAIMS), (V1_36, _NO_NEW_CLAIMS), (V1_37, "")],
)
def test_pod_without_claims_gets_upstreams_post_filter_text(
    version: KubernetesVersion, post_filter_text: str
) -> None:
    w = World(features=Features(version))
    w.engine.pod_added(Pod("big", uid="big", containers=(Container("c", requests={"cpu": 99000}),)))
    w.run()
    assert w.failure("big") == (
        f"0/2 nodes are available: 2 Insufficient cpu. {post_filter_text}preemption: 0/2 nodes "
        "are available: 2 Preemption is not helpful for scheduling."
    )


def test_post_filter_deallocates_a_claim_pinned_to_an_unusable_node() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1))
    pinned = AllocationResult(
        (DeviceRequestAllocationResult("gpu", DRIVER, "n9", "gpu-0"),),
        (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", ("n9",)),)),),
    )
    w.store.upsert_claim(dataclasses.replace(gpu_claim("c"), allocation=pinned))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert "resourceclaim not available on the node" in w.failure("p")
    assert w.failure("p").endswith("deallocation of ResourceClaim completed.") or (
        "deallocation of ResourceClaim completed" in w.failure("p")
    )
    assert w.claim("c").allocation is None


def test_claim_in_use_by_too_many_pods() -> None:
    w = World()
    refs = tuple(ConsumerReference("pods", f"o{i}", f"o{i}") for i in range(256))
    alloc = AllocationResult((DeviceRequestAllocationResult("gpu", DRIVER, "n0", "gpu-0"),))
    w.store.upsert_claim(dataclasses.replace(gpu_claim("c"), allocation=alloc, reserved_for=refs))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert "resourceclaim in use" in w.failure("p")


def test_score_prefers_the_node_where_the_first_subrequest_fits() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1, model="h100"))
    w.store.upsert_slice(gpus("n1", 1, model="a100"))
    first = DeviceSubRequest("h100", GPU_CLASS, (f'device.attributes["{DRIVER}"].model == "h100"',))
    second = DeviceSubRequest("any", GPU_CLASS)
    c = ResourceClaim("c", uid="c", requests=(DeviceRequest("gpu", first_available=(first, second)),))
    w.store.upsert_claim(c)
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {"p": "n0"}
    assert w.claim("c").allocation is not None
    assert w.claim("c").allocation.results[0].request == "gpu/h100"  # type: ignore[union-attr]


def test_claim_hint_queues_on_deallocation_and_skips_unrelated_claims() -> None:
    w = World()
    w.store.upsert_claim(gpu_claim("mine"))
    p = claim_pod("p", "mine")
    pl = w.plugin()
    other = gpu_claim("other")
    alloc = AllocationResult((DeviceRequestAllocationResult("gpu", DRIVER, "n0", "gpu-0"),))
    assert pl._claim_hint(p, None, other) == QueueingHint.SKIP
    assert pl._claim_hint(p, dataclasses.replace(other, allocation=alloc), other) == QueueingHint.QUEUE
    mine = w.claim("mine")
    assert pl._claim_hint(p, mine, dataclasses.replace(mine, finalizers=("x",))) == QueueingHint.SKIP
    assert pl._claim_hint(p, mine, dataclasses.replace(mine, allocation=alloc)) == QueueingHint.QUEUE


@pytest.mark.parametrize("nodes", [1, 50])
def test_network_attached_slices_serve_every_matching_node(nodes: int) -> None:
    w = World(nodes=nodes)
    term = NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("z0",)),))
    w.store.upsert_slice(
        ResourceSlice("net", DRIVER, ResourcePool("net"), (Device("nic-0"),), node_selector=(term,))
    )
    w.store.upsert_claim(gpu_claim("c"))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {"p": "n0"}
    assert w.claim("c").allocation is not None
    assert w.claim("c").allocation.node_selector == (term,)  # type: ignore[union-attr]


def test_store_keeps_an_assumed_claim_until_the_informer_catches_up() -> None:
    store = DraStore()
    base = dataclasses.replace(gpu_claim("c"), resource_version="10")
    store.upsert_claim(base)
    alloc = AllocationResult((DeviceRequestAllocationResult("gpu", DRIVER, "n0", "gpu-0"),))
    store.assume_claim(dataclasses.replace(base, allocation=alloc, resource_version="12"))
    store.upsert_claim(dataclasses.replace(base, resource_version="11"))  # stale event
    assert store.claim("default", "c").allocation == alloc  # type: ignore[union-attr]
    assert store.allocated_devices()
    store.upsert_claim(dataclasses.replace(base, resource_version="13"))  # newer: wins
    assert store.claim("default", "c").allocation is None  # type: ignore[union-attr]
    assert not store.allocated_devices()


def _subs(name: str, n: int) -> DeviceRequest:
    return DeviceRequest(
        name, first_available=tuple(DeviceSubRequest(f"subreq-{i}", GPU_CLASS) for i in range(1, n + 1))
    )


def _picked(*requests: str) -> AllocationResult:
    return AllocationResult(tuple(DeviceRequestAllocationResult(r, DRIVER, "p", "d") for r in requests))


@pytest.mark.parametrize(
    ("requests", "picked", "want"),
    [
        ((_subs("req-1", 1),), ("req-1/subreq-1",), 8),
        ((_subs("req-1", 8),), ("req-1/subreq-8",), 1),
        ((_subs("req-1", 4), _subs("req-2", 5)), ("req-1/subreq-4", "req-2/subreq-5"), 9),
        ((_subs("req-1", 8), _subs("req-2", 1)), ("req-1/subreq-8", "req-2/subreq-1"), 9),
    ],
    ids=[
        "single-request-only-subrequest-allocated",
        "single-request-last-subrequest-allocated",
        "multiple-requests-with-middle-subrequests-allocated",
        "multiple-requests-with-top-subrequests-allocated",
    ],
)
def test_compute_score(requests: tuple[DeviceRequest, ...], picked: tuple[str, ...], want: int) -> None:
    c = ResourceClaim("c", requests=requests)
    assert compute_score([c], [_picked(*picked)]) == want


def test_deleted_claim() -> None:
    w = World()
    w.store.upsert_claim(
        dataclasses.replace(gpu_claim("my-pod-my-resource", owner="p"), deletion_timestamp=1.0)
    )
    p = claim_pod("p", "t", template=True, generated="my-pod-my-resource")
    assert w.plugin().pre_enqueue(p).message == 'resourceclaim "my-pod-my-resource" is being deleted'


def test_claim_cel_runtime_error_is_an_error_with_cel_gos_wording() -> None:
    w = World()
    w.store.upsert_slice(gpus("n0", 1))
    w.store.upsert_claim(gpu_claim("c", 1, f'device.attributes["{DRIVER}"].healthy'))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert w.hooks.scheduled_on == {}
    assert w.failure("p").endswith("claim default/c: selector #0: CEL runtime error: no such key: healthy")


def test_claim_being_allocated_by_another_pod_waits() -> None:
    w = World()
    w.store.upsert_claim(gpu_claim("c"))
    w.store.signal_pending_allocation(w.claim("c"))
    w.engine.pod_added(claim_pod("p", "c"))
    w.run()
    assert "resource claim default/c is in the process of being allocated" in w.failure("p")


def test_rows_are_grouped_by_the_slices_they_see() -> None:
    from policy_scheduler.scheduler.nodetable import NodeTable
    from policy_scheduler.scheduler.plugins.dynamicresources.nodeslices import SliceIndex, group_rows

    table = NodeTable()
    for i in range(6):
        table.set_node(Node(f"n{i}", labels={"zone": "a" if i % 2 else "b"}))
    term = NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("a",)),))
    net = ResourceSlice("net", DRIVER, ResourcePool("net"), (Device("x"),), node_selector=(term,))
    everywhere = ResourceSlice("all", DRIVER, ResourcePool("all"), (Device("y"),), all_nodes=True)
    index = SliceIndex.build([gpus("n1", 1), net, everywhere])
    groups = group_rows(index, table, np.arange(6, dtype=np.intp))
    by_rows = {tuple(g.rows): {s.name for s in g.slices} for g in groups}
    assert by_rows == {
        (1,): {"n1-gpus", "net", "all"},  # node-local: a group of its own
        (3, 5): {"net", "all"},
        (0, 2, 4): {"all"},
    }


def test_what_a_node_with_local_slices_sees_follows_its_labels() -> None:
    # The index keeps what each such node sees across cycles: by its matches, not its name alone.
    from policy_scheduler.scheduler.nodetable import NodeTable
    from policy_scheduler.scheduler.plugins.dynamicresources.nodeslices import SliceIndex, group_rows

    table = NodeTable()
    table.set_node(Node("n0", labels={"zone": "b"}))
    term = NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("a",)),))
    net = ResourceSlice("net", DRIVER, ResourcePool("net"), (Device("x"),), node_selector=(term,))
    index = SliceIndex.build([gpus("n0", 1), net])
    rows = np.arange(1, dtype=np.intp)
    [first] = group_rows(index, table, rows)
    assert [s.name for s in first.slices] == ["n0-gpus"]
    [again] = group_rows(index, table, rows)
    assert again.slices is first.slices  # the same tuple: the allocator's pool cache hits
    table.set_node(Node("n0", labels={"zone": "a"}))
    [relabeled] = group_rows(index, table, rows)
    assert [s.name for s in relabeled.slices] == ["n0-gpus", "net"]


def test_args_default_filter_timeout_and_reject_binding_timeout() -> None:
    from policy_scheduler.scheduler.field_errors import ArgsError
    from policy_scheduler.scheduler.plugins.dynamicresources.args import DynamicResourcesArgs

    # v1.35: DRADeviceBindingConditions is off, so bindingTimeout is refused.
    v135 = Features(V1_35)
    assert DynamicResourcesArgs.from_json({}, v135).to_json() == {"filterTimeout": "10s"}
    assert DynamicResourcesArgs.from_json({"filterTimeout": "0s"}, v135).filter_timeout == 0
    with pytest.raises(ArgsError, match=r"filterTimeout: Invalid value: .*must be zero or positive"):
        DynamicResourcesArgs.from_json({"filterTimeout": "-1s"}, v135)
    with pytest.raises(ArgsError, match="bindingTimeout: Forbidden: DRADeviceBindingConditions"):
        DynamicResourcesArgs.from_json({"bindingTimeout": "5m"}, v135)


@pytest.mark.parametrize("version", [V1_36, V1_37])
def test_args_default_binding_timeout_from_v136(version: KubernetesVersion) -> None:
    """DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on from v1.36:
    SetDefaults_DynamicResourcesArgs sets bindingTimeout, validation wants at least 1s."""
    from policy_scheduler.scheduler.field_errors import ArgsError
    from policy_scheduler.scheduler.plugins.dynamicresources.args import DynamicResourcesArgs

    features = Features(version)
    assert DynamicResourcesArgs.from_json({}, features).to_json() == {
        "filterTimeout": "10s",
        "bindingTimeout": "10m0s",
    }
    assert DynamicResourcesArgs.from_json({"bindingTimeout": "5m"}, features).binding_timeout == 300
    with pytest.raises(ArgsError, match=r"bindingTimeout: Invalid value: .*must be at least 1 second"):
        DynamicResourcesArgs.from_json({"bindingTimeout": "500ms"}, features)


def test_args_without_filter_timeout_gate_refuse_it() -> None:
    from policy_scheduler.scheduler.field_errors import ArgsError
    from policy_scheduler.scheduler.plugins.dynamicresources.args import DynamicResourcesArgs

    off = Features(V1_35, (("DRASchedulerFilterTimeout", False),))
    assert DynamicResourcesArgs.from_json({}, off).filter_timeout is None
    with pytest.raises(ArgsError, match="filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate"):
        DynamicResourcesArgs.from_json({"filterTimeout": "5s"}, off)


def test_without_the_dra_api_a_pod_with_claims_waits_naming_it_and_others_schedule() -> None:
    w = World()
    w.store.upsert_slice(gpus("n1", 2))
    w.store.upsert_claim(gpu_claim("c0"))
    why = "resource.k8s.io/v1 is not served by the API server: DynamicResources is off"
    w.engine.base_handle.services.unserved.set({DRA_API: why})
    w.engine.pod_added(claim_pod("p0", "c0"))
    w.engine.pod_added(Pod("plain", uid="plain", containers=(Container("c", requests={"cpu": 100}),)))
    w.run()
    assert set(w.hooks.scheduled_on) == {"plain"}
    assert why in w.failure("p0")
    assert w.claim("c0").allocation is None


def _per_device_slice() -> list[ResourceSlice]:
    """A pool of partitions with per-device node selection: one device local to n1, one for
    zone z2's nodes, one for every node, drawing on a counter set that fits two of them."""
    consumes = (CounterConsumption("mem", {"memory": Decimal(20)}),)
    devices = (
        Device("local", consumes_counters=consumes, node_name="n1"),
        Device(
            "zoned",
            consumes_counters=consumes,
            node_selector=(NodeSelectorTerm(match_expressions=(Requirement("zone", "In", ("z2",)),)),),
        ),
        Device("anywhere", consumes_counters=consumes, all_nodes=True),
    )
    pool = ResourcePool("shared", 1, 2)
    return [
        ResourceSlice("parts", DRIVER, pool, devices, per_device_node_selection=True),
        ResourceSlice(
            "counters",
            DRIVER,
            pool,
            per_device_node_selection=True,
            shared_counters=(CounterSet("mem", {"memory": Decimal(40)}),),
        ),
    ]


@pytest.mark.parametrize(("version", "placed"), [(V1_35, 0), (V1_37, 2)])
def test_per_device_node_selection_and_shared_counters(version: KubernetesVersion, placed: int) -> None:
    w = World(nodes=3, features=Features(version))
    for s in _per_device_slice():
        w.store.upsert_slice(s)
    # p0 must land on n1 (its device is local there), p1 in zone z2 (n2): the counters fit two.
    claims = {
        "p0": gpu_claim("c0"),
        "p1": gpu_claim("c1"),
        "p2": gpu_claim("c2"),
    }
    for pod, c in claims.items():
        w.store.upsert_claim(c)
        w.engine.pod_added(claim_pod(pod, c.name))
    w.run()
    assert len(w.hooks.scheduled_on) == placed
    if not placed:
        assert "cannot allocate all claims" in w.failure("p0")
        return
    for pod, node in w.hooks.scheduled_on.items():
        claim = w.claim(claims[pod].name)
        assert claim.allocation is not None
        [result] = claim.allocation.results
        # The allocation's node selector is the device's own: it must include the node.
        if result.device == "local":
            assert node == "n1"
        if result.device == "zoned":
            assert node == "n2"
    assert "cannot allocate all claims" in w.failure(next(p for p in claims if p not in w.hooks.scheduled_on))


@pytest.mark.parametrize(("version", "tainted"), [(V1_36, False), (V1_37, True)])
def test_device_taint_rules_apply_with_their_gate(version: KubernetesVersion, tainted: bool) -> None:
    """v1.36 has DRADeviceTaints on but DRADeviceTaintRules off: the rule is ignored there."""
    w = World(features=Features(version))
    w.store.upsert_slice(gpus("n1", 1))
    w.store.upsert_taint_rule(
        DeviceTaintRule("maintenance", DeviceTaint("maintenance", "NoSchedule"), DRIVER, "n1", "gpu-0")
    )
    w.store.upsert_claim(gpu_claim("c0"))
    w.engine.pod_added(claim_pod("p0", "c0"))
    w.run()
    if tainted:
        assert not w.hooks.scheduled_on
        assert "cannot allocate all claims" in w.failure("p0")
        # Deleting the rule is a slice change (as the informer reports it): the pod gets the device.
        w.store.delete_taint_rule("maintenance")
        w.engine.dra_changed(Resource.RESOURCE_SLICE, w.store.slices()[0], w.store.slices()[0])
        w.run()
    assert w.hooks.scheduled_on == {"p0": "n1"}


@pytest.mark.parametrize("partitionable", [False, True])
def test_rows_are_grouped_by_the_devices_they_see_with_per_device_node_selection(partitionable: bool) -> None:
    from policy_scheduler.scheduler.nodetable import NodeTable
    from policy_scheduler.scheduler.plugins.dynamicresources.nodeslices import SliceIndex, group_rows

    table = NodeTable()
    for i in range(4):
        table.set_node(Node(f"n{i}", labels={"zone": f"z{i}"}))
    index = SliceIndex.build(_per_device_slice(), partitionable)
    groups = group_rows(index, table, np.arange(4, dtype=np.intp))
    by_rows = {tuple(g.rows): sorted(s.name for s in g.slices) for g in groups}
    if not partitionable:  # upstream skips both slices with DRAPartitionableDevices off
        assert by_rows == {(0, 1, 2, 3): []}
        return
    # n1 has a device of its own, n2 one by zone; every node sees "anywhere" and the counters.
    assert by_rows == {
        (1,): ["counters", "parts"],
        (2,): ["counters", "parts"],
        (0, 3): ["counters", "parts"],
    }
    # Which devices of the slice a group's node may use is the allocator's per-device check.
    for g in groups:
        node = table.nodes[g.rows[0]]
        matches = node_matcher(node)
        visible = {d.name for s in g.slices for d in s.devices if device_targets_node(d, matches)}
        assert visible == {1: {"local", "anywhere"}, 2: {"zoned", "anywhere"}}.get(g.rows[0], {"anywhere"})
