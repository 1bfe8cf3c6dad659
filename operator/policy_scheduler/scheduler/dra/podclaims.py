"""The pod's claims: the one accessor of pod.spec.resourceClaims, and resourceclaim.Name/IsForPod."""

from __future__ import annotations

from policy_scheduler.scheduler.dra.model import ResourceClaim
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.storage.volumes import PodResourceClaim


class ClaimUnavailable(Exception):
    """The pod cannot be scheduled yet because of one of its claims (text as upstream)."""


def pod_resource_claims(pod: Pod) -> tuple[PodResourceClaim, ...]:
    """pod.spec.resourceClaims: the only place DRA reads them (one line to repoint at merge)."""
    return pod.resource_claims


def has_claims(pod: Pod) -> bool:
    return bool(pod_resource_claims(pod))


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str | None, bool]:
    """resourceclaim.Name: (claim name or None when none was generated, must check owner)."""
    if pod_claim.resource_claim_name:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name:
        for name, generated in pod.resource_claim_statuses:
            if name == pod_claim.name:
                return generated or None, True
        raise ClaimUnavailable(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimUnavailable(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.name}": '
        "none of the supported fields are set"
    )


def check_for_pod(pod: Pod, claim: ResourceClaim) -> None:
    """resourceclaim.IsForPod: a generated claim must be controlled by the pod."""
    if claim.owner_pod_uid != pod.uid:
        raise ClaimUnavailable(
            f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
