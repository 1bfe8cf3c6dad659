"""Gang scheduling's model: PodGroups and their members, as the core sees them.

The scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1) is the first front-end; docs/gang.md
maps upstream's Workload API (scheduling.k8s.io) onto the same model.
"""

from policy_scheduler.scheduler.gang.podgroup import (
    POD_GROUP_LABEL,
    GroupState,
    PodGroup,
    group_key,
    group_name,
)
from policy_scheduler.scheduler.gang.store import PodGroupStore

__all__ = ["POD_GROUP_LABEL", "GroupState", "PodGroup", "PodGroupStore", "group_key", "group_name"]
