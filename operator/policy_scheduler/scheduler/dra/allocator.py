"""The structured allocator (dynamic-resource-allocation/structured, stable variant, v0.35.4).

`Allocator` is built once per scheduling cycle (PreFilter) from the devices already in use, the
classes and the slices; `allocate(node_name, visible_slices, claims)` then tries one node (or one
group of nodes that see exactly the same slices). It is the same depth-first search as upstream:
requests in order, devices in pool/slice order, backtracking on constraints, `firstAvailable`
subrequests tried in order. Selector results are cached across nodes: they do not depend on the
node (per-device node selection is alpha and off).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from policy_scheduler.scheduler.dra.model import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceId,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
    SelectorCompiler,
    SelectorError,
)
from policy_scheduler.scheduler.dra.pools import Pool, gather_pools
from policy_scheduler.scheduler.model import NodeSelectorTerm, Requirement


class AllocationError(Exception):
    """Something is wrong with a claim or class (upstream returns an error: the cycle aborts)."""


class FailedOnNode(AllocationError):
    """ErrFailedAllocationOnNode: not fatal, other nodes may still work."""


class AllocationTimeout(AllocationError):
    """The per-node search ran past the profile's filterTimeout (context.DeadlineExceeded)."""


@dataclass(frozen=True, slots=True)
class Features:
    """structured.Features that v1.35 enables by default (AdminAccess and PrioritizedList are beta, on)."""

    admin_access: bool = True
    prioritized_list: bool = True


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


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: str | None  # name of the request holding this subrequest
    device_class: DeviceClass | None
    num_devices: int = 0
    all_devices: list[tuple[DeviceId, Device, ResourceSlice]] = field(default_factory=list)
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
    admin_access: bool | None


@dataclass(slots=True)
class _MatchAttribute:
    request_names: frozenset[str]
    attribute_name: str
    attribute: DeviceAttribute | None = None
    num_devices: int = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.request_names:
            return True
        if not sub:
            return request in self.request_names
        return request in self.request_names or f"{request}/{sub}" in self.request_names

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


def lookup_attribute(device: Device, device_id: DeviceId, name: str) -> DeviceAttribute | None:
    """A fully qualified name matches the attribute as written or, in the driver's domain, unqualified."""
    if (attr := device.attributes.get(name)) is not None:
        return attr
    domain, sep, rest = name.partition("/")
    if not sep or domain != device_id.driver:
        return None
    return device.attributes.get(rest)


def _kobj(claim: ResourceClaim) -> str:
    return f"{claim.namespace}/{claim.name}"


class Allocator:
    def __init__(
        self,
        allocated: frozenset[DeviceId],
        device_class: Callable[[str], DeviceClass | None],
        all_slices: Sequence[ResourceSlice],
        compile_selector: SelectorCompiler,
        features: Features = Features(),
        evaluated: dict[tuple[str, DeviceId], bool] | None = None,
    ) -> None:
        self.allocated = allocated
        self.device_class = device_class
        self.all_slices = all_slices
        self.compile_selector = compile_selector
        self.features = features
        self._compiled: dict[str, DeviceSelector | SelectorError] = {}
        # (device, claim index, request index, subrequest index) -> selectors match; node independent.
        self._matches: dict[tuple[DeviceId, int, int, int], bool] = {}
        # (expression, device) -> result: the caller may keep it across cycles while slices stay.
        self.evaluated: dict[tuple[str, DeviceId], bool] = {} if evaluated is None else evaluated

    def allocate(
        self,
        node_name: str,
        visible: Sequence[ResourceSlice],
        claims: Sequence[ResourceClaim],
        deadline: tuple[Callable[[], float], float] | None = None,
    ) -> list[AllocationResult] | None:
        """One AllocationResult per claim, or None when the devices do not suffice.

        `deadline` is (clock, time): past it the search stops with AllocationTimeout."""
        run = _Run(self, node_name, gather_pools(visible, self.all_slices), claims)
        run.deadline = deadline
        return run.run()

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
        self, owner: Allocator, node_name: str, pools: list[Pool], claims: Sequence[ResourceClaim]
    ) -> None:
        self.a = owner
        self.node_name = node_name
        self.pools = pools
        self.claims = claims
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[_MatchAttribute]] = []
        self.allocating: dict[DeviceId, set[int]] = {}
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
            constraints: list[_MatchAttribute] = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute is None:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, constraint #{i}: "
                        "empty constraint (unsupported constraint type?)"
                    )
                constraints.append(_MatchAttribute(frozenset(c.requests), c.match_attribute))
            self.constraints.append(constraints)
        if not self._allocate_one(0, 0, 0, 0, False):
            if any(p.invalid for p in self.pools):
                raise FailedOnNode("invalid resource pools were encountered")
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
                acc = _Request(sub.name, sub.device_class_name, sub.selectors, sub.allocation_mode, sub.count)
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
                        if self._selectable(ci, ri, si, data, did, device):
                            data.all_devices.append((did, device, s))
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
            did, device, s = data.all_devices[di]
            undo = self._allocate_device(ci, ri, si, did, device, s, must=True)
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
                    if not self._selectable(ci, ri, si, data, did, device):
                        continue
                    undo = self._allocate_device(ci, ri, si, did, device, s, must=False)
                    if undo is None:
                        continue
                    if self._allocate_one(ci, ri, si, di + 1, in_sub):
                        return True
                    undo()
        return False

    def _in_use(self, did: DeviceId) -> bool:
        return did in self.a.allocated or bool(self.allocating.get(did))

    def _selectable(
        self, ci: int, ri: int, si: int, data: _RequestData, did: DeviceId, device: Device
    ) -> bool:
        if device.binding_conditions:
            return False
        key = (did, ci, ri, si)
        cached = self.a._matches.get(key)
        if cached is not None:
            return cached
        match = True
        if data.device_class is not None:
            match = self._selectors_match(ci, did, device, data.device_class, data.device_class.selectors)
        if match:
            match = self._selectors_match(ci, did, device, None, data.request.selectors)
        self.a._matches[key] = match
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
        self, ci: int, ri: int, si: int, did: DeviceId, device: Device, s: ResourceSlice, *, must: bool
    ) -> Callable[[], None] | None:
        data = self.request_data[(ci, ri, si)]
        req = data.request
        if req.admin_access:
            if ci in self.allocating.get(did, ()):
                return None
        elif self._in_use(did):
            return None
        if device.consumes_counters:  # DRAPartitionableDevices is off
            return None
        base, sub = (data.parent, req.name) if data.parent is not None else (req.name, "")
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, device, did):
                if must:
                    raise AllocationError(
                        f"claim {_kobj(self.claims[ci])}, request {req.name}: cannot add device {did} "
                        "because a claim constraint would not be satisfied"
                    )
                for e in constraints[:i]:
                    e.remove(base, sub)
                return None
        self.allocating.setdefault(did, set()).add(ci)
        results = self.results[ci]
        before = len(results)
        results.append(_Result(data.request_name(), base, sub, did, s, True if req.admin_access else None))

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub)
            self.allocating[did].discard(ci)
            del results[before:]

        return undo

    # ---- results ---------------------------------------------------------------------------------

    def _result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        devices = self.results[ci]
        return AllocationResult(
            tuple(
                DeviceRequestAllocationResult(
                    r.request_name, r.id.driver, r.id.pool, r.id.device, r.admin_access
                )
                for r in devices
            ),
            self._node_selector(devices),
        )

    def _node_selector(self, devices: list[_Result]) -> tuple[NodeSelectorTerm, ...] | None:
        """createNodeSelector: a node-local device pins the node; selectors of the rest are ANDed."""
        fields: list[Requirement] = []
        exprs: list[Requirement] = []
        for r in devices:
            s = r.slice
            if s.node_name:
                return (NodeSelectorTerm(match_fields=(Requirement("metadata.name", "In", (s.node_name,)),)),)
            if s.node_selector is not None:
                if len(s.node_selector) > 1:
                    raise AllocationError(
                        f"unsupported ResourceSlice.NodeSelector with {len(s.node_selector)} terms"
                    )
                for term in s.node_selector:
                    _add_new(term.match_fields, fields)
                    _add_new(term.match_expressions, exprs)
        if fields or exprs:
            return (NodeSelectorTerm(match_expressions=tuple(exprs), match_fields=tuple(fields)),)
        return None


def _add_new(src: tuple[Requirement, ...], dst: list[Requirement]) -> None:
    for req in src:
        if not any(
            d.key == req.key and d.operator == req.operator and set(d.values) == set(req.values) for d in dst
        ):
            dst.append(req)
