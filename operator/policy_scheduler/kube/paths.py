"""API paths of the objects the adapters read and write, built in one place (names are quoted)."""

from __future__ import annotations

from urllib.parse import quote

from policy_scheduler.apiobjects import podgroup_api, workload_api
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
# Served (resource.k8s.io/v1) from v1.37, where DRADeviceTaintRules is GA.
DEVICE_TAINT_RULES = f"{DRA_API}/devicetaintrules"
# scheduler-plugins' PodGroups (a foreign CRD that may be absent).
PODGROUPS = f"/apis/{podgroup_api.API_VERSION}/{podgroup_api.PLURAL}"
# The Workload API (scheduling.k8s.io): PodGroups from v1.36, v1.35's Workloads.
WORKLOAD_API_PODGROUPS = tuple(
    f"/apis/{workload_api.GROUP}/{version}/{workload_api.PODGROUPS}"
    for version in workload_api.PODGROUP_VERSIONS
)
WORKLOAD_API_WORKLOADS = (
    f"/apis/{workload_api.GROUP}/{workload_api.WORKLOAD_VERSION_V1_35}/{workload_api.WORKLOADS}"
)
# As kube-scheduler: terminal pods hold no resources and are never scheduled.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
# Our CRDs' policy objects.
SCHEDULING_PROFILES = f"/apis/{GROUP}/{VERSION}/{SCHEDULING_PROFILE_PLURAL}"
EVICTION_POLICIES = f"/apis/{GROUP}/{VERSION}/{EVICTION_POLICY_PLURAL}"


def podgroup_status_path(namespace: str, name: str) -> str:
    return (
        f"/apis/{podgroup_api.API_VERSION}/namespaces/{quote(namespace, safe='')}"
        f"/{podgroup_api.PLURAL}/{quote(name, safe='')}/status"
    )


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
