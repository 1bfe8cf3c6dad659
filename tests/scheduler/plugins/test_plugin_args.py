"""Typed plugin args in the core: upstream defaults and validation, shared with the policy layer."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.policy import plugin_args as policy_args
from policy_scheduler.scheduler.field_errors import ArgsError
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.defaultpreemption import DefaultPreemption
from policy_scheduler.scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs
from policy_scheduler.scheduler.plugins.dynamicresources.args import DynamicResourcesArgs
from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity
from policy_scheduler.scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from policy_scheduler.scheduler.plugins.nodeaffinity import NodeAffinityArgs
from policy_scheduler.scheduler.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
)
from policy_scheduler.scheduler.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import ResourceSpec
from policy_scheduler.scheduler.plugins.podtopologyspread.args import PodTopologySpreadArgs
from policy_scheduler.scheduler.plugins.registry import shipped_registry
from policy_scheduler.scheduler.plugins.volumebinding.args import VolumeBindingArgs

CORE_ARGS: list[tuple[str, Any]] = [
    ("DefaultPreemption", DefaultPreemptionArgs),
    ("InterPodAffinity", InterPodAffinityArgs),
    ("NodeResourcesBalancedAllocation", NodeResourcesBalancedAllocationArgs),
    ("NodeResourcesFit", NodeResourcesFitArgs),
    ("PodTopologySpread", PodTopologySpreadArgs),
    ("NodeAffinity", NodeAffinityArgs),
    ("VolumeBinding", VolumeBindingArgs),
    ("DynamicResources", DynamicResourcesArgs),
]


@pytest.mark.parametrize(("plugin", "core"), CORE_ARGS)
def test_policy_defaults_are_the_plugins(plugin: str, core: Any) -> None:
    """One defaulting path: the policy's defaulted args are the core dataclass's."""
    defaulted = core.from_json({}).to_json()
    assert policy_args.ARGS_MODELS[plugin].core_args() is core
    assert policy_args.default_plugin_args(plugin, {}, "args") == defaulted


def test_every_plugin_args_type_has_its_cr_model() -> None:
    """A shipped plugin with an args type has a pluginConfig model (the CRD's schema) whose rules are
    that type's."""
    with_args = {name for name, plugin in shipped_registry().items() if plugin.args_type is not None}
    assert with_args == set(policy_args.ARGS_MODELS)
    for name in with_args:
        assert policy_args.ARGS_MODELS[name].core_args() is shipped_registry()[name].args_type


def test_plugins_take_typed_args() -> None:
    handle = Handle(NodeTable())
    preemption = DefaultPreemption(handle, DefaultPreemptionArgs(5, 7))
    assert (preemption.min_candidate_nodes_percentage, preemption.min_candidate_nodes_absolute) == (5, 7)
    affinity = InterPodAffinity(handle, InterPodAffinityArgs(3, True))
    assert (affinity.hard_pod_affinity_weight, affinity.ignore_preferred_terms_of_existing_pods) == (3, True)
    spec = (ResourceSpec("cpu"),)
    assert (
        NodeResourcesBalancedAllocation(handle, NodeResourcesBalancedAllocationArgs(spec)).resources == spec
    )


@pytest.mark.parametrize(
    ("core", "raw", "message"),
    [
        (
            InterPodAffinityArgs,
            {"hardPodAffinityWeight": -1},
            "hardPodAffinityWeight: Invalid value: -1: not in valid range [0-100]",
        ),
        (
            NodeResourcesBalancedAllocationArgs,
            {"resources": [{"name": "cpu"}, {"name": "cpu", "weight": 2}]},
            '[resources[1].name: Duplicate value: "cpu", resources[1].weight: Invalid value: 2: must be 1]',
        ),
        (
            NodeResourcesFitArgs,
            {
                "ignoredResourceGroups": ["a/b"],
                "scoringStrategy": {"type": "X", "resources": [{"name": "cpu", "weight": 101}]},
            },
            "[ignoredResourceGroups[0]: Invalid value: \"a/b\": resource group name can't contain '/', "
            'scoringStrategy.type: Unsupported value: "X": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio", scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of '
            "cpu not in valid range (0, 100]]",
        ),
        (
            PodTopologySpreadArgs,
            {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "Maybe"}]},
            "[defaultConstraints[0].topologyKey: Required value: can not be empty, "
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"]',
        ),
        (
            NodeAffinityArgs,
            {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}
                        ]
                    }
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"
            ".values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
def test_upstream_aggregate_messages(core: Any, raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgsError) as info:
        core.from_json(raw)
    assert str(info.value) == message


def test_node_affinity_args_round_trip() -> None:
    """The policy's defaulted output is what the plugin reads back (to_json, then from_json)."""
    raw = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 3,
                    "preference": {"matchExpressions": [{"key": "z", "operator": "Exists", "values": []}]},
                }
            ],
        }
    }
    args = NodeAffinityArgs.from_json(raw)
    assert NodeAffinityArgs.from_json(args.to_json()) == args
    assert policy_args.default_plugin_args("NodeAffinity", raw, "args") == args.to_json()
