"""What DynamicResources needs from outside the core: the store, a CEL compiler, a claim writer."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Protocol

from policy_scheduler.scheduler.dra.extended import ExtendedResourceClaimStatus
from policy_scheduler.scheduler.dra.model import (
    CLAIM_FINALIZER,
    AllocationResult,
    ConsumerReference,
    ResourceClaim,
    SelectorCompiler,
    no_cel_compiler,
)
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.model import Pod


class ClaimWriteError(Exception):
    """Writing a claim failed; the text is what PreBind reports (upstream's wording)."""


class ClaimWriter(Protocol):
    async def bind_claim(
        self, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod
    ) -> ResourceClaim:
        """bindClaim: add the finalizer and allocation (if given) and reserve the claim for the pod."""
        ...

    def deallocate(self, claim: ResourceClaim) -> None:
        """PostFilter: clear allocation and reservedFor (sent in the background, cycles never wait)."""
        ...

    def unreserve(self, claim: ResourceClaim, pod_uid: str) -> None:
        """Unreserve: drop the pod from reservedFor (sent in the background)."""
        ...

    async def create_extended_claim(self, claim: ResourceClaim, pod: Pod) -> ResourceClaim:
        """createExtendedResourceClaimInAPI: create the claim for the pod's extended resources
        (owned by the pod, annotated, named after it) without allocation; the created claim."""
        ...

    async def set_extended_claim_status(self, pod: Pod, status: ExtendedResourceClaimStatus) -> None:
        """patchPodExtendedResourceClaimStatus: record the claim and its request mappings in
        pod.status.extendedResourceClaimStatus."""
        ...

    def delete_claim(self, claim: ResourceClaim) -> None:
        """deleteClaim: drop the finalizer, then delete (a claim created for extended resources
        that is not used after all; sent in the background)."""
        ...


def reserved(claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod) -> ResourceClaim:
    """The claim as bindClaim writes it; ClaimWriteError with upstream's text when it cannot."""
    if claim.deletion_timestamp is not None:
        raise ClaimWriteError(f"claim {claim.key} got deleted in the meantime")
    finalizers = claim.finalizers
    if allocation is not None:
        if claim.allocation is not None:
            raise ClaimWriteError(f"claim {claim.key} got allocated elsewhere in the meantime")
        if CLAIM_FINALIZER not in finalizers:
            finalizers = (*finalizers, CLAIM_FINALIZER)
    return replace(
        claim,
        finalizers=finalizers,
        allocation=allocation if allocation is not None else claim.allocation,
        reserved_for=(*claim.reserved_for, ConsumerReference("pods", pod.name, pod.uid)),
    )


# The API server's generateName: the base cut to 58 characters, then 5 of this alphabet
# (names.SimpleNameGenerator with utilrand.String).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_BASE = 58


def generated_name(base: str, seed: str) -> str:
    """A name as the API server generates one, its random suffix derived from `seed` so that a
    simulation is repeatable."""
    digest = hashlib.sha256(seed.encode()).digest()
    suffix = "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])
    return base[:_MAX_GENERATED_BASE] + suffix


class StoreClaimWriter:
    """Writes into the store only: simulations and tests, where the store is the cluster."""

    def __init__(self, store: DraStore) -> None:
        self.store = store
        # What the pods' status would show: pod key -> extendedResourceClaimStatus.
        self.extended_claim_statuses: dict[str, ExtendedResourceClaimStatus] = {}

    async def bind_claim(
        self, claim: ResourceClaim, allocation: AllocationResult | None, pod: Pod
    ) -> ResourceClaim:
        current = self.store.claim(claim.namespace, claim.name) or claim
        updated = reserved(current, allocation, pod)
        self.store.upsert_claim(updated)
        return updated

    def deallocate(self, claim: ResourceClaim) -> None:
        self.store.upsert_claim(replace(claim, allocation=None, reserved_for=()))

    def unreserve(self, claim: ResourceClaim, pod_uid: str) -> None:
        kept = tuple(r for r in claim.reserved_for if r.uid != pod_uid)
        self.store.upsert_claim(replace(claim, reserved_for=kept))

    async def create_extended_claim(self, claim: ResourceClaim, pod: Pod) -> ResourceClaim:
        name = generated_name(f"{pod.name}-extended-resources-", f"{pod.namespace}/{pod.name}/{pod.uid}")
        created = replace(claim, name=name, uid=f"{pod.uid}-{name}", allocation=None, reserved_for=())
        self.store.upsert_claim(created)
        return created

    async def set_extended_claim_status(self, pod: Pod, status: ExtendedResourceClaimStatus) -> None:
        self.extended_claim_statuses[pod.key] = status

    def delete_claim(self, claim: ResourceClaim) -> None:
        self.store.delete_claim(claim.namespace, claim.name)


@dataclass(frozen=True, slots=True)
class DraServices:
    store: DraStore = field(default_factory=DraStore)
    # Compiles CEL device selectors; the default rejects every selector (never a silent pass).
    compile_selector: SelectorCompiler = no_cel_compiler
    # None: write into the store (a StoreClaimWriter, made once so what it records is kept).
    writer: ClaimWriter | None = None

    def __post_init__(self) -> None:
        if self.writer is None:
            object.__setattr__(self, "writer", StoreClaimWriter(self.store))

    def claim_writer(self) -> ClaimWriter:
        assert self.writer is not None
        return self.writer
