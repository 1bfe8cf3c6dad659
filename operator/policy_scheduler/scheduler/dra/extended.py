"""Extended resources backed by DRA (DRAExtendedResource): which DeviceClass serves a resource name,
and the device requests of the claim the scheduler creates for a pod.

`ExtendedResourceCache` is dynamic-resource-allocation's extendedresourcecache: a DeviceClass serves
its `spec.extendedResourceName` and the implicit `deviceclass.resource.kubernetes.io/<class>`.
`requests_and_mappings` is createRequestsAndMappings (extendeddynamicresources.go): one request
per container and resource, init containers reusing what later long-lived containers request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policy_scheduler.scheduler.dra.model import (
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
)
from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.resource_names import is_extended_resource_name

# resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of every class.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler created for a pod.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# specialClaimInMemName: not a valid object name, so never mistaken for a claim in the API.
IN_MEMORY_CLAIM_NAME = "<extended-resources>"


def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


@dataclass(frozen=True, slots=True)
class ContainerExtendedResourceRequest:
    """v1.ContainerExtendedResourceRequest: pod.status.extendedResourceClaimStatus.requestMappings[]."""

    container_name: str
    resource_name: str
    request_name: str


@dataclass(frozen=True, slots=True)
class ExtendedResourceClaimStatus:
    """v1.PodExtendedResourceClaimStatus, as PreBind writes it into the pod's status."""

    resource_claim_name: str
    request_mappings: tuple[ContainerExtendedResourceRequest, ...]


class ExtendedResourceCache:
    """extendedresourcecache.ExtendedResourceCache, fed with DeviceClass events."""

    def __init__(self) -> None:
        self._by_resource: dict[str, DeviceClass] = {}

    def device_class(self, resource_name: str) -> DeviceClass | None:
        return self._by_resource.get(resource_name)

    def __bool__(self) -> bool:
        """Whether any class serves any name (most clusters: none, and every pod skips the rest)."""
        return bool(self._by_resource)

    def upsert(self, new: DeviceClass, old: DeviceClass | None) -> None:
        """updateResourceName2class: on a clash of explicit names the newest class wins (by
        creation time, then the lower name); a class that loses keeps no mapping at all, not
        even its implicit one, exactly as upstream returns early."""
        explicit = new.extended_resource_name
        holder = self._by_resource.get(explicit) if explicit is not None else None
        if holder is not None:
            if new.created < holder.created:
                return
            if new.created == holder.created and new.name >= holder.name:
                return
        if old is not None:
            self._by_resource.pop(DEVICE_CLASS_PREFIX + old.name, None)
            if old.extended_resource_name is not None:
                self._by_resource.pop(old.extended_resource_name, None)
        if explicit is not None:
            self._by_resource[explicit] = new
        self._by_resource[DEVICE_CLASS_PREFIX + new.name] = new

    def delete(self, gone: DeviceClass) -> None:
        self._by_resource.pop(DEVICE_CLASS_PREFIX + gone.name, None)
        if gone.extended_resource_name is not None:
            self._by_resource.pop(gone.extended_resource_name, None)


def is_extended_resource_claim_of(claim: ResourceClaim, pod: Pod) -> bool:
    """findExtendedResourceClaim's test: annotated, and controlled by this pod (name and uid)."""
    return claim.extended_resource and claim.owner_pod_uid == pod.uid and claim.owner_pod_name == pod.name


def _partition(containers: tuple[Container, ...], init_count: int) -> tuple[list[int], list[int]]:
    long_lived: list[int] = []
    short_lived: list[int] = []
    for i, c in enumerate(containers):
        if i < init_count and c.restart_policy != "Always":
            short_lived.append(i)
        else:
            long_lived.append(i)
    return long_lived, short_lived


def _request_and_mappings(
    index: int,
    container: Container,
    resource: str,
    class_name: str,
    reusable: list[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """createResourceRequestAndMappings."""
    mappings: list[ContainerExtendedResourceRequest] = []
    requested = container.requests.get(resource)
    if not requested:
        return None, []
    total = 0
    for r in reusable:
        if r is not None and r.exactly is not None:
            total += r.exactly.count
            mappings.append(ContainerExtendedResourceRequest(container.name, resource, r.name))
            if total >= requested:
                return None, mappings
    # The resource's position among the container's requests sorted by name names the request.
    position = sorted(container.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = DeviceRequest(name, ExactDeviceRequest(class_name, count=requested - total))
    mappings.append(ContainerExtendedResourceRequest(container.name, resource, name))
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Mapping[str, int], class_of: Mapping[str, str]
) -> tuple[tuple[DeviceRequest, ...], tuple[ContainerExtendedResourceRequest, ...]]:
    """createRequestsAndMappings for the resources a node must provide through DRA; `class_of`
    names each resource's DeviceClass (resources without one are skipped)."""
    containers = (*pod.init_containers, *pod.containers)
    long_lived, short_lived = _partition(containers, len(pod.init_containers))
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(resources):
        class_name = class_of.get(resource)
        if class_name is None:
            continue
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            request, found = _request_and_mappings(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings.extend(found)
        biggest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            request, found = _request_and_mappings(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request.name)
                if biggest is None or _count(biggest) < _count(request):
                    biggest = request
            short_mappings.extend(found)
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            short_mappings = [
                ContainerExtendedResourceRequest(m.container_name, m.resource_name, biggest.name)
                if m.request_name in short_names
                else m
                for m in short_mappings
            ]
        if biggest is not None:
            requests.append(biggest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return tuple(requests), tuple(mappings)


def _count(request: DeviceRequest) -> int:
    return request.exactly.count if request.exactly is not None else 0


def served_by_dra(requests: Mapping[str, int], cache: ExtendedResourceCache) -> frozenset[str]:
    """The requested resources a DeviceClass serves (shouldDelegateResourceToDRA before looking at
    a node): on a node that does not list one in allocatable, DRA provides it, not the node."""
    if not cache:
        return frozenset()
    return frozenset(name for name, quantity in requests.items() if quantity and cache.device_class(name))
