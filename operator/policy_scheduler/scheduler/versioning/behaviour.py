"""What kube-scheduler changed between releases without a feature gate, one named switch each.

Plugins read these once, when they are built (through Features.behaviour); nothing compares
versions anywhere else, so a release's differences are all listed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from policy_scheduler.scheduler.versioning.gates import GANG_SCHEDULING, GENERIC_WORKLOAD
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion


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
    # Portworx in-tree volumes count as migrated to CSI only when the CSINode's
    # storage.alpha.kubernetes.io/migrated-plugins annotation lists the plugin.
    portworx_migration_needs_annotation: bool
    # NodeDeclaredFeatures' Filter names the node's missing features in its reason.
    node_declared_features_lists_missing: bool
    # DynamicResources' PostFilter gives a reason when it has nothing to do ("no new claims to
    # deallocate", "plugin disabled", "still not schedulable"); later releases give none.
    dynamic_resources_post_filter_explains_nothing_done: bool
    # NodeResourcesFitArgs: requestedToCapacityRatio must be set only with that strategy
    # (Required/Forbidden at scoringStrategy.requestedToCapacityRatio).
    fit_args_check_ratio_by_type: bool
    # The gate that adds GangScheduling to the default plugins (applyFeatureGates).
    gang_scheduling_plugin_gate: str


BEHAVIOURS: Mapping[KubernetesVersion, Behaviour] = MappingProxyType(
    {
        V1_35: Behaviour(
            balanced_allocation_scores_improvement=False,
            image_locality_scores_image_volumes=False,
            image_locality_threshold_counts_image_volumes=False,
            node_name_before_node_unschedulable=False,
            node_name_pre_filter=False,
            deferred_resize_pre_filters=False,
            csi_driver_missing_needs_opt_in=False,
            portworx_migration_needs_annotation=True,
            node_declared_features_lists_missing=True,
            dynamic_resources_post_filter_explains_nothing_done=True,
            fit_args_check_ratio_by_type=False,
            gang_scheduling_plugin_gate=GANG_SCHEDULING,
        ),
        V1_36: Behaviour(
            balanced_allocation_scores_improvement=True,
            image_locality_scores_image_volumes=True,
            image_locality_threshold_counts_image_volumes=False,
            node_name_before_node_unschedulable=False,
            node_name_pre_filter=False,
            deferred_resize_pre_filters=False,
            csi_driver_missing_needs_opt_in=True,
            portworx_migration_needs_annotation=False,
            node_declared_features_lists_missing=False,
            dynamic_resources_post_filter_explains_nothing_done=True,
            fit_args_check_ratio_by_type=True,
            gang_scheduling_plugin_gate=GANG_SCHEDULING,
        ),
        V1_37: Behaviour(
            balanced_allocation_scores_improvement=True,
            image_locality_scores_image_volumes=True,
            image_locality_threshold_counts_image_volumes=True,
            node_name_before_node_unschedulable=True,
            node_name_pre_filter=True,
            deferred_resize_pre_filters=True,
            csi_driver_missing_needs_opt_in=True,
            portworx_migration_needs_annotation=False,
            node_declared_features_lists_missing=False,
            dynamic_resources_post_filter_explains_nothing_done=False,
            fit_args_check_ratio_by_type=True,
            gang_scheduling_plugin_gate=GENERIC_WORKLOAD,
        ),
    }
)
