"""The feature gates kube-scheduler reads, by upstream's names, and which values our core decides by.

Upstream's scheduler reads these (pkg/scheduler/framework/plugins/feature/feature.go and the gates
named elsewhere under pkg/scheduler); every other Kubernetes gate is accepted (as kube-scheduler
accepts it) and changes nothing we decide. `gate_table` holds each release's defaults.

IMPLEMENTED lists, per gate, the values whose behaviour the core implements. A gate set explicitly
to another value is refused, so nobody believes we decide as kube-scheduler would with it; a
release's default we do not implement is accepted and reported (`Features.unimplemented`).
Whoever implements a gate's other value adds it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"

CSI_MIGRATION_PORTWORX = "CSIMigrationPortworx"
COMPOSITE_POD_GROUP = "CompositePodGroup"
DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
DRA_DERIVED_ATTRIBUTES = "DRADerivedAttributes"
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
DRA_DEVICE_COMPATIBILITY_GROUPS = "DRADeviceCompatibilityGroups"
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"
DRA_DEVICE_TAINTS = "DRADeviceTaints"
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
DRA_FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"
DRA_LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
DRA_NODE_ALLOCATABLE_RESOURCES = "DRANodeAllocatableResources"
DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"
DRA_WORKLOAD_RESOURCE_CLAIMS = "DRAWorkloadResourceClaims"
DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
GANG_SCHEDULING = "GangScheduling"
GENERIC_WORKLOAD = "GenericWorkload"
IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING = "InPlacePodLevelResourcesVerticalScaling"
IN_PLACE_POD_VERTICAL_SCALING = "InPlacePodVerticalScaling"
IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION = "InPlacePodVerticalScalingSchedulerPreemption"
INTER_POD_AFFINITY_HOSTNAME_FAST_PATH = "InterPodAffinityHostnameFastPath"
MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD = "MatchLabelKeysInPodTopologySpread"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD = "NodeInclusionPolicyInPodTopologySpread"
NOMINATED_NODE_NAME_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
POD_LEVEL_RESOURCES = "PodLevelResources"
SCHEDULER_ASYNC_API_CALLS = "SchedulerAsyncAPICalls"
SCHEDULER_ASYNC_PREEMPTION = "SchedulerAsyncPreemption"
SCHEDULER_POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
SCHEDULER_PRE_QUEUEING_HINTS = "SchedulerPreQueueingHints"
SCHEDULER_QUEUEING_HINTS = "SchedulerQueueingHints"
SIDECAR_CONTAINERS = "SidecarContainers"
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
TAINT_TOLERATION_COMPARISON_OPERATORS = "TaintTolerationComparisonOperators"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
VOLUME_ATTRIBUTES_CLASS = "VolumeAttributesClass"
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"

_ON = frozenset({True})
_OFF = frozenset({False})
_BOTH = frozenset({True, False})

IMPLEMENTED: Mapping[str, frozenset[bool]] = MappingProxyType(
    {
        CSI_MIGRATION_PORTWORX: _ON,
        COMPOSITE_POD_GROUP: _OFF,
        DRA_ADMIN_ACCESS: _ON,
        DRA_CONSUMABLE_CAPACITY: _BOTH,
        DRA_DERIVED_ATTRIBUTES: _OFF,
        DRA_DEVICE_BINDING_CONDITIONS: _OFF,
        DRA_DEVICE_COMPATIBILITY_GROUPS: _OFF,
        DRA_DEVICE_TAINT_RULES: _BOTH,
        DRA_DEVICE_TAINTS: _BOTH,
        DRA_EXTENDED_RESOURCE: _BOTH,
        DRA_FRACTIONAL_CAPACITY_RANGE: _OFF,
        DRA_LIST_TYPE_ATTRIBUTES: _OFF,
        DRA_NODE_ALLOCATABLE_RESOURCES: _OFF,
        DRA_OPTIONAL_NODE_OPERATIONS: _OFF,
        DRA_PARTITIONABLE_DEVICES: _BOTH,
        DRA_PRIORITIZED_LIST: _ON,
        # Only read together with DRADeviceBindingConditions, which is off.
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: _BOTH,
        DRA_SCHEDULER_FILTER_TIMEOUT: _BOTH,
        DRA_WORKLOAD_RESOURCE_CLAIMS: _OFF,
        DYNAMIC_RESOURCE_ALLOCATION: _ON,
        GANG_SCHEDULING: _BOTH,
        GENERIC_WORKLOAD: _BOTH,
        # It changes how a resized pod's pod-level resources count; the core does not model
        # in-place resizes at all (docs/differences.md), so either value decides alike.
        IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING: _BOTH,
        IN_PLACE_POD_VERTICAL_SCALING: _ON,
        IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: _OFF,
        # A faster path to the same verdicts.
        INTER_POD_AFFINITY_HOSTNAME_FAST_PATH: _BOTH,
        MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD: _ON,
        NODE_DECLARED_FEATURES: _BOTH,
        NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD: _ON,
        NOMINATED_NODE_NAME_FOR_EXPECTATION: _ON,
        OPPORTUNISTIC_BATCHING: _BOTH,
        POD_GROUP_PREEMPTION_POLICY: _OFF,
        POD_LEVEL_RESOURCES: _ON,
        SCHEDULER_ASYNC_API_CALLS: _OFF,
        SCHEDULER_ASYNC_PREEMPTION: _ON,
        SCHEDULER_POP_FROM_BACKOFF_Q: _ON,
        SCHEDULER_PRE_QUEUEING_HINTS: _OFF,
        SCHEDULER_QUEUEING_HINTS: _ON,
        SIDECAR_CONTAINERS: _ON,
        # VolumeBinding's Score (volumebinding/scoring.py) follows upstream's scorer.
        STORAGE_CAPACITY_SCORING: _BOTH,
        TAINT_TOLERATION_COMPARISON_OPERATORS: _OFF,
        TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: _OFF,
        VOLUME_ATTRIBUTES_CLASS: _ON,
        # NodeVolumeLimits' CSI driver check (the scheduler's only use of it).
        VOLUME_LIMIT_SCALING: _BOTH,
        WORKLOAD_AWARE_PREEMPTION: _BOTH,
    }
)

# The gates the scheduler reads: a plugin asking Features for any other name is a bug.
SCHEDULER_GATES: frozenset[str] = frozenset(IMPLEMENTED)
