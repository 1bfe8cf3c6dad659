"""Claims that need a DRA feature this scheduler does not implement, while the release has it on.

kube-scheduler would allocate them with the feature's semantics; we cannot, so the pod waits with
a reason naming the feature instead of getting devices chosen without it. With the gate off the
API server drops the fields and upstream ignores them, so nothing is reported then.
"""

from __future__ import annotations

from policy_scheduler.scheduler.dra.model import ResourceClaim

CONSUMABLE_CAPACITY = "DRAConsumableCapacity"


def unsupported_reason(claim: ResourceClaim, consumable_capacity: bool) -> str | None:
    """Why `claim` cannot be allocated here, or None."""
    if not consumable_capacity:
        return None
    for request in claim.requests:
        subs = [(f"{request.name}/{s.name}", s.capacity_requests) for s in request.first_available]
        exact = [(request.name, request.exactly.capacity_requests)] if request.exactly is not None else []
        for name, capacity in (*exact, *subs):
            if capacity:
                return (
                    f"resource claim {claim.key}, request {name}: capacity requests need "
                    f"{CONSUMABLE_CAPACITY}, which policy-scheduler does not implement"
                )
    for i, constraint in enumerate(claim.constraints):
        if constraint.distinct_attribute is not None:
            return (
                f"resource claim {claim.key}, constraint #{i}: distinctAttribute needs "
                f"{CONSUMABLE_CAPACITY}, which policy-scheduler does not implement"
            )
    return None
