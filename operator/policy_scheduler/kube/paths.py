"""API paths of the objects the adapters read and write, built in one place (names are quoted).

No heavy imports: `run` reads the early lists here before it imports the operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple
from urllib.parse import quote

from policy_scheduler.apiobjects import podgroup_api
from policy_scheduler.kube.media_types import JSON, PROTOBUF_OR_JSON
from policy_scheduler.policy.constants import (
    EVICTION_POLICY_PLURAL,
    GROUP,
    SCHEDULING_PROFILE_PLURAL,
    VERSION,
)

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
NAMESPACES = "/api/v1/namespaces"
PDBS = "/apis/policy/v1/poddisruptionbudgets"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
# The owners PodTopologySpread's default selectors read.
SERVICES = "/api/v1/services"
REPLICATION_CONTROLLERS = "/api/v1/replicationcontrollers"
REPLICA_SETS = "/apis/apps/v1/replicasets"
STATEFUL_SETS = "/apis/apps/v1/statefulsets"
# The storage objects the volume plugins read.
PERSISTENT_VOLUMES = "/api/v1/persistentvolumes"
PERSISTENT_VOLUME_CLAIMS = "/api/v1/persistentvolumeclaims"
STORAGE_CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
CSI_NODES = "/apis/storage.k8s.io/v1/csinodes"
CSI_DRIVERS = "/apis/storage.k8s.io/v1/csidrivers"
CSI_STORAGE_CAPACITIES = "/apis/storage.k8s.io/v1/csistoragecapacities"
VOLUME_ATTACHMENTS = "/apis/storage.k8s.io/v1/volumeattachments"
# Dynamic resource allocation (resource.k8s.io/v1).
DRA_API = "/apis/resource.k8s.io/v1"
RESOURCE_SLICES = f"{DRA_API}/resourceslices"
DEVICE_CLASSES = f"{DRA_API}/deviceclasses"
RESOURCE_CLAIMS = f"{DRA_API}/resourceclaims"
# scheduler-plugins' PodGroups (a foreign CRD that may be absent).
PODGROUPS = f"/apis/{podgroup_api.API_VERSION}/{podgroup_api.PLURAL}"
# As kube-scheduler: terminal pods hold no resources and are never scheduled.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


class FirstList(NamedTuple):
    """How an informer asks for its first list: selectors (query) and content types (Accept)."""

    selectors: Mapping[str, str]
    accept: str


# `run` asks for every informer's first list early (kube.prefetch), the big ones first. Nodes as
# protobuf: at 5000 nodes the API server encodes that list in a quarter of JSON's time (issue 12).
NODE_AND_POD_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {NODES: FirstList({}, PROTOBUF_OR_JSON), PODS: FirstList({"fieldSelector": POD_FIELD_SELECTOR}, JSON)}
)
# The other informers' lists are small, but asked for by the operator they would come after the
# node list's decode and keep the first cycle waiting (up to 0.4 s at 5000 nodes, issue 12).
OTHER_INFORMER_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {
        path: FirstList({}, JSON)
        for path in (
            NAMESPACES,
            PDBS,
            SERVICES,
            REPLICATION_CONTROLLERS,
            REPLICA_SETS,
            STATEFUL_SETS,
            PERSISTENT_VOLUMES,
            PERSISTENT_VOLUME_CLAIMS,
            STORAGE_CLASSES,
            CSI_NODES,
            CSI_DRIVERS,
            CSI_STORAGE_CAPACITIES,
            VOLUME_ATTACHMENTS,
            DEVICE_CLASSES,
            RESOURCE_SLICES,
            RESOURCE_CLAIMS,
            PODGROUPS,
        )
    }
)
SCHEDULING_PROFILES = f"/apis/{GROUP}/{VERSION}/{SCHEDULING_PROFILE_PLURAL}"
EVICTION_POLICIES = f"/apis/{GROUP}/{VERSION}/{EVICTION_POLICY_PLURAL}"
# The policy lists `run` also asks for early, to schedule before kopf has started (kube.early_policies).
POLICY_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {SCHEDULING_PROFILES: FirstList({}, JSON), EVICTION_POLICIES: FirstList({}, JSON)}
)
# Everything `run` asks for before its heavy imports, in the order the requests leave.
EARLY_LISTS: Mapping[str, FirstList] = MappingProxyType(
    {**NODE_AND_POD_LISTS, **POLICY_LISTS, **OTHER_INFORMER_LISTS}
)


def podgroup_status_path(namespace: str, name: str) -> str:
    return (
        f"/apis/{podgroup_api.API_VERSION}/namespaces/{quote(namespace, safe='')}"
        f"/{podgroup_api.PLURAL}/{quote(name, safe='')}/status"
    )


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
