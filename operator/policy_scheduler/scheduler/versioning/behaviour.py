"""What kube-scheduler changed between releases without a feature gate, one named switch each.

Each switch is on from the release that made the change (CHANGED_IN, the one place that says
which); plugins read them once, when they are built, through Features.behaviour. Nothing else
compares versions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from policy_scheduler.scheduler.versioning.version import SUPPORTED_VERSIONS, V1_36, V1_37, KubernetesVersion


@dataclass(frozen=True, slots=True)
class Behaviour:
    # NodeResourcesBalancedAllocation scores how much the pod improves the node's balance
    # (balancedResourceScorer with and without the pod) instead of the balance with the pod.
    balanced_allocation_scores_improvement: bool
    # ImageLocality sums the images of spec.volumes[].image too.
    image_locality_scores_image_volumes: bool
    # ImageLocality's threshold counts image volumes besides containers and init containers.
    image_locality_threshold_counts_image_volumes: bool
    # The default plugins list NodeName before NodeUnschedulable (which filter a node is
    # charged to when both reject it).
    node_name_before_node_unschedulable: bool
    # NodeName's PreFilter narrows the candidates to spec.nodeName when it is set.
    node_name_pre_filter: bool
    # NodeUnschedulable and TaintToleration have a PreFilter (it only skips pods whose in-place
    # resize is deferred, behind an alpha gate).
    deferred_resize_pre_filters: bool
    # NodeVolumeLimits rejects a node without a CSI driver only when the CSIDriver object sets
    # spec.preventPodSchedulingIfMissing (before: whenever the CSIDriver object exists).
    csi_driver_missing_needs_opt_in: bool
    # Portworx in-tree volumes count as migrated to CSI wherever the node has a CSINode (before:
    # only when its storage.alpha.kubernetes.io/migrated-plugins annotation lists the plugin).
    portworx_migrated_without_annotation: bool
    # NodeDeclaredFeatures' reason is "node(s) didn't match Pod's required features" (before: it
    # named the node's missing features).
    node_declared_features_generic_reason: bool
    # DynamicResources' PostFilter gives no reason when it has nothing to do (before: "no new
    # claims to deallocate", "plugin disabled", "still not schedulable").
    dynamic_resources_post_filter_silent_when_nothing_done: bool
    # DynamicResources requeues pods when a ResourceClaim is deleted (an allocated one frees
    # its devices), not only when one is added or updated.
    dynamic_resources_requeues_on_claim_delete: bool
    # A successful preemption says where and how many victims ("found a potential placement for
    # pod on node X, preempting N victims"), which ends the pod's FitError message.
    preemption_success_explains: bool
    # NodeResourcesFitArgs: requestedToCapacityRatio must be set only with that strategy
    # (Required/Forbidden at scoringStrategy.requestedToCapacityRatio).
    fit_args_check_ratio_by_type: bool
    # The GangScheduling plugin is a default when GenericWorkload is on (before: GangScheduling).
    gang_scheduling_follows_generic_workload: bool
    # The DRA allocator copies a claim's config into the allocation once (before: once per
    # request it names), and one covering every request gets empty `requests`.
    dra_claim_config_once: bool

    @staticmethod
    def of(version: KubernetesVersion) -> Behaviour:
        return Behaviour(**{name: version >= since for name, since in CHANGED_IN.items()})


# The release that made each change.
CHANGED_IN: Mapping[str, KubernetesVersion] = MappingProxyType(
    {
        "balanced_allocation_scores_improvement": V1_36,
        "image_locality_scores_image_volumes": V1_36,
        "image_locality_threshold_counts_image_volumes": V1_37,
        "node_name_before_node_unschedulable": V1_37,
        "node_name_pre_filter": V1_37,
        "deferred_resize_pre_filters": V1_37,
        "csi_driver_missing_needs_opt_in": V1_36,
        "portworx_migrated_without_annotation": V1_36,
        "node_declared_features_generic_reason": V1_36,
        "dynamic_resources_post_filter_silent_when_nothing_done": V1_37,
        "dynamic_resources_requeues_on_claim_delete": V1_37,
        "preemption_success_explains": V1_37,
        "fit_args_check_ratio_by_type": V1_36,
        "gang_scheduling_follows_generic_workload": V1_37,
        "dra_claim_config_once": V1_37,
    }
)
assert set(CHANGED_IN) == {f.name for f in dataclasses.fields(Behaviour)}, "every switch has its release"

BEHAVIOURS: Mapping[KubernetesVersion, Behaviour] = MappingProxyType(
    {version: Behaviour.of(version) for version in SUPPORTED_VERSIONS}
)
