"""Gang scheduling's model: PodGroups and their members, as the core sees them.

Two front doors share it: scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1, the
Coscheduling plugin) and upstream's Workload API (scheduling.k8s.io, the GangScheduling plugin);
each has its own PodGroupStore (docs/gang.md).
"""

from policy_scheduler.scheduler.gang.podgroup import (
    POD_GROUP_LABEL,
    GroupState,
    PodGroup,
    group_key,
    group_name,
    scheduling_group_key,
    scheduling_policy_key,
)
from policy_scheduler.scheduler.gang.store import PodGroupStore, workload_pod_groups

__all__ = [
    "POD_GROUP_LABEL",
    "GroupState",
    "PodGroup",
    "PodGroupStore",
    "group_key",
    "group_name",
    "scheduling_group_key",
    "scheduling_policy_key",
    "workload_pod_groups",
]
