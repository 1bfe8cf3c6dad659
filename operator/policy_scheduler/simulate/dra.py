"""DRA in `simulate`: the scenario's DeviceClasses, ResourceSlices and ResourceClaims in an
in-memory DraStore, and the resource-claim controller's work done in memory.

For every pod claim with resourceClaimTemplateName (and no entry in
status.resourceClaimStatuses yet), the controller creates a ResourceClaim from the template,
owned by the pod and named by GenerateName (pkg/controller/resourceclaim, v1.35.4), and records
the name in the pod's status. The API server's random suffix is derived from the names here,
so a simulation is repeatable. Allocations go to the store (StoreClaimWriter): nothing is
written anywhere. A pod asking for an extended resource a DeviceClass serves gets the claim
kube-scheduler would create for it (DRAExtendedResource); the outcome shows that claim, its
devices and the pod's status.extendedResourceClaimStatus.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from policy_scheduler.apiobjects.dra import (
    claim_from_json,
    extended_claim_status_to_json,
    store_from_manifests,
)
from policy_scheduler.cel.device_selector import compile_selector
from policy_scheduler.scheduler.dra.extended import is_dra_extended_resource_name
from policy_scheduler.scheduler.dra.model import ResourceClaim
from policy_scheduler.scheduler.dra.podclaims import pod_resource_claims
from policy_scheduler.scheduler.dra.services import DraServices, StoreClaimWriter, generated_name
from policy_scheduler.scheduler.dra.store import DraStore
from policy_scheduler.scheduler.model import Pod

CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
KINDS = ("DeviceClass", "ResourceSlice", "DeviceTaintRule", *CLAIM_KINDS)
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
_MAX_BASE_LEN = 57


class DraInputError(ValueError):
    """A DRA object that does not decode (the message says why)."""


def generate_name(pod_name: str, claim_name: str) -> str:
    """The controller's GenerateName for a claim from a template, truncated as upstream does
    (both parts proportionally, and then without the trailing hyphen)."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) <= _MAX_BASE_LEN:
        return base
    n = len(base)
    return (
        pod_name[: len(pod_name) * _MAX_BASE_LEN // n]
        + "-"
        + claim_name[: len(claim_name) * _MAX_BASE_LEN // n]
    )


def generated_claim_name(namespace: str, pod_name: str, claim_name: str) -> str:
    return generated_name(generate_name(pod_name, claim_name), f"{namespace}/{pod_name}/{claim_name}")


def check(obj: Mapping[str, Any]) -> None:
    """Decode one DRA object as simulate will use it; DraInputError when it cannot."""
    try:
        if obj.get("kind") == "ResourceClaimTemplate":
            _claim_from_template(obj, "pod", "pod-uid", "claim", "name")
        else:
            store_from_manifests([obj])
    except (msgspec.ValidationError, ValueError, TypeError, KeyError) as exc:
        raise DraInputError(str(exc)) from None


def _claim_from_template(
    template: Mapping[str, Any], pod_name: str, pod_uid: str, pod_claim: str, name: str
) -> dict[str, Any]:
    spec = template.get("spec") or {}
    meta = spec.get("metadata") or {}
    namespace = template["metadata"]["namespace"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"simulate-{namespace}-{name}",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod_uid, "controller": True}
            ],
            "annotations": {**(meta.get("annotations") or {}), POD_CLAIM_ANNOTATION: pod_claim},
            "labels": dict(meta.get("labels") or {}),
        },
        "spec": spec.get("spec") or {},
    }


def prepare(objects: Iterable[Mapping[str, Any]], pods: list[Pod]) -> tuple[DraServices, list[Pod]]:
    """The DRA services for a simulation, and the pods as the resource-claim controller leaves
    them (a pod with claims gets a uid if it had none: claims are reserved by uid)."""
    objects = list(objects)
    templates = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objects
        if o.get("kind") == "ResourceClaimTemplate"
    }
    store = store_from_manifests(objects)
    out: list[Pod] = []
    for pod in pods:
        claims = pod_resource_claims(pod)
        if not claims:
            # A pod whose extended resources a class serves gets a claim owned by its uid.
            uses_dra = any(
                q and is_dra_extended_resource_name(n) and store.extended_resources.device_class(n)
                for n, q in pod.requests.items()
            )
            out.append(
                dataclasses.replace(pod, uid=pod.uid or f"simulate-{pod.namespace}-{pod.name}")
                if uses_dra
                else pod
            )
            continue
        uid = pod.uid or f"simulate-{pod.namespace}-{pod.name}"
        statuses = dict(pod.resource_claim_statuses)
        for pc in claims:
            template = templates.get((pod.namespace, pc.resource_claim_template_name))
            if not pc.resource_claim_template_name or pc.name in statuses or template is None:
                continue  # no template yet: the pod waits ("ResourceClaim not created yet")
            name = generated_claim_name(pod.namespace, pod.name, pc.name)
            store.upsert_claim(claim_from_json(_claim_from_template(template, pod.name, uid, pc.name, name)))
            statuses[pc.name] = name
        out.append(dataclasses.replace(pod, uid=uid, resource_claim_statuses=tuple(statuses.items())))
    return DraServices(store, compile_selector), out


def _uid(pod: Pod) -> str:
    return pod.uid or f"simulate-{pod.namespace}-{pod.name}"


def allocated_devices(store: DraStore, pod: Pod) -> list[dict[str, str]]:
    """The devices allocated to `pod`'s claims it has reserved, the claim for its extended
    resources last (JSON for simulate's output)."""
    statuses = dict(pod.resource_claim_statuses)
    devices: list[dict[str, str]] = []
    claims: list[ResourceClaim | None] = []
    for pc in pod_resource_claims(pod):
        name = pc.resource_claim_name or statuses.get(pc.name)
        claims.append(store.claim(pod.namespace, name) if name else None)
    if pod.uid:
        claims.append(store.extended_resource_claim(pod))
    for claim in claims:
        if claim is None or claim.allocation is None or not claim.is_reserved_for(pod.uid):
            continue
        for r in claim.allocation.results:
            devices.append(
                {
                    "claim": claim.name,
                    "request": r.request,
                    "driver": r.driver,
                    "pool": r.pool,
                    "device": r.device,
                }
            )
    return devices


def extended_resource_claim(services: DraServices, pod: Pod) -> dict[str, Any] | None:
    """The claim created for the pod's extended resources and the pod's
    status.extendedResourceClaimStatus, as JSON; None when the pod got none."""
    writer = services.claim_writer()
    status = writer.extended_claim_statuses.get(pod.key) if isinstance(writer, StoreClaimWriter) else None
    claim = services.store.extended_resource_claim(pod) if pod.uid else None
    if status is None or claim is None:
        return None
    return {
        "name": claim.name,
        "requests": [
            {"name": r.name, "deviceClassName": r.exactly.device_class_name, "count": r.exactly.count}
            for r in claim.requests
            if r.exactly is not None
        ],
        "requestMappings": extended_claim_status_to_json(status)["requestMappings"],
    }
