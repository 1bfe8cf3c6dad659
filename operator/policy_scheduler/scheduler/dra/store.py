"""The DRA objects the scheduler knows, fed by informers (or tests/simulate), plus in-flight claims.

Plays upstream's DRA manager: listers for slices, classes and claims, the assume cache for claims
the scheduler wrote, and `inFlightAllocations` (claims allocated in Reserve, not yet written) so
two pods never get the same device between Reserve and PreBind.
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.scheduler.dra.extended import ExtendedResourceCache, is_extended_resource_claim_of
from policy_scheduler.scheduler.dra.model import DeviceClass, DeviceId, ResourceClaim, ResourceSlice
from policy_scheduler.scheduler.model import Pod


class DraStore:
    def __init__(self) -> None:
        self._slices: dict[str, ResourceSlice] = {}
        self._classes: dict[str, DeviceClass] = {}
        self._claims: dict[str, ResourceClaim] = {}
        self._assumed: dict[str, ResourceClaim] = {}  # what we wrote, until the informer catches up
        self._in_flight: dict[str, ResourceClaim] = {}  # claim uid -> claim with its allocation
        self._slice_list: tuple[ResourceSlice, ...] | None = None
        self._allocated: frozenset[DeviceId] | None = None
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
        self._claims[c.key] = c
        self._allocated = None

    def delete_claim(self, namespace: str, name: str) -> None:
        self._assumed.pop(f"{namespace}/{name}", None)
        if self._claims.pop(f"{namespace}/{name}", None) is not None:
            self._allocated = None

    def _slices_changed(self) -> None:
        self._slice_list = None
        self.slices_generation += 1

    # ---- listers ---------------------------------------------------------------------------------

    def slices(self) -> Sequence[ResourceSlice]:
        if self._slice_list is None:
            self._slice_list = tuple(self._slices[name] for name in sorted(self._slices))
        return self._slice_list

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
            ids: set[DeviceId] = set()
            for claim in (*self._claims.values(), *self._in_flight.values()):
                if claim.allocation is None:
                    continue
                for r in claim.allocation.results:
                    if not r.admin_access:
                        ids.add(DeviceId(r.driver, r.pool, r.device))
            self._allocated = frozenset(ids)
        return self._allocated

    # ---- in-flight allocations (Reserve .. PreBind) -----------------------------------------------

    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        self._in_flight[claim.uid] = claim
        self._allocated = None

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def remove_pending_allocation(self, uid: str) -> None:
        if self._in_flight.pop(uid, None) is not None:
            self._allocated = None

    def assume_claim(self, claim: ResourceClaim) -> None:
        """AssumeClaimAfterAPICall: what we wrote counts until the informer reports it (or newer)."""
        self._assumed[claim.key] = claim
        self._claims[claim.key] = claim
        self._allocated = None


def _version(c: ResourceClaim) -> int:
    """resourceVersions compared as integers, as upstream's assume cache does (etcd revisions)."""
    try:
        return int(c.resource_version)
    except ValueError:
        return -1
