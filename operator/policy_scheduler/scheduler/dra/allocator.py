"""The structured allocator (dynamic-resource-allocation/structured, stable variant, v0.37.2).

`Allocator` is built once per scheduling cycle (PreFilter) from the devices already in use, the
classes and the slices; `allocate(node_name, visible_slices, claims)` then tries one node (or one
group of nodes that see exactly the same slices). It is the same depth-first search as upstream:
requests in order, devices in pool/slice order, backtracking on constraints, `firstAvailable`
subrequests tried in order. With DRAPartitionableDevices, devices draw on their pool's shared
counters (those of allocated devices are already spent); with DRADeviceTaints, a device tainted
NoSchedule or NoExecute goes only to a request that tolerates the taint. Selector results are
cached across nodes: they do not depend on the node (per-device node selection is checked apart).
Nodes of one shape (shapes.py) are searched once per Allocator: the others get that answer
re-targeted to their devices.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from policy_scheduler.scheduler.dra.capacity import (
    Capacity,
    CapacityError,
    consumed_from_request,
    request_fits,
)
from policy_scheduler.scheduler.dra.model import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAttribute,
    DeviceClass,
    DeviceConfiguration,
    DeviceId,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
    SelectorCompiler,
    SelectorError,
)
from policy_scheduler.scheduler.dra.pools import (
    NodeMatcher,
    Pool,
    device_targets_node,
    node_matcher,
)
from policy_scheduler.scheduler.dra.shapes import NodePools, PlacedResults, PoolCache
from policy_scheduler.scheduler.model import Node, NodeSelectorTerm, Requirement

# counter set -> counter -> quantity (upstream's counterSets for one pool).
_Counters = dict[str, dict[str, Decimal]]


class AllocationError(Exception):
    """Something is wrong with a claim or class (upstream returns an error: the cycle aborts)."""


class FailedOnNode(AllocationError):
    """ErrFailedAllocationOnNode: not fatal, other nodes may still work."""


class AllocationTimeout(AllocationError):
    """The per-node search ran past the profile's filterTimeout (context.DeadlineExceeded)."""


@dataclass(frozen=True, slots=True)
class Features:
    """structured.Features; the defaults are v1.35's (AdminAccess and PrioritizedList on)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = False
    device_taints: bool = False
    # v1.37's allocator adds a claim config once and clears `requests` of one that covers all.
    claim_config_once: bool = False
    consumable_capacity: bool = False
    # DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, which we do not implement:
    # devices with binding conditions are still never allocated, but when one was passed over
    # and nothing else fits, the node's reason names the feature.
    binding_conditions: bool = False


# The reason when devices with binding conditions were passed over and nothing else fits.
BINDING_CONDITIONS_UNSUPPORTED = (
    "cannot allocate all claims: devices with binding conditions need DRADeviceBindingConditions, "
    "which policy-scheduler does not implement"
)


@dataclass(frozen=True, slots=True)
class _Request:
    """requestAccessor: an exact request or one subrequest."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...]
    allocation_mode: str
    count: int
    admin_access: bool = False
    has_admin_access: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: Capacity | None = None


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: str | None  # name of the request holding this subrequest
    device_class: DeviceClass | None
    num_devices: int = 0
    all_devices: list[tuple[DeviceId, Device, ResourceSlice, Pool]] = field(default_factory=list)
    selected_sub: int = 0

    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass(slots=True)
class _Result:
    request_name: str
    base_request: str
    sub_request: str
    id: DeviceId
    slice: ResourceSlice
    device: Device
    admin_access: bool | None
    tolerations: tuple[DeviceToleration, ...]
    share_id: str | None = None
    consumed_capacity: Capacity | None = None


def _constraint_applies(names: frozenset[str], request: str, sub: str) -> bool:
    """A constraint without requests covers all; else the request or "<request>/<sub>" is named."""
    if not names:
        return True
    if not sub:
        return request in names
    return request in names or f"{request}/{sub}" in names


@dataclass(slots=True)
class _MatchAttribute:
    request_names: frozenset[str]
    attribute_name: str
    attribute: DeviceAttribute | None = None
    num_devices: int = 0

    def _applies(self, request: str, sub: str) -> bool:
        return _constraint_applies(self.request_names, request, sub)

    def add(self, request: str, sub: str, device: Device, device_id: DeviceId) -> bool:
        if not self._applies(request, sub):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        if self.num_devices == 0:
            self.attribute = attribute
            self.num_devices = 1
            return True
        if self.attribute is None or attribute != self.attribute:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self._applies(request, sub):
            self.num_devices -= 1


@dataclass(slots=True)
class _DistinctAttribute:
    """distinctAttributeConstraint: every device of the requests has a different value."""

    request_names: frozenset[str]
    attribute_name: str
    attributes: list[DeviceAttribute] = field(default_factory=list)

    def _applies(self, request: str, sub: str) -> bool:
        return _constraint_applies(self.request_names, request, sub)

    def add(self, request: str, sub: str, device: Device, device_id: DeviceId) -> bool:
        if not self._applies(request, sub):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None or attribute in self.attributes:
            return False
        self.attributes.append(attribute)
        return True

    def remove(self, request: str, sub: str) -> None:
        if self._applies(request, sub):
            self.attributes.pop()


def lookup_attribute(device: Device, device_id: DeviceId, name: str) -> DeviceAttribute | None:
    """A fully qualified name matches the attribute as written or, in the driver's domain, unqualified."""
    if (attr := device.attributes.get(name)) is not None:
        return attr
    domain, sep, rest = name.partition("/")
    if not sep or domain != device_id.driver:
        return None
    return device.attributes.get(rest)


@dataclass(frozen=True, slots=True)
class _Decided:
    """One shape's answer with positions for devices: per claim, (request, device position, admin
    access, tolerations) per result and the config; None when nothing could be allocated."""

    claims: tuple[ResourceClaim, ...]  # held so that the identity key stays valid
    answer: tuple[tuple[PlacedResults, tuple[DeviceAllocationConfiguration, ...]], ...] | None


def _kobj(claim: ResourceClaim) -> str:
    """klog.KObj: the name alone when there is no namespace."""
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


class Allocator:
    def __init__(
        self,
        allocated: frozenset[DeviceId],
        device_class: Callable[[str], DeviceClass | None],
        all_slices: Sequence[ResourceSlice],
        compile_selector: SelectorCompiler,
        features: Features = Features(),
        evaluated: dict[tuple[str, DeviceId], bool] | None = None,
        shared: frozenset[DeviceId] = frozenset(),
        aggregated: Mapping[DeviceId, Capacity] | None = None,
        pool_cache: PoolCache | None = None,
    ) -> None:
        """`allocated`: devices allocated to one claim; with DRAConsumableCapacity, `shared` are
        devices with shares allocated and `aggregated` what those shares consume. `pool_cache`
        (made for `all_slices` and these features) may be kept while the slices stay."""
        self.allocated = allocated
        self.shared = shared
        self.aggregated: Mapping[DeviceId, Capacity] = aggregated or {}
        self.device_class = device_class
        self.all_slices = all_slices
        self.compile_selector = compile_selector
        self.features = features
        self._compiled: dict[str, DeviceSelector | SelectorError] = {}
        # (device, claim index, request index, subrequest index) -> selectors match; node independent.
        self._matches: dict[tuple[DeviceId, int, int, int], bool] = {}
        # (expression, device) -> result: the caller may keep it across cycles while slices stay.
        self.evaluated: dict[tuple[str, DeviceId], bool] = {} if evaluated is None else evaluated
        # Pool id -> counters left after the devices already allocated (availableCounters).
        self._available: dict[str, _Counters] = {}
        if pool_cache is None or pool_cache.partitionable != features.partitionable_devices:
            pool_cache = PoolCache(features.partitionable_devices)
        self.pool_cache = pool_cache
        # (claims, shape, which devices are allocated) -> the answer, re-targeted to each node.
        self._decided: dict[tuple[object, ...], _Decided] = {}

    def allocate(
        self,
        node_name: str,
        visible: Sequence[ResourceSlice],
        claims: Sequence[ResourceClaim],
        deadline: tuple[Callable[[], float], float] | None = None,
        node: Node | None = None,
    ) -> list[AllocationResult] | None:
        """One AllocationResult per claim, or None when the devices do not suffice.

        `visible` are the slices GatherPools takes for the node (`pools.slice_targets_node`);
        `node` (default: a node of that name without labels) decides per-device node selection.
        `deadline` is (clock, time): past it the search stops with AllocationTimeout."""
        seen = self.pool_cache.node_pools(visible, self.all_slices)
        key = self._shape_key(seen, claims)
        if key is not None and (decided := self._decided.get(key)) is not None:
            return _retarget(decided, seen)
        run = _Run(self, node_name, seen.pools, claims, node_matcher(node or Node(node_name)))
        run.deadline = deadline
        result = run.run()
        if key is not None:
            self._decided[key] = run.decided(seen, result)
        return result

    def _shape_key(self, seen: NodePools, claims: Sequence[ResourceClaim]) -> tuple[object, ...] | None:
        """What the node's answer depends on, when that is its shape and which devices are in use."""
        if seen.shape is None:
            return None
        devices = seen.devices
        shared, aggregated = self.shared, self.aggregated
        if (shared or aggregated) and any(did in shared or did in aggregated for did, _, _ in devices):
            return None
        return (tuple(map(id, claims)), seen.shape, tuple(map(self.allocated.__contains__, seen.dids)))

    def available_counters(self, pool: Pool) -> _Counters:
        """The pool's counters minus what its allocated devices consume, computed once per pool."""
        available = self._available.get(pool.pool_id)
        if available is None:
            available = {cs.name: dict(cs.counters) for cs in pool.counter_sets.values()}
            for s in (*pool.slices, *pool.other_slices):
                for device in s.devices:
                    if not self.is_allocated(DeviceId(s.driver, s.pool.name, device.name)):
                        continue
                    for consumption in device.consumes_counters:
                        counters = available.get(consumption.counter_set)
                        if counters is None:
                            continue
                        for name, value in consumption.counters.items():
                            if name in counters:
                                counters[name] -= value
            self._available[pool.pool_id] = available
        return available

    def is_allocated(self, did: DeviceId) -> bool:
        """IsDeviceAllocated: dedicated, or with shares."""
        return did in self.allocated or did in self.shared or did in self.aggregated

    def selector(self, expression: str) -> DeviceSelector | SelectorError:
        compiled = self._compiled.get(expression)
        if compiled is None:
            try:
                compiled = self.compile_selector(expression)
            except SelectorError as e:
                compiled = e
            self._compiled[expression] = compiled
        return compiled


class _Run:
    """One Allocate call (upstream's `allocator` struct)."""

    def __init__(
        self,
        owner: Allocator,
        node_name: str,
        pools: list[Pool],
        claims: Sequence[ResourceClaim],
        node_matches: NodeMatcher,
    ) -> None:
        self.a = owner
        self.node_name = node_name
        self.node_matches = node_matches
        self.pools = pools
        # Pool id -> counters consumed by the devices being allocated (consumedCounters).
        self.consumed: dict[str, _Counters] = {}
        self.passed_over_binding_conditions = False
        self.claims = claims
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[_MatchAttribute | _DistinctAttribute]] = []
        self.allocating: dict[DeviceId, set[int]] = {}
        # Capacity consumed by the shares being allocated (allocatingCapacity).
        self.allocating_capacity: dict[DeviceId, dict[str, Decimal]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.deadline: tuple[Callable[[], float], float] | None = None
        self._steps = 0

    # ---- validation ------------------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.requests):
                min_devices += self._validate_request(ci, ri, claim, request)
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_kobj(claim)}: number of requested devices {min_devices} exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[_MatchAttribute | _DistinctAttribute] = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute is not None:
                    constraints.append(_MatchAttribute(frozenset(c.requests), c.match_attribute))
                elif c.distinct_attribute is not None and self.a.features.consumable_capacity:
                    constraints.append(_DistinctAttribute(frozenset(c.requests), c.distinct_attribute))
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, constraint #{i}: "
                        "empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(constraints)
        if not self._allocate_one(0, 0, 0, 0, False):
            if any(p.invalid for p in self.pools):
                raise FailedOnNode("invalid resource pools were encountered")
            if self.passed_over_binding_conditions:
                raise FailedOnNode(BINDING_CONDITIONS_UNSUPPORTED)
            return None
        return [self._result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _validate_request(self, ci: int, ri: int, claim: ResourceClaim, request: DeviceRequest) -> int:
        if request.first_available:
            if not self.a.features.prioritized_list:
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {request.name}: has subrequests, but the "
                    "DRAPrioritizedList feature is disabled"
                )
            fewest = None
            for si, sub in enumerate(request.first_available):
                acc = _Request(
                    sub.name,
                    sub.device_class_name,
                    sub.selectors,
                    sub.allocation_mode,
                    sub.count,
                    tolerations=sub.tolerations,
                    capacity_requests=sub.capacity_requests,
                )
                data = self._request_data(ci, ri, si, claim, acc, request.name)
                self.request_data[(ci, ri, si)] = data
                fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
            return fewest or 0
        exact = request.exactly
        if exact is None:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request.name}: "
                "missing device class name (unsupported request type?)"
            )
        acc = _Request(
            request.name,
            exact.device_class_name,
            exact.selectors,
            exact.allocation_mode,
            exact.count,
            bool(exact.admin_access),
            exact.admin_access is not None,
            exact.tolerations,
            exact.capacity_requests,
        )
        data = self._request_data(ci, ri, 0, claim, acc, None)
        self.request_data[(ci, ri, 0)] = data
        return data.num_devices

    def _request_data(
        self, ci: int, ri: int, si: int, claim: ResourceClaim, req: _Request, parent: str | None
    ) -> _RequestData:
        data = _RequestData(req, parent, None)
        name = data.request_name() if parent is None else req.name
        if not self.a.features.admin_access and req.has_admin_access:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: "
                "admin access is requested, but the feature is disabled"
            )
        if not req.device_class_name:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: missing device class name (unsupported request type?)"
            )
        cls = self.a.device_class(req.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: could not retrieve device class "
                f'{req.device_class_name}: deviceclass.resource.k8s.io "{req.device_class_name}" not found'
            )
        data.device_class = cls
        if req.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = req.count
        elif req.allocation_mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid"
                    )
                for s in pool.slices:
                    for device in s.devices:
                        did = DeviceId(s.driver, s.pool.name, device.name)
                        if not self._selectable(ci, ri, si, data, did, device, s):
                            continue
                        # Static capacity only: what is in use is checked when allocating.
                        if self.a.features.consumable_capacity and not self._capacity_fits(
                            ci, data, did, device, static=True
                        ):
                            continue
                        data.all_devices.append((did, device, s, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {name}: unsupported count mode {req.allocation_mode}"
            )
        return data

    # ---- search ----------------------------------------------------------------------------------

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        self._steps += 1
        if self.deadline is not None and self._steps % 16 == 0:
            clock, until = self.deadline
            if clock() > until:
                raise AllocationTimeout("timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            return self._allocate_one(ci + 1, 0, 0, 0, False)
        data = self.request_data[(ci, ri, si)]
        if not in_sub and data.parent is not None:
            # Try the subrequests in order; the first that works is taken.
            sub = 0
            while (ci, ri, sub) in self.request_data:
                if self._allocate_one(ci, ri, sub, di, True):
                    self.request_data[(ci, ri, 0)].selected_sub = sub
                    return True
                sub += 1
            return False
        req = data.request
        all_devices = req.allocation_mode == ALLOCATION_MODE_ALL
        if all_devices and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False)
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if all_devices:
            did, device, s, pool = data.all_devices[di]
            undo = self._allocate_device(ci, ri, si, did, device, s, pool, must=True)
            if undo is None:
                return False
            if self._allocate_one(ci, ri, si, di + 1, in_sub):
                return True
            undo()
            return False
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for device in s.devices:
                    did = DeviceId(pool.driver, pool.pool, device.name)
                    if req.admin_access:
                        if ci in self.allocating.get(did, ()):
                            continue
                    elif self._in_use(did):
                        continue
                    if not self._selectable(ci, ri, si, data, did, device, s):
                        continue
                    if self.a.features.consumable_capacity and not self._capacity_fits(ci, data, did, device):
                        continue
                    undo = self._allocate_device(ci, ri, si, did, device, s, pool, must=False)
                    if undo is None:
                        continue
                    if self._allocate_one(ci, ri, si, di + 1, in_sub):
                        return True
                    undo()
        return False

    def _in_use(self, did: DeviceId) -> bool:
        return did in self.a.allocated or bool(self.allocating.get(did))

    def _selectable(
        self, ci: int, ri: int, si: int, data: _RequestData, did: DeviceId, device: Device, s: ResourceSlice
    ) -> bool:
        if device.binding_conditions:
            self.passed_over_binding_conditions |= self.a.features.binding_conditions
            return False
        key = (did, ci, ri, si)
        match = self.a._matches.get(key)
        if match is None:
            match = True
            if data.device_class is not None:
                match = self._selectors_match(ci, did, device, data.device_class, data.device_class.selectors)
            if match:
                match = self._selectors_match(ci, did, device, None, data.request.selectors)
            self.a._matches[key] = match
        # The only node-dependent part, so it stays out of the cache shared by all nodes.
        if match and s.per_device_node_selection:
            return device_targets_node(device, self.node_matches)
        return match

    def _selectors_match(
        self, ci: int, did: DeviceId, device: Device, cls: DeviceClass | None, selectors: tuple[str, ...]
    ) -> bool:
        for i, expression in enumerate(selectors):
            where = f"class {cls.name}" if cls is not None else f"claim {_kobj(self.claims[ci])}"
            compiled = self.a.selector(expression)
            if isinstance(compiled, SelectorError):
                raise AllocationError(f"{where}: selector #{i}: CEL compile error: {compiled}")
            ok = self.a.evaluated.get((expression, did))
            if ok is None:
                try:
                    ok = compiled(did.driver, device)
                except SelectorError as e:
                    raise AllocationError(f"{where}: selector #{i}: CEL runtime error: {e}") from e
                self.a.evaluated[(expression, did)] = ok
            if not ok:
                return False
        return True

    def _allocate_device(
        self,
        ci: int,
        ri: int,
        si: int,
        did: DeviceId,
        device: Device,
        s: ResourceSlice,
        pool: Pool,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        data = self.request_data[(ci, ri, si)]
        req = data.request
        shareable = self.a.features.consumable_capacity and device.allow_multiple_allocations
        if req.admin_access:
            if not shareable and ci in self.allocating.get(did, ()):
                return None
        elif self._in_use(did):
            return None
        if device.consumes_counters and not self.a.features.partitionable_devices:
            return None
        # A shared device already in use has its counters spent: a further share takes none.
        take_counters = bool(device.consumes_counters) and not (shareable and self._capacity_in_use(did))
        if take_counters and not self._take_counters(pool, device):
            return None

        def release() -> None:
            if take_counters:
                self._release_counters(pool, device)

        if device.taints and self.a.features.device_taints and _taint_prevents_allocation(device, req):
            release()
            return None
        base, sub = (data.parent, req.name) if data.parent is not None else (req.name, "")
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, device, did):
                for e in reversed(constraints[:i]):
                    e.remove(base, sub)
                release()
                if must:
                    raise AllocationError(
                        f"claim {_kobj(self.claims[ci])}, request {req.name}: cannot add device {did} "
                        "because a claim constraint would not be satisfied"
                    )
                return None

        def unconstrain() -> None:
            for c in reversed(constraints):
                c.remove(base, sub)
            release()

        if not shareable:
            self.allocating.setdefault(did, set()).add(ci)
        consumed: dict[str, Decimal] = {}
        share_id = None
        if self.a.features.consumable_capacity:
            if not self._capacity_fits(ci, data, did, device, recheck=True):
                if not shareable:
                    self.allocating[did].discard(ci)
                unconstrain()
                return None
            if shareable:
                try:
                    consumed = consumed_from_request(
                        req.capacity_requests, device.capacity, device.capacity_policies
                    )
                except CapacityError as e:
                    unconstrain()
                    raise AllocationError(
                        f"claim {_kobj(self.claims[ci])}, request {req.name}: computing consumed capacity "
                        f"for device {did}: {e}"
                    ) from None
                share_id = str(uuid.uuid4())
                entry = self.allocating_capacity.setdefault(did, {})
                for name, value in consumed.items():
                    entry[name] = entry.get(name, Decimal(0)) + value
        results = self.results[ci]
        before = len(results)
        results.append(
            _Result(
                data.request_name(),
                base,
                sub,
                did,
                s,
                device,
                True if req.admin_access else None,
                req.tolerations if self.a.features.device_taints else (),
                share_id,
                consumed or None,
            )
        )

        def undo() -> None:
            del results[before:]
            if shareable:
                entry = self.allocating_capacity[did]
                for name, value in consumed.items():
                    entry[name] -= value
                # The entry marks the device as shared while any share of this run holds it.
                if not any(r.id == did for rs in self.results for r in rs):
                    del self.allocating_capacity[did]
            else:
                self.allocating[did].discard(ci)
            unconstrain()

        return undo

    # ---- consumable capacity (DRAConsumableCapacity) ---------------------------------------------

    def _capacity_in_use(self, did: DeviceId) -> bool:
        """deviceCapacityInUse: shares of the device are allocated or being allocated."""
        return did in self.a.aggregated or did in self.a.shared or did in self.allocating_capacity

    def _capacity_fits(
        self,
        ci: int,
        data: _RequestData,
        did: DeviceId,
        device: Device,
        *,
        static: bool = False,
        recheck: bool = False,
    ) -> bool:
        """CmpRequestOverCapacity for the device, next to what its shares consume (unless `static`)."""
        req = data.request
        before: Capacity = {} if static else self.a.aggregated.get(did, {})
        allocating = None if static else self.allocating_capacity.get(did)
        # Nothing asked, no policy, no share yet: each capacity is consumed whole and alone,
        # which fits unless a value is negative (request_fits names that error).
        if (
            not req.capacity_requests
            and not device.capacity_policies
            and not before
            and not allocating
            and all(value >= 0 for value in device.capacity.values())
        ):
            return True
        try:
            return request_fits(
                before, req.capacity_requests, device.capacity, device.capacity_policies, allocating
            )
        except CapacityError as e:
            what = "rechecking" if recheck else "checking"
            raise AllocationError(
                f"claim {_kobj(self.claims[ci])}, request {req.name}: {what} capacity for device {did}: {e}"
            ) from None

    # ---- counters (DRAPartitionableDevices) ------------------------------------------------------

    def _take_counters(self, pool: Pool, device: Device) -> bool:
        """checkAvailableCounters: consume the device's counters unless that overdraws any."""
        available = self.a.available_counters(pool)
        consumed = self.consumed.setdefault(pool.pool_id, {})
        for consumption in device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, value in consumption.counters.items():
                counters[name] = counters.get(name, Decimal(0)) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, Decimal(0)):
                    self._release_counters(pool, device)
                    return False
        return True

    def _release_counters(self, pool: Pool, device: Device) -> None:
        """deallocateCountersForDevice (nothing to do for a device that consumes none)."""
        if not device.consumes_counters:
            return
        consumed = self.consumed[pool.pool_id]
        for consumption in device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, value in consumption.counters.items():
                counters[name] -= value

    # ---- results ---------------------------------------------------------------------------------

    def decided(self, seen: NodePools, result: list[AllocationResult] | None) -> _Decided:
        """The answer with device positions in place of devices (no result has a share)."""
        if result is None:
            return _Decided(tuple(self.claims), None)
        position = seen.position
        return _Decided(
            tuple(self.claims),
            tuple(
                (
                    tuple((r.request_name, position[r.id], r.admin_access, r.tolerations) for r in devices),
                    allocation.config,
                )
                for devices, allocation in zip(self.results, result, strict=True)
            ),
        )

    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        devices = self.results[ci]
        return AllocationResult(
            tuple(
                DeviceRequestAllocationResult(
                    r.request_name,
                    r.id.driver,
                    r.id.pool,
                    r.id.device,
                    r.admin_access,
                    r.tolerations,
                    r.share_id,
                    r.consumed_capacity,
                )
                for r in devices
            ),
            node_selector_for([(r.slice, r.device) for r in devices]),
            self._config(ci, claim),
        )

    def _selected(self, ci: int, ri: int) -> _RequestData:
        data = self.request_data[(ci, ri, 0)]
        if data.parent is not None:
            return self.request_data[(ci, ri, data.selected_sub)]
        return data

    def _config(self, ci: int, claim: ResourceClaim) -> tuple[DeviceAllocationConfiguration, ...]:
        """The class configs (once per class) then the claim's that apply, as upstream's Allocate."""
        config: list[tuple[str, DeviceConfiguration, list[str]]] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for ri in range(len(claim.requests)):
            data = self._selected(ci, ri)
            cls = data.device_class
            if cls is None or not cls.config:  # a class without config adds nothing
                continue
            span = class_ranges.get(cls.name)
            if span is not None:
                for k in range(*span):
                    config[k][2].append(data.request_name())
                continue
            start = len(config)
            config.extend((CONFIG_SOURCE_CLASS, c, [data.request_name()]) for c in cls.config)
            class_ranges[cls.name] = (start, len(config))
        if not config and not claim.config:
            return ()
        names = self._request_names(ci, claim)
        once = self.a.features.claim_config_once
        for entry in claim.config:
            if not entry.requests:
                config.append((CONFIG_SOURCE_CLAIM, entry.config, []))
                continue
            for name, sub in names:
                # Up to v1.36 a claim config is added once per request it names (not just once).
                if name in entry.requests or (sub is not None and sub in entry.requests):
                    config.append((CONFIG_SOURCE_CLAIM, entry.config, list(entry.requests)))
                    if once:
                        break
        out: list[DeviceAllocationConfiguration] = []
        for source, c, requests in config:
            # From v1.37 a config for every request says so with no requests ("empty means all").
            covers_all = (
                once
                and bool(requests)
                and all(name in requests or (sub is not None and sub in requests) for name, sub in names)
            )
            out.append(DeviceAllocationConfiguration(source, c, () if covers_all else tuple(requests)))
        return tuple(out)

    def _request_names(self, ci: int, claim: ResourceClaim) -> list[tuple[str, str | None]]:
        """Per request: its name and, for a firstAvailable request, "<request>/<picked subrequest>"."""
        names: list[tuple[str, str | None]] = []
        for ri, request in enumerate(claim.requests):
            data = self.request_data[(ci, ri, 0)]
            sub = None
            if data.parent is not None:
                sub = f"{request.name}/{request.first_available[data.selected_sub].name}"
            names.append((request.name, sub))
        return names


def node_selector_for(devices: Sequence[tuple[ResourceSlice, Device]]) -> tuple[NodeSelectorTerm, ...] | None:
    """createNodeSelector: a node-local device pins the node; selectors of the rest are ANDed."""
    fields: list[Requirement] = []
    exprs: list[Requirement] = []
    for s, device in devices:
        owner = device if s.per_device_node_selection else s
        if owner.node_name:
            return (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (owner.node_name,)),)),)
        selector = owner.node_selector
        if selector is not None:
            if len(selector) > 1:
                raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(selector)} terms")
            for term in selector:
                _add_new(term.match_fields, fields)
                _add_new(term.match_expressions, exprs)
    if fields or exprs:
        return (NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields)),)
    return None


# Re-targeted answers kept per node while its slices stay; more distinct answers than this (claims
# with ever new request names) start the node's memo afresh.
_RETARGETED_PER_NODE = 64


def _retarget(decided: _Decided, seen: NodePools) -> list[AllocationResult] | None:
    """A shape's answer for another node of that shape: the devices at the same positions."""
    if decided.answer is None:
        return None
    memo = seen.retargeted
    out: list[AllocationResult] = []
    for results, config in decided.answer:
        done = memo.get(results)
        if done is None:
            if len(memo) >= _RETARGETED_PER_NODE:
                memo.clear()
            picked = [seen.devices[k] for _, k, _, _ in results]
            done = memo[results] = (
                tuple(
                    DeviceRequestAllocationResult(
                        name, did.driver, did.pool, did.device, admin_access, tolerations
                    )
                    for (name, _, admin_access, tolerations), (did, _, _) in zip(results, picked, strict=True)
                ),
                node_selector_for([(s, device) for _, device, s in picked]),
            )
        out.append(AllocationResult(done[0], done[1], config))
    return out


def _taint_prevents_allocation(device: Device, request: _Request) -> bool:
    """taintPreventsAllocation: an untolerated NoSchedule or NoExecute taint (other effects are ignored)."""
    return any(
        taint.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)
        and not any(t.tolerates(taint) for t in request.tolerations)
        for taint in device.taints
    )


def _add_new(src: tuple[Requirement, ...], dst: list[Requirement]) -> None:
    for req in src:
        if not any(
            d.key == req.key and d.operator == req.operator and set(d.values) == set(req.values) for d in dst
        ):
            dst.append(req)
