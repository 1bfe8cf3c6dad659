"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources, v1.35.4 .. v1.37.2).

Structured parameters only (no binding conditions). Partitionable devices, device taints,
DeviceTaintRules and consumable capacity follow their feature gates (structured.Features,
AllocatorFeatures upstream). Claims the pod references must exist (PreEnqueue); PreFilter checks
they are usable and builds the allocator; Filter allocates per group of nodes that see the same
slices; Reserve records in-flight allocations so no device goes to two pods; PreBind writes
allocation + reservedFor through the injected ClaimWriter.

With DRAExtendedResource, a pod asking for an extended resource that a DeviceClass serves gets a
claim of its own, built in memory at PreFilter and shaped per node at Filter (only the resources
the node does not list in allocatable go to DRA: the rest is the device plugin's, checked by
NodeResourcesFit); PreBind creates it, allocates and reserves it, and records it in the pod's
status.extendedResourceClaimStatus (extendeddynamicresources.go).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from policy_scheduler.scheduler.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    FailedOnNode,
)
from policy_scheduler.scheduler.dra.allocator import Features as AllocatorFeatures
from policy_scheduler.scheduler.dra.extended import (
    IN_MEMORY_CLAIM_NAME,
    ContainerExtendedResourceRequest,
    ExtendedResourceClaimStatus,
    is_dra_extended_resource_name,
    requests_and_mappings,
)
from policy_scheduler.scheduler.dra.model import (
    CLAIM_FINALIZER,
    FIRST_AVAILABLE_MAX_SIZE,
    AllocationResult,
    DeviceId,
    ResourceClaim,
)
from policy_scheduler.scheduler.dra.podclaims import (
    ClaimUnavailable,
    check_for_pod,
    claim_name,
    has_claims,
    pod_resource_claims,
)
from policy_scheduler.scheduler.dra.services import ClaimWriteError, DraServices
from policy_scheduler.scheduler.dra.shapes import PoolCache
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    SignFragments,
    default_normalize,
)
from policy_scheduler.scheduler.framework.status import (
    SKIP,
    SUCCESS,
    Code,
    Status,
    unresolvable,
    unschedulable,
)
from policy_scheduler.scheduler.framework.unserved import DRA as DRA_API
from policy_scheduler.scheduler.framework.unserved import UnservedApis
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.dynamicresources.args import DynamicResourcesArgs
from policy_scheduler.scheduler.plugins.dynamicresources.nodeslices import SliceIndex, group_rows
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import resource_column
from policy_scheduler.scheduler.resource_names import is_scalar_resource_name
from policy_scheduler.scheduler.selectors.node_matching import match_node_selector_terms
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.gates import (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINT_RULES,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
)

STATE_KEY = "PreFilterDynamicResources"


_Mappings = tuple[ContainerExtendedResourceRequest, ...]


@dataclass(slots=True)
class _State:
    # The pod's own claims, then (with DRAExtendedResource) the claim for its extended resources.
    claims: list[ResourceClaim] = field(default_factory=list)
    to_allocate: list[int] = field(default_factory=list)  # indices into claims
    allocator: Allocator | None = None
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    reserved: dict[int, AllocationResult] = field(default_factory=dict)  # Reserve's picks
    extended: int | None = None  # index of the extended-resource claim in claims
    extended_uid: str = ""  # its uid at PreFilter (in flight under it until PreBind ends)
    scalar_requests: dict[str, int] = field(default_factory=dict)
    # Per node: the extended-resource claim shaped for it and its container request mappings.
    node_extended: dict[str, tuple[ResourceClaim, _Mappings]] = field(default_factory=dict)

    def clone(self) -> _State:
        # Filter adds node results and unavailable claims; dry runs must not leak into the cycle.
        return replace(
            self,
            node_allocations=dict(self.node_allocations),
            unavailable=set(self.unavailable),
            node_extended=dict(self.node_extended),
        )

    def user_claims(self) -> list[ResourceClaim]:
        return self.claims if self.extended is None else self.claims[: self.extended]

    @property
    def no_user_claim(self) -> bool:
        return self.extended == 0 or not self.claims


def _error(message: str) -> Status:
    return Status(Code.ERROR, (message,))


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
):
    name = "DynamicResources"
    signs_pods = True
    args_type = DynamicResourcesArgs

    def __init__(self, handle: Handle, args: DynamicResourcesArgs) -> None:
        super().__init__(handle, args)
        self.typed_args = args
        # PostFilter with nothing to deallocate says so up to v1.36; from v1.37 it says nothing,
        # so pods' FitError messages lose "no new claims to deallocate".
        behaviour = handle.features.behaviour
        self.explains_nothing_done = not behaviour.dynamic_resources_post_filter_silent_when_nothing_done
        self.allocator_features = allocator_features(handle.features)
        # The slice tracker applies DeviceTaintRules only with DRADeviceTaintRules on.
        self.taint_rules = handle.features.enabled(DRA_DEVICE_TAINT_RULES)
        self.extended_resources = handle.features.enabled(DRA_EXTENDED_RESOURCE)
        self.claim_actions = Action.ADD | Action.UPDATE
        if behaviour.dynamic_resources_requeues_on_claim_delete:
            self.claim_actions |= Action.DELETE
        self._index: tuple[int, SliceIndex] | None = None
        # CEL results per (expression, device), and pools and node shapes per set of visible
        # slices: valid while the slices do not change.
        self._evaluated: tuple[int, dict[tuple[str, DeviceId], bool]] = (-1, {})
        self._pool_cache: tuple[int, PoolCache] = (
            -1,
            PoolCache(self.allocator_features.partitionable_devices),
        )

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return None if pod.resource_claims else ()  # "pods with dra resource claims are not signable"

    @property
    def unserved(self) -> UnservedApis:
        unserved: UnservedApis = self.handle.services.unserved
        return unserved

    @property
    def dra(self) -> DraServices:
        services: DraServices = self.handle.services.dra
        return services

    # ---- events ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node = Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(ClusterEvent(Resource.NODE, node)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_CLAIM, self.claim_actions), self._claim_hint),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._pod_hint
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, Action.ADD | Action.UPDATE)),
        ]

    def _claim_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """isSchedulableAfterClaimChange."""
        if new is None and isinstance(old, ResourceClaim):
            # Deleted: only an allocated claim frees devices (the deallocation is seen first).
            return QueueingHint.SKIP if old.allocation is None else QueueingHint.QUEUE
        if not isinstance(new, ResourceClaim):
            return QueueingHint.QUEUE
        try:
            uses = any(c.uid == new.uid for c in self._claims(pod))
        except ClaimUnavailable:
            return QueueingHint.SKIP
        if isinstance(old, ResourceClaim) and old.allocation is not None and new.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices may be free for anyone
        if not uses:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if isinstance(old, ResourceClaim) and (old.allocation, old.reserved_for) == (
            new.allocation,
            new.reserved_for,
        ):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def _pod_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """isSchedulableAfterPodChange."""
        if not isinstance(new, Pod) or new.uid != pod.uid:
            return QueueingHint.SKIP
        try:
            self._claims(new)
        except ClaimUnavailable:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # ---- claims ----------------------------------------------------------------------------------

    def _claims(self, pod: Pod) -> list[ResourceClaim]:
        """foreachPodResourceClaim: every claim must exist, not be deleted and (if generated) be ours."""
        store = self.dra.store
        found: list[ResourceClaim] = []
        for pod_claim in pod_resource_claims(pod):
            name, check_owner = claim_name(pod, pod_claim)
            if name is None:
                continue
            claim = store.claim(pod.namespace, name)
            if claim is None:
                raise ClaimUnavailable(f'resourceclaim.resource.k8s.io "{name}" not found')
            if claim.deletion_timestamp is not None:
                raise ClaimUnavailable(f'resourceclaim "{claim.name}" is being deleted')
            if check_owner:
                check_for_pod(pod, claim)
            found.append(claim)
        return found

    def pre_enqueue(self, pod: Pod) -> Status:
        # Without the API, PreFilter turns the pod down saying so: a pod held here gets no condition.
        if not has_claims(pod) or self.unserved.reason(DRA_API):
            return SUCCESS
        try:
            self._claims(pod)
        except ClaimUnavailable as e:
            return unresolvable(str(e))
        return SUCCESS

    # ---- PreFilter / Filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        s = _State()
        state.write(STATE_KEY, s)
        if has_claims(pod):
            if missing := self.unserved.reason(DRA_API):
                return None, unresolvable(missing)
            try:
                s.claims = self._claims(pod)
            except ClaimUnavailable as e:
                return None, unresolvable(str(e))
        extended = self._pre_filter_extended(pod, s)
        if extended is not None:
            s.extended, s.extended_uid = len(s.claims), extended.uid
            s.claims.append(extended)
        if not s.claims:
            return None, SKIP
        store = self.dra.store
        for i, claim in enumerate(s.claims):
            if claim.allocation is not None:
                if not claim.can_be_reserved() and not claim.is_reserved_for(pod.uid):
                    return None, unresolvable("resourceclaim in use")
                continue
            s.to_allocate.append(i)
            if store.has_pending_allocation(claim.uid):
                return None, unresolvable(f"resource claim {claim.key} is in the process of being allocated")
            if i == s.extended:
                continue  # built by us, or left over from an earlier cycle: Filter judges it
            for request in claim.requests:
                if request.exactly is not None:
                    status = self._validate_class(request.exactly.device_class_name, request.name)
                elif request.first_available:
                    status = None
                    for sub in request.first_available:
                        status = self._validate_class(sub.device_class_name, f"{request.name}/{sub.name}")
                        if status is not None:
                            break
                else:
                    status = unresolvable(
                        f"resource claim {claim.key}, request {request.name}: unknown request type"
                    )
                if status is not None:
                    return None, status
        if s.to_allocate:
            if self._evaluated[0] != store.slices_generation:
                self._evaluated = (store.slices_generation, {})
            if self._pool_cache[0] != store.slices_generation:
                partitionable = self.allocator_features.partitionable_devices
                self._pool_cache = (store.slices_generation, PoolCache(partitionable))
            if self.allocator_features.consumable_capacity:
                held = store.allocated_state()
                allocated, shared, aggregated = held.devices, held.shared, held.aggregated
            else:
                allocated, shared, aggregated = store.allocated_devices(), frozenset(), {}
            s.allocator = Allocator(
                allocated,
                store.device_class,
                store.slices(self.taint_rules),
                self.dra.compile_selector,
                self.allocator_features,
                evaluated=self._evaluated[1],
                shared=shared,
                aggregated=aggregated,
                pool_cache=self._pool_cache[1],
            )
        return None, SUCCESS

    def _pre_filter_extended(self, pod: Pod, s: _State) -> ResourceClaim | None:
        """preFilterExtendedResources: the claim left from an earlier cycle, or a new one in
        memory, when some extended resource the pod asks for is served by a DeviceClass."""
        store = self.dra.store
        if not self.extended_resources or not store.extended_resources:
            return None
        requests = pod.requests
        if not any(
            quantity and is_dra_extended_resource_name(name) and store.extended_resources.device_class(name)
            for name, quantity in requests.items()
        ):
            return None
        s.scalar_requests = {n: q for n, q in requests.items() if is_scalar_resource_name(n)}
        found = store.extended_resource_claim(pod)
        if found is not None:
            return found
        return ResourceClaim(
            IN_MEMORY_CLAIM_NAME,
            pod.namespace,
            uid=str(uuid.uuid4()),  # in flight under this until PreBind created the claim
            owner_pod_uid=pod.uid,
            extended_resource=True,
            owner_pod_name=pod.name,
        )

    def _validate_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return _error(f"request {request_name}: unsupported request type")
        if self.dra.store.device_class(class_name) is None:
            return unresolvable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def _slice_index(self) -> SliceIndex:
        store = self.dra.store
        if self._index is None or self._index[0] != store.slices_generation:
            self._index = (
                store.slices_generation,
                SliceIndex.build(
                    store.slices(self.taint_rules), self.allocator_features.partitionable_devices
                ),
            )
        return self._index[1]

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.claims:
            return FilterResult.all_pass(len(rows))
        statuses: list[Status] = []
        index = np.full(len(rows), -1, dtype=np.int32)
        # Which shape of the extended-resource claim each row allocates (-1: none).
        shape_of = np.full(len(rows), -1, dtype=np.intp)
        shapes: list[tuple[ResourceClaim, _Mappings]] = []
        idle = np.zeros(len(rows), dtype=bool)  # rows left with nothing to allocate
        if s.extended is not None:
            idle = self._filter_extended(s, pod, rows, index, statuses, shape_of, shapes)
        open_rows = (index < 0) & ~idle
        # Claims already allocated must be usable on the node (their allocation's node selector).
        unavailable = np.zeros(len(rows), dtype=bool)
        unavailable_claims: list[tuple[int, np.ndarray]] = []
        for i, claim in enumerate(s.claims):
            if claim.allocation is not None and claim.allocation.node_selector is not None:
                miss = ~match_node_selector_terms(self.table, rows, claim.allocation.node_selector)
                miss &= open_rows
                if miss.any():
                    unavailable_claims.append((i, miss))
                    unavailable |= miss
        if s.allocator is not None:
            claims = [s.claims[i] for i in s.to_allocate]
            for group in group_rows(self._slice_index(), self.table, rows):
                if s.extended is None:  # the common case: one allocation per group
                    status = self._allocate(s, group.node_name, group.slices, claims, group.rows, rows)
                    if status is not None:
                        index[group.rows] = len(statuses)
                        statuses.append(status)
                    continue
                members = np.asarray(group.rows, dtype=np.intp)
                members = members[open_rows[members]]
                kinds = (
                    shape_of[members].tolist() if len(members) == 1 else np.unique(shape_of[members]).tolist()
                )
                for shape in kinds:
                    positions = members[shape_of[members] == shape].tolist()
                    node_claim = shapes[shape] if shape >= 0 else None
                    shaped = [
                        node_claim[0] if i == s.extended and node_claim is not None else s.claims[i]
                        for i in s.to_allocate
                    ]
                    node_name = self.table.nodes[int(rows[positions[0]])].name
                    status = self._allocate(s, node_name, group.slices, shaped, positions, rows, node_claim)
                    if status is not None:
                        index[positions] = len(statuses)
                        statuses.append(status)
        if unavailable_claims:
            allocated_ok = index < 0
            for i, miss in unavailable_claims:
                if (miss & allocated_ok).any():
                    s.unavailable.add(i)
            hit = unavailable & allocated_ok
            if hit.any():
                index[hit] = len(statuses)
                statuses.append(unresolvable("resourceclaim not available on the node"))
        return (
            FilterResult(index < 0, index, tuple(statuses)) if statuses else FilterResult.all_pass(len(rows))
        )

    def _filter_extended(
        self,
        s: _State,
        pod: Pod,
        rows: Rows,
        index: np.ndarray,
        statuses: list[Status],
        shape_of: np.ndarray,
        shapes: list[tuple[ResourceClaim, _Mappings]],
    ) -> np.ndarray:
        """filterExtendedResources on every row: the resources each node must provide through DRA
        (served by a class, not in its allocatable) shape the claim for it; rejected rows get
        their status in `index`. Returns the rows where nothing is left to allocate."""
        assert s.extended is not None
        claim = s.claims[s.extended]
        idle = np.zeros(len(rows), dtype=bool)
        if claim.requests:  # left from an earlier cycle: PostFilter deletes it
            index[:] = len(statuses)
            statuses.append(unresolvable("cannot schedule extended resource claim"))
            return idle
        resolver = self.dra.store.extended_resources
        table = self.table
        via_dra: list[tuple[str, str, np.ndarray]] = []  # (resource, class, rows needing DRA)
        unfit = np.zeros(len(rows), dtype=bool)
        for name, quantity in sorted(s.scalar_requests.items()):
            if not quantity or not is_dra_extended_resource_name(name):
                continue
            allocatable = resource_column(table, table.allocatable, name, rows)
            device_class = resolver.device_class(name)
            if device_class is not None:
                via_dra.append((name, device_class.name, allocatable == 0))
                continue
            # Neither the device plugin's (listed in allocatable) nor served by a class.
            for p in np.flatnonzero(allocatable == 0).tolist():
                if name not in table.nodes[int(rows[p])].allocatable:
                    unfit[p] = True
        if unfit.any():
            index[unfit] = len(statuses)
            statuses.append(unresolvable("cannot fit resource"))
        needs = (
            np.stack([m for _, _, m in via_dra], axis=1) if via_dra else np.zeros((len(rows), 0), dtype=bool)
        )
        patterns, inverse = np.unique(needs, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        requests = s.scalar_requests
        for k, pattern in enumerate(patterns):
            members = inverse == k
            picked = {name: requests[name] for (name, _, _), on in zip(via_dra, pattern, strict=True) if on}
            if not picked and s.no_user_claim:
                idle |= members
                continue
            if claim.allocation is not None:
                continue
            class_of = {name: cls for name, cls, _ in via_dra}
            device_requests, mappings = requests_and_mappings(pod, picked, class_of)
            shape_of[members] = len(shapes)
            shapes.append((replace(claim, requests=device_requests), mappings))
        return idle

    def _allocate(
        self,
        s: _State,
        node_name: str,
        slices: Sequence[Any],
        claims: list[ResourceClaim],
        positions: list[int],
        rows: Rows,
        node_claim: tuple[ResourceClaim, _Mappings] | None = None,
    ) -> Status | None:
        assert s.allocator is not None
        timeout = self.typed_args.filter_timeout
        clock = self.handle.clock
        deadline = (clock, clock() + timeout) if timeout else None
        table = self.table
        try:
            node = table.nodes[table.index[node_name]]
            result = s.allocator.allocate(node_name, slices, claims, deadline, node)
        except (FailedOnNode, AllocationTimeout) as e:
            return unresolvable(str(e))
        except AllocationError as e:
            return _error(str(e))
        if result is None or len(result) != len(claims):
            return unresolvable("cannot allocate all claims")
        for p in positions:
            name = table.nodes[int(rows[p])].name
            s.node_allocations[name] = result
            if node_claim is not None:
                s.node_extended[name] = node_claim
        return None

    # ---- PostFilter ------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        s: _State | None = state.read(STATE_KEY)
        if s is None:
            # PreFilter did not run (an earlier PreFilter rejected the pod): upstream's
            # getStateData fails and the error ends PostFilter, preemption included.
            return None, Status(Code.ERROR, ("not found",))
        if not s.claims:
            return None, self._nothing_done("no new claims to deallocate")
        # The extended-resource claim has a name only when an earlier cycle created it: stale.
        stale = s.claims[s.extended] if s.extended is not None else None
        if stale is not None and stale.name == IN_MEMORY_CLAIM_NAME:
            stale = None
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            if i == s.extended:
                if stale is not None:
                    break
                continue
            refs = claim.reserved_for
            if not refs or (len(refs) == 1 and refs[0].uid == pod.uid):
                self.dra.claim_writer().deallocate(claim)
                self.dra.store.assume_claim(replace(claim, allocation=None, reserved_for=()))
                return None, unschedulable("deallocation of ResourceClaim completed")
        if stale is not None:
            self.dra.claim_writer().delete_claim(stale)
            return None, unschedulable("deletion of ResourceClaim completed")
        return None, self._nothing_done("still not schedulable")

    def _nothing_done(self, reason: str) -> Status:
        return unschedulable(reason) if self.explains_nothing_done else unschedulable()

    # ---- Score -----------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        out = np.zeros(len(rows), dtype=np.int64)
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.node_allocations:
            return out
        claims = [s.claims[i] for i in s.to_allocate]
        if not any(request.first_available for claim in claims for request in claim.requests):
            return out  # only picked subrequests score
        nodes = self.table.nodes
        for p, row in enumerate(rows.tolist()):
            allocation = s.node_allocations.get(nodes[row].name)
            if allocation is not None:
                out[p] = compute_score(claims, allocation)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize(scores)

    # ---- Reserve / Unreserve ---------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.to_allocate:
            return SUCCESS
        allocation = s.node_allocations.get(node_name)
        if not allocation:
            if s.to_allocate == [s.extended]:
                return SUCCESS  # the device plugin serves the pod's extended resources here
            return _error("claim allocation not found for node")
        if len(allocation) != len(s.to_allocate):
            n = len(s.to_allocate)
            return _error(
                f"internal error, have {len(allocation)} allocations, {n} claims to allocate, want {n} claims"
            )
        store = self.dra.store
        for i, result in zip(s.to_allocate, allocation, strict=True):
            claim = s.claims[i]
            if i == s.extended:
                claim = s.node_extended[node_name][0]
            s.reserved[i] = result
            finalizers = (
                claim.finalizers
                if CLAIM_FINALIZER in claim.finalizers
                else (*claim.finalizers, CLAIM_FINALIZER)
            )
            store.signal_pending_allocation(replace(claim, allocation=result, finalizers=finalizers))
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s: _State | None = state.read(STATE_KEY)
        if s is None:
            return
        store = self.dra.store
        for claim in s.user_claims():
            store.remove_pending_allocation(claim.uid)
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                self.dra.claim_writer().unreserve(claim, pod.uid)
        if s.extended is not None:  # unreserveExtendedResourceClaim
            store.remove_pending_allocation(s.extended_uid)
            claim = s.claims[s.extended]
            if claim.name != IN_MEMORY_CLAIM_NAME:
                self.dra.claim_writer().delete_claim(claim)

    # ---- PreBind ---------------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.claims:
            return SUCCESS
        writer = self.dra.claim_writer()
        store = self.dra.store
        for i, claim in enumerate(s.claims):
            if claim.is_reserved_for(pod.uid):
                continue
            allocation = s.reserved.get(i)
            if i == s.extended:
                if allocation is None and not claim.requests:
                    continue  # the device plugin serves the pod's extended resources
                status = await self._bind_extended_claim(s, pod, node_name, allocation)
                if status is not None:
                    return status
                continue
            try:
                updated = await writer.bind_claim(claim, allocation, pod)
            except ClaimWriteError as e:
                return _error(str(e))
            finally:
                if allocation is not None:
                    store.remove_pending_allocation(claim.uid)
            store.assume_claim(updated)
            s.claims[i] = updated
        return SUCCESS

    async def _bind_extended_claim(
        self, s: _State, pod: Pod, node_name: str, allocation: AllocationResult | None
    ) -> Status | None:
        """bindClaim for the extended-resource claim: create it (if still in memory), allocate and
        reserve it, then record it in the pod's status; the claim stays in s.claims so that
        Unreserve deletes it when anything fails."""
        assert s.extended is not None
        writer = self.dra.claim_writer()
        store = self.dra.store
        claim = s.claims[s.extended]
        node_claim = s.node_extended.get(node_name)
        try:
            if claim.name == IN_MEMORY_CLAIM_NAME:
                if node_claim is None:
                    return _error(f"extended resource claim not found for node {node_name}")
                claim = await writer.create_extended_claim(node_claim[0], pod)
                s.claims[s.extended] = claim
            updated = await writer.bind_claim(claim, allocation, pod)
            store.assume_claim(updated)
            s.claims[s.extended] = updated
            mappings = node_claim[1] if node_claim is not None else ()
            if not mappings:
                return _error(
                    f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                    "ExtendedResourceClaimStatus"
                )
            await writer.set_extended_claim_status(pod, ExtendedResourceClaimStatus(updated.name, mappings))
        except ClaimWriteError as e:
            return _error(str(e))
        finally:
            if allocation is not None:
                store.remove_pending_allocation(s.extended_uid)
        return None


def allocator_features(features: Features) -> AllocatorFeatures:
    """AllocatorFeatures: the gates the allocator follows, and the release's allocator changes."""
    return AllocatorFeatures(
        admin_access=features.enabled(DRA_ADMIN_ACCESS),
        prioritized_list=features.enabled(DRA_PRIORITIZED_LIST),
        partitionable_devices=features.enabled(DRA_PARTITIONABLE_DEVICES),
        device_taints=features.enabled(DRA_DEVICE_TAINTS),
        consumable_capacity=features.enabled(DRA_CONSUMABLE_CAPACITY),
        claim_config_once=features.behaviour.dra_claim_config_once,
        binding_conditions=features.enabled(DRA_DEVICE_BINDING_CONDITIONS)
        and features.enabled(DRA_RESOURCE_CLAIM_DEVICE_STATUS),
    )


def compute_score(claims: Sequence[ResourceClaim], allocation: Sequence[AllocationResult]) -> int:
    """computeScore: prefer nodes where earlier firstAvailable subrequests could be used."""
    total = 0
    for claim, result in zip(claims, allocation, strict=True):
        picked = {r.request for r in result.results if "/" in r.request}
        for request in claim.requests:
            for k, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in picked:
                    total += FIRST_AVAILABLE_MAX_SIZE - k
    return total
