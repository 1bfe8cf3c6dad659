"""The DRA objects the scheduler knows, fed by informers (or tests/simulate), plus in-flight claims.

Plays upstream's DRA manager: listers for slices, classes and claims, the assume cache for claims
the scheduler wrote, and `inFlightAllocations` (claims allocated in Reserve, not yet written) so
two pods never get the same device between Reserve and PreBind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TypeVar

from policy_scheduler.scheduler.dra.extended import ExtendedResourceCache, is_extended_resource_claim_of
from policy_scheduler.scheduler.dra.model import (
    AllocationResult,
    DeviceClass,
    DeviceId,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)
from policy_scheduler.scheduler.model import Pod


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """GatherAllocatedState with DRAConsumableCapacity: devices allocated to one claim, devices
    with shares allocated, and what those shares consume per device."""

    devices: frozenset[DeviceId]
    shared: frozenset[DeviceId]
    aggregated: Mapping[DeviceId, Mapping[str, Decimal]]


_K = TypeVar("_K")


class DraStore:
    def __init__(self) -> None:
        self._slices: dict[str, ResourceSlice] = {}
        self._classes: dict[str, DeviceClass] = {}
        self._claims: dict[str, ResourceClaim] = {}
        self._assumed: dict[str, ResourceClaim] = {}  # what we wrote, until the informer catches up
        self._in_flight: dict[str, ResourceClaim] = {}  # claim uid -> claim with its allocation
        self._slice_list: tuple[ResourceSlice, ...] | None = None
        self._taint_rules: dict[str, DeviceTaintRule] = {}
        self._patched_list: tuple[ResourceSlice, ...] | None = None
        self._allocated: frozenset[DeviceId] | None = None
        self._allocated_state: AllocatedState | None = None
        # What the allocations of _claims and _in_flight hold, kept as they change (upstream's
        # allocatedDevices tracker) so a cycle does not walk every claim: per device, how many
        # results hold it whole, how many as a share, and what its shares consume.
        self._held = _Held()
        # Which class serves which extended resource name (DRAExtendedResource).
        self.extended_resources = ExtendedResourceCache()
        # Bumped on every slice change so callers can cache per-slice indexes.
        self.slices_generation = 0

    # ---- informer side ---------------------------------------------------------------------------

    def upsert_slice(self, s: ResourceSlice) -> None:
        self._slices[s.name] = s
        self._slices_changed()

    def delete_slice(self, name: str) -> None:
        if self._slices.pop(name, None) is not None:
            self._slices_changed()

    def upsert_class(self, c: DeviceClass) -> None:
        self.extended_resources.upsert(c, self._classes.get(c.name))
        self._classes[c.name] = c

    def delete_class(self, name: str) -> None:
        gone = self._classes.pop(name, None)
        if gone is not None:
            self.extended_resources.delete(gone)

    def upsert_claim(self, c: ResourceClaim) -> None:
        """An informer event; older than a claim we wrote (assume cache), it is ignored."""
        assumed = self._assumed.get(c.key)
        if assumed is not None:
            if assumed.uid == c.uid and _version(c) < _version(assumed):
                return
            del self._assumed[c.key]
        self._set_claim(c)

    def _set_claim(self, c: ResourceClaim) -> None:
        old = self._claims.get(c.key)
        self._claims[c.key] = c
        self._held_changed(old, c)

    def _held_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        old_allocation = old.allocation if old is not None else None
        new_allocation = new.allocation if new is not None else None
        if old_allocation is new_allocation:
            return
        if old_allocation is not None:
            self._held.add(old_allocation, -1)
        if new_allocation is not None:
            self._held.add(new_allocation, 1)
        self._allocated = self._allocated_state = None

    def delete_claim(self, namespace: str, name: str) -> None:
        self._assumed.pop(f"{namespace}/{name}", None)
        self._held_changed(self._claims.pop(f"{namespace}/{name}", None), None)

    def upsert_taint_rule(self, rule: DeviceTaintRule) -> None:
        self._taint_rules[rule.name] = rule
        self._slices_changed()

    def delete_taint_rule(self, name: str) -> None:
        if self._taint_rules.pop(name, None) is not None:
            self._slices_changed()

    def _slices_changed(self) -> None:
        self._slice_list = None
        self._patched_list = None
        self.slices_generation += 1

    # ---- listers ---------------------------------------------------------------------------------

    def slices(self, taint_rules: bool = False) -> Sequence[ResourceSlice]:
        """The slices by name; with `taint_rules` (DRADeviceTaintRules), each DeviceTaintRule's
        taint added to the devices it selects (upstream's ListWithDeviceTaintRules)."""
        if self._slice_list is None:
            self._slice_list = tuple(self._slices[name] for name in sorted(self._slices))
        if not taint_rules or not self._taint_rules:
            return self._slice_list
        if self._patched_list is None:
            rules = [self._taint_rules[name] for name in sorted(self._taint_rules)]
            self._patched_list = tuple(_patched(s, rules) for s in self._slice_list)
        return self._patched_list

    def device_class(self, name: str) -> DeviceClass | None:
        return self._classes.get(name)

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get(f"{namespace}/{name}")

    def claims(self) -> Sequence[ResourceClaim]:
        return tuple(self._claims.values())

    def extended_resource_claim(self, pod: Pod) -> ResourceClaim | None:
        """findExtendedResourceClaim: the claim created for the pod's extended resources, if any."""
        for claim in self._claims.values():
            if is_extended_resource_claim_of(claim, pod):
                return claim
        return None

    def allocated_devices(self) -> frozenset[DeviceId]:
        """ListAllAllocatedDevices: devices of allocated and in-flight claims (admin access excluded)."""
        if self._allocated is None:
            self._allocated = frozenset((*self._held.whole, *self._held.shares))
        return self._allocated

    def allocated_state(self) -> AllocatedState:
        """foreachAllocatedDevice with DRAConsumableCapacity on: a result with a shareID is a share."""
        if self._allocated_state is None:
            held = self._held
            self._allocated_state = AllocatedState(
                frozenset(held.whole),
                frozenset(held.shares),
                {did: dict(total) for did, total in held.consumed.items()},
            )
        return self._allocated_state

    # ---- in-flight allocations (Reserve .. PreBind) -----------------------------------------------

    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        old = self._in_flight.get(claim.uid)
        self._in_flight[claim.uid] = claim
        self._held_changed(old, claim)

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def remove_pending_allocation(self, uid: str) -> None:
        self._held_changed(self._in_flight.pop(uid, None), None)

    def assume_claim(self, claim: ResourceClaim) -> None:
        """AssumeClaimAfterAPICall: what we wrote counts until the informer reports it (or newer)."""
        self._assumed[claim.key] = claim
        self._set_claim(claim)


class _Held:
    """Counts of the devices that allocations hold (admin access excluded)."""

    def __init__(self) -> None:
        self.whole: dict[DeviceId, int] = {}
        self.shares: dict[DeviceId, int] = {}
        # Per device: what its shares with a consumed capacity consume; how many such shares
        # there are, and how many name each capacity (an entry or name goes with the last).
        self.consumed: dict[DeviceId, dict[str, Decimal]] = {}
        self._consumers: dict[DeviceId, int] = {}
        self._named: dict[tuple[DeviceId, str], int] = {}

    def add(self, allocation: AllocationResult, sign: int) -> None:
        for r in allocation.results:
            if r.admin_access:
                continue
            did = DeviceId(r.driver, r.pool, r.device)
            if r.share_id is None:
                _count(self.whole, did, sign)
                continue
            _count(self.shares, did, sign)
            if r.consumed_capacity is None:
                continue
            total = self.consumed.setdefault(did, {})
            for name, value in r.consumed_capacity.items():
                total[name] = total.get(name, Decimal(0)) + sign * value
                if _count(self._named, (did, name), sign) == 0:
                    del total[name]
            if _count(self._consumers, did, sign) == 0:
                del self.consumed[did]


def _count(counts: dict[_K, int], key: _K, sign: int) -> int:
    n = counts.get(key, 0) + sign
    if n:
        counts[key] = n
    else:
        del counts[key]
    return n


def _patched(s: ResourceSlice, rules: Sequence[DeviceTaintRule]) -> ResourceSlice:
    """applyPatches (resourceslice/tracker): the slice itself when no rule selects its devices."""
    devices = list(s.devices)
    changed = False
    for rule in rules:
        for k, device in enumerate(devices):
            if rule.applies(s.driver, s.pool.name, device.name):
                devices[k] = replace(device, taints=(*device.taints, rule.taint))
                changed = True
    return replace(s, devices=tuple(devices)) if changed else s


def _version(c: ResourceClaim) -> int:
    """resourceVersions compared as integers, as upstream's assume cache does (etcd revisions)."""
    try:
        return int(c.resource_version)
    except ValueError:
        return -1
