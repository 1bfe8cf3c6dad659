"""The plugin registry: kube-scheduler plugin name -> implementation.

In-tree plugins, plus out-of-tree ones found through the Python entry point group
`policy_scheduler.plugins` (each entry point names a Plugin subclass; see docs/core-contracts.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import entry_points

from policy_scheduler.scheduler.framework.interfaces import Plugin, implemented_points
from policy_scheduler.scheduler.versioning.features import Features

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "policy_scheduler.plugins"


def in_tree_registry() -> dict[str, type[Plugin]]:
    # Imported here so that importing the registry module stays cheap.
    from policy_scheduler.scheduler.plugins.defaultbinder import DefaultBinder
    from policy_scheduler.scheduler.plugins.defaultpreemption import DefaultPreemption
    from policy_scheduler.scheduler.plugins.dynamicresources import DynamicResources
    from policy_scheduler.scheduler.plugins.gangscheduling import GangScheduling
    from policy_scheduler.scheduler.plugins.imagelocality import ImageLocality
    from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity
    from policy_scheduler.scheduler.plugins.nodeaffinity import NodeAffinity
    from policy_scheduler.scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
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

    plugins: tuple[type[Plugin], ...] = (
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
        DefaultPreemption,
        NodeDeclaredFeatures,
        GangScheduling,
    )
    return {plugin.name: plugin for plugin in plugins}


def bundled_registry() -> dict[str, type[Plugin]]:
    """Plugins beyond kube-scheduler's that ship with policy-scheduler: Coscheduling from
    kubernetes-sigs/scheduler-plugins, and our own EvictionHeadroom (off unless enabled)."""
    from policy_scheduler.scheduler.plugins.coscheduling import Coscheduling
    from policy_scheduler.scheduler.plugins.evictionheadroom import EvictionHeadroom

    return {Coscheduling.name: Coscheduling, EvictionHeadroom.name: EvictionHeadroom}


def out_of_tree_registry() -> dict[str, type[Plugin]]:
    """Plugins installed as entry points; one that fails to load is left out (and logged), so a
    profile naming it is refused as an unknown plugin rather than crashing the scheduler."""
    found: dict[str, type[Plugin]] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            plugin = entry.load()
        except Exception as exc:
            log.error(
                "out-of-tree plugin failed to load", extra={"entry_point": entry.value, "error": str(exc)}
            )
            continue
        if not (isinstance(plugin, type) and issubclass(plugin, Plugin)) or not plugin.name:
            log.error(
                "out-of-tree entry point is not a named Plugin subclass", extra={"entry_point": entry.value}
            )
            continue
        found[plugin.name] = plugin
    return found


def shipped_registry() -> dict[str, type[Plugin]]:
    """The plugins that ship with policy-scheduler: in-tree and bundled."""
    return {**bundled_registry(), **in_tree_registry()}


def plugin_registry() -> dict[str, type[Plugin]]:
    """Every plugin a profile may name; an installed plugin cannot replace a shipped one."""
    return {**out_of_tree_registry(), **shipped_registry()}


def implemented_plugin_names() -> frozenset[str]:
    return frozenset(plugin_registry())


def extension_points(
    registry: Mapping[str, type[Plugin]], features: Features | None = None
) -> dict[str, frozenset[str]]:
    """The extension points each plugin of `registry` implements, as its class declares them
    (those its release lacks left out when `features` is given)."""
    return {
        name: frozenset(implemented_points(plugin))
        - (plugin.points_absent_in(features) if features else frozenset())
        for name, plugin in registry.items()
    }
