"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources, v1.35.4 .. v1.37.2).

Structured parameters only (no extended resources backed by DRA, no binding conditions, no
consumable capacity). Partitionable devices, device taints and DeviceTaintRules follow their
feature gates (structured.Features, AllocatorFeatures upstream). Claims the pod references
must exist (PreEnqueue); PreFilter checks they are usable and builds the allocator; Filter allocates
per group of nodes that see the same slices; Reserve records in-flight allocations so no device
goes to two pods; PreBind writes allocation + reservedFor through the injected ClaimWriter.
"""

from __future__ import annotations

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
from policy_scheduler.scheduler.selectors.node_matching import match_node_selector_terms
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.gates import (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINT_RULES,
    DRA_DEVICE_TAINTS,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
)

STATE_KEY = "PreFilterDynamicResources"


@dataclass(slots=True)
class _State:
    claims: list[ResourceClaim] = field(default_factory=list)
    to_allocate: list[int] = field(default_factory=list)  # indices into claims
    allocator: Allocator | None = None
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    reserved: dict[int, AllocationResult] = field(default_factory=dict)  # Reserve's picks

    def clone(self) -> _State:
        # Filter adds node results and unavailable claims; dry runs must not leak into the cycle.
        return replace(self, node_allocations=dict(self.node_allocations), unavailable=set(self.unavailable))


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
        self._index: tuple[int, SliceIndex] | None = None
        # CEL results per (expression, device), valid while the slices do not change.
        self._evaluated: tuple[int, dict[tuple[str, DeviceId], bool]] = (-1, {})

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
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, Action.ADD | Action.UPDATE), self._claim_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._pod_hint
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, Action.ADD | Action.UPDATE)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, Action.ADD | Action.UPDATE)),
        ]

    def _claim_hint(self, pod: Pod, old: object, new: object) -> QueueingHint:
        """isSchedulableAfterClaimChange."""
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
        if not has_claims(pod):
            return None, SKIP
        if missing := self.unserved.reason(DRA_API):
            return None, unresolvable(missing)
        try:
            s.claims = self._claims(pod)
        except ClaimUnavailable as e:
            return None, unresolvable(str(e))
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
            )
        return None, SUCCESS

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
        # Claims already allocated must be usable on the node (their allocation's node selector).
        unavailable = np.zeros(len(rows), dtype=bool)
        unavailable_claims: list[tuple[int, np.ndarray]] = []
        for i, claim in enumerate(s.claims):
            if claim.allocation is not None and claim.allocation.node_selector is not None:
                miss = ~match_node_selector_terms(self.table, rows, claim.allocation.node_selector)
                if miss.any():
                    unavailable_claims.append((i, miss))
                    unavailable |= miss
        statuses: list[Status] = []
        index = np.full(len(rows), -1, dtype=np.int32)
        if s.allocator is not None:
            claims = [s.claims[i] for i in s.to_allocate]
            for group in group_rows(self._slice_index(), self.table, rows):
                status = self._allocate(s, group.node_name, group.slices, claims, group.rows, rows)
                if status is not None:
                    index[group.rows] = len(statuses)
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

    def _allocate(
        self,
        s: _State,
        node_name: str,
        slices: Sequence[Any],
        claims: list[ResourceClaim],
        positions: list[int],
        rows: Rows,
    ) -> Status | None:
        assert s.allocator is not None
        timeout = self.typed_args.filter_timeout
        clock = self.handle.clock
        deadline = (clock, clock() + timeout) if timeout else None
        try:
            node = self.table.nodes[self.table.index[node_name]]
            result = s.allocator.allocate(node_name, slices, claims, deadline, node)
        except (FailedOnNode, AllocationTimeout) as e:
            return unresolvable(str(e))
        except AllocationError as e:
            return _error(str(e))
        if result is None or len(result) != len(claims):
            return unresolvable("cannot allocate all claims")
        for p in positions:
            s.node_allocations[self.table.nodes[int(rows[p])].name] = result
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
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            refs = claim.reserved_for
            if not refs or (len(refs) == 1 and refs[0].uid == pod.uid):
                self.dra.claim_writer().deallocate(claim)
                self.dra.store.assume_claim(replace(claim, allocation=None, reserved_for=()))
                return None, unschedulable("deallocation of ResourceClaim completed")
        return None, self._nothing_done("still not schedulable")

    def _nothing_done(self, reason: str) -> Status:
        return unschedulable(reason) if self.explains_nothing_done else unschedulable()

    # ---- Score -----------------------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        out = np.zeros(len(rows), dtype=np.int64)
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.node_allocations:
            return out
        nodes = self.table.nodes
        for p, row in enumerate(rows.tolist()):
            allocation = s.node_allocations.get(nodes[row].name)
            if allocation is not None:
                out[p] = compute_score([s.claims[i] for i in s.to_allocate], allocation)
        return out

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return default_normalize(scores)

    # ---- Reserve / Unreserve ---------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        s: _State | None = state.read(STATE_KEY)
        if s is None or not s.to_allocate:
            return SUCCESS
        allocation = s.node_allocations.get(node_name)
        if allocation is None:
            return _error("claim allocation not found for node")
        if len(allocation) != len(s.to_allocate):
            n = len(s.to_allocate)
            return _error(
                f"internal error, have {len(allocation)} allocations, {n} claims to allocate, want {n} claims"
            )
        store = self.dra.store
        for i, result in zip(s.to_allocate, allocation, strict=True):
            claim = s.claims[i]
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
        for claim in s.claims:
            store.remove_pending_allocation(claim.uid)
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                self.dra.claim_writer().unreserve(claim, pod.uid)

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
