"""The in-tree plugin registry: kube-scheduler plugin name -> implementation."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.interfaces import Plugin


def in_tree_registry() -> dict[str, type[Plugin]]:
    # Imported here so that importing the registry module stays cheap.
    from policy_scheduler.scheduler.plugins.defaultbinder import DefaultBinder
    from policy_scheduler.scheduler.plugins.dynamicresources import DynamicResources
    from policy_scheduler.scheduler.plugins.imagelocality import ImageLocality
    from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity
    from policy_scheduler.scheduler.plugins.nodeaffinity import NodeAffinity
    from policy_scheduler.scheduler.plugins.nodename import NodeName
    from policy_scheduler.scheduler.plugins.nodeports import NodePorts
    from policy_scheduler.scheduler.plugins.noderesources.balanced_allocation import (
        NodeResourcesBalancedAllocation,
    )
    from policy_scheduler.scheduler.plugins.noderesources.fit import NodeResourcesFit
    from policy_scheduler.scheduler.plugins.nodeunschedulable import NodeUnschedulable
    from policy_scheduler.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
    from policy_scheduler.scheduler.plugins.podtopologyspread import PodTopologySpread
    from policy_scheduler.scheduler.plugins.queuesort import PrioritySort
    from policy_scheduler.scheduler.plugins.schedulinggates import SchedulingGates
    from policy_scheduler.scheduler.plugins.tainttoleration import TaintToleration
    from policy_scheduler.scheduler.plugins.volumebinding import VolumeBinding
    from policy_scheduler.scheduler.plugins.volumerestrictions import VolumeRestrictions
    from policy_scheduler.scheduler.plugins.volumezone import VolumeZone

    plugins: list[type[Plugin]] = [
        PrioritySort,
        SchedulingGates,
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodePorts,
        NodeResourcesFit,
        VolumeRestrictions,
        NodeVolumeLimits,
        VolumeBinding,
        VolumeZone,
        PodTopologySpread,
        InterPodAffinity,
        DynamicResources,
        NodeResourcesBalancedAllocation,
        ImageLocality,
        DefaultBinder,
    ]
    try:
        from policy_scheduler.scheduler.plugins.defaultpreemption import DefaultPreemption
    except ImportError:  # preemption is optional until its module exists
        pass
    else:
        plugins.append(DefaultPreemption)
    return {plugin.name: plugin for plugin in plugins}


def implemented_plugin_names() -> frozenset[str]:
    return frozenset(in_tree_registry())
