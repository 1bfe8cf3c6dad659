"""PodTopologySpread PreFilter/Filter, AddPod/RemovePod and queueing hints.

The tables are ported from kube-scheduler v1.35.4 podtopologyspread/filtering_test.go
(TestPreFilterState, TestPreFilterStateAddPod, TestPreFilterStateRemovePod, TestSingleConstraint,
TestMultipleConstraints) and plugin_test.go (Test_isSchedulableAfter{Node,Pod}Change). The
NodeInclusionPolicy and MatchLabelKeys feature gates are on in v1.35, so the upstream cases that
only exist for a disabled gate with a different outcome are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import LabelSelector, Node, OwnerReference, Pod, Requirement
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.podtopologyspread import PodTopologySpread, default_selector
from policy_scheduler.scheduler.plugins.podtopologyspread.filtering import MAX_INT32, PreFilterState
from policy_scheduler.scheduler.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY

from ._build_podtopologyspread import (
    HOSTNAME,
    NOTHING,
    MakeLabelSelector,
    MakeNode,
    MakePod,
    args_of,
    barSelector,
    build_plugin,
    build_table,
    constraint_of,
    fooSelector,
    honorPolicy,
    ignorePolicy,
    mustConvertLabelSelectorAsSelector,
    newCriticalPaths,
    selector_key,
    taints,
)

Case = dict[str, Any]

# TestPreFilterStateAddPod / TestPreFilterStateRemovePod's shared expectations
nodeConstraint = dict(
    MaxSkew=1,
    TopologyKey="node",
    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
    MinDomains=1,
    NodeAffinityPolicy="Honor",
    NodeTaintsPolicy="Ignore",
)
zoneConstraint = {**nodeConstraint, "TopologyKey": "zone"}

# TestPreFilterState
PRE_FILTER_STATE_CASES: list[Case] = [
    dict(
        name="clean cluster with one spreadConstraint",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            5, "zone", "DoNotSchedule", MakeLabelSelector().Label("foo", "bar").Obj(), None, None, None, None
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=5,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 0), ("zone2", 0)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
        ),
    ),
    dict(
        name="normal case with one spreadConstraint",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 2), ("zone1", 3)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                },
            ],
        ),
    ),
    dict(
        name="normal case with null label selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=NOTHING,
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 0)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
        ),
    ),
    dict(
        name="normal case with one spreadConstraint, on a 3-zone cluster",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
            MakeNode().Name("node-o").Label("zone", "zone3").Label("node", "node-o").Obj(),
            MakeNode().Name("node-p").Label("zone", "zone3").Label("node", "node-p").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone3", 0), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                    "zone3": 0,
                },
            ],
        ),
    ),
    dict(
        name="namespace mismatch doesn't count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Namespace("ns2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 1,
                },
            ],
        ),
    ),
    dict(
        name="normal case with two spreadConstraints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 3), ("zone2", 4)),
                (("node-x", 0), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-x": 0,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="soft spreadConstraints should be bypassed",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 3), ("zone2", 4)),
                (("node-b", 1), ("node-a", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="different labelSelectors - simple version",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 1)),
                (("node-a", 0), ("node-y", 0)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 0,
                },
                {
                    "node-a": 0,
                    "node-b": 1,
                    "node-y": 0,
                },
            ],
        ),
    ),
    dict(
        name="different labelSelectors - complex pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 3), ("zone2", 4)),
                (("node-b", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 1,
                    "node-b": 0,
                    "node-y": 2,
                },
            ],
        ),
    ),
    dict(
        name="two spreadConstraints, and with podAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "node",
            [
                "node-x",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 3), ("zone2", 4)),
                (("node-b", 1), ("node-a", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="default constraints and a service",
        pod=MakePod().Name("p").Label("foo", "bar").Label("baz", "kar").Obj(),
        defaultConstraints=[
            dict(
                MaxSkew=3,
                TopologyKey="node",
                WhenUnsatisfiable="DoNotSchedule",
            ),
            dict(
                MaxSkew=2,
                TopologyKey="node",
                WhenUnsatisfiable="ScheduleAnyway",
            ),
            dict(
                MaxSkew=5,
                TopologyKey="rack",
                WhenUnsatisfiable="DoNotSchedule",
            ),
        ],
        objs=[
            dict(
                _kind="Service",
                Spec=dict(
                    Selector={
                        "foo": "bar",
                    },
                ),
            ),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=3,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=5,
                    TopologyKey="rack",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("foo", "bar").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                newCriticalPaths(),
                newCriticalPaths(),
            ],
            TpValueToMatchNum=[
                {},
                {},
            ],
        ),
    ),
    dict(
        name="default constraints and a service that doesn't match",
        pod=MakePod().Name("p").Label("foo", "bar").Obj(),
        defaultConstraints=[
            dict(
                MaxSkew=3,
                TopologyKey="node",
                WhenUnsatisfiable="DoNotSchedule",
            ),
        ],
        objs=[
            dict(
                _kind="Service",
                Spec=dict(
                    Selector={
                        "baz": "kep",
                    },
                ),
            ),
        ],
        wantPrefilterStatus=Status(Code.SKIP),
    ),
    dict(
        name="default constraints and a service, but pod has constraints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "bar")
        .Label("baz", "tar")
        .SpreadConstraint(
            1, "zone", "DoNotSchedule", MakeLabelSelector().Label("baz", "tar").Obj(), None, None, None, None
        )
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            MakeLabelSelector().Label("fot", "rok").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        defaultConstraints=[
            dict(
                MaxSkew=2,
                TopologyKey="node",
                WhenUnsatisfiable="DoNotSchedule",
            ),
        ],
        objs=[
            dict(
                _kind="Service",
                Spec=dict(
                    Selector={
                        "foo": "bar",
                    },
                ),
            ),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("baz", "tar").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                newCriticalPaths(),
            ],
            TpValueToMatchNum=[
                {},
            ],
        ),
    ),
    dict(
        name="default soft constraints and a service",
        pod=MakePod().Name("p").Label("foo", "bar").Obj(),
        defaultConstraints=[
            dict(
                MaxSkew=2,
                TopologyKey="node",
                WhenUnsatisfiable="ScheduleAnyway",
            ),
        ],
        objs=[
            dict(
                _kind="Service",
                Spec=dict(
                    Selector={
                        "foo": "bar",
                    },
                ),
            ),
        ],
        wantPrefilterStatus=Status(Code.SKIP),
    ),
    dict(
        name="TpKeyToDomainsNum is calculated when MinDomains is enabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 3), ("zone2", 4)),
                (("node-x", 0), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 4,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-x": 0,
                    "node-y": 4,
                },
            ],
        ),
    ),
    dict(
        name="feature gate disabled with NodeAffinityPolicy",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-a", 1), ("node-b", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="NodeAffinityPolicy honored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-a", 1), ("node-b", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-c", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn(
            "foo",
            [
                "",
            ],
            "MatchExpressions",
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-e").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-a", 1), ("node-b", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn(
            "foo",
            [
                "",
            ],
            "MatchExpressions",
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-c", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="feature gate disabled with NodeTaintsPolicy",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-c", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("node-c", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[
                (("node-a", 1), ("node-b", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored with tolerated taints",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Label("bar", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-b").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-c").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-d").Node("node-c").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[
                (("node-c", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-c": 0,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 0), ("zone2", 1)),
                (("node-a", 0), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-a": 0,
                    "node-b": 2,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Taints(taints).Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 0), ("zone2", 1)),
                (("node-a", 0), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-a": 0,
                    "node-b": 2,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 0), ("zone2", 1)),
                (("node-b", 0), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 1,
                },
                {
                    "node-b": 0,
                    "node-x": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode()
            .Name("node-b")
            .Label("zone", "zone1")
            .Label("node", "node-b")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Label("foo", "").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            CriticalPaths=[
                (("zone1", 2), ("zone2", 3)),
                (("node-y", 1), ("node-x", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 3,
                },
                {
                    "node-x": 2,
                    "node-y": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "a")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            fooSelector,
            None,
            None,
            None,
            [
                "bar",
            ],
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Exists("foo").Label("bar", "a").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                },
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "a")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            MakeLabelSelector().Obj(),
            None,
            None,
            None,
            [
                "foo",
            ],
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("foo", "a").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 2), ("zone1", 3)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                },
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            None,
            None,
            None,
            None,
            [
                "bar",
            ],
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, None),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 0)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="no pod is matched when LabelSelector is nil when feature gate disabled",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            None,
            None,
            None,
            None,
            [
                "bar",
            ],
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, None),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 0)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
        ),
    ),
    dict(
        name="key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(
            1,
            "zone",
            "DoNotSchedule",
            fooSelector,
            None,
            None,
            None,
            [
                "bar",
            ],
        )
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "a").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "a").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "a").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "a").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 2), ("zone1", 3)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 2,
                },
            ],
        ),
        enableMatchLabelKeys=True,
    ),
    dict(
        name="two spreadConstraints with the same topologyKey",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 2)),
                (("zone1", 1), ("zone2", 3)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 1,
                },
                {
                    "zone1": 1,
                    "zone2": 3,
                },
            ],
        ),
    ),
    dict(
        name="skip if not specified",
        pod=MakePod().Name("p").Label("foo", "").Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
        ],
        wantPrefilterStatus=Status(Code.SKIP),
    ),
]

# TestPreFilterStateAddPod
ADD_POD_CASES: list[Case] = [
    dict(
        name="node a and b both impact current min match",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=None,
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                nodeConstraint,
            ],
            CriticalPaths=[
                (("node-b", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 0,
                },
            ],
        ),
    ),
    dict(
        name="only node a impacts current min match",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                nodeConstraint,
            ],
            CriticalPaths=[
                (("node-a", 1), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 1,
                    "node-b": 1,
                },
            ],
        ),
    ),
    dict(
        name="add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                nodeConstraint,
            ],
            CriticalPaths=[
                (("node-a", 0), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 0,
                    "node-b": 1,
                },
            ],
        ),
    ),
    dict(
        name="add pod on non-critical node won't trigger re-calculation",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodeIdx=1,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                nodeConstraint,
            ],
            CriticalPaths=[
                (("node-a", 0), ("node-b", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "node-a": 0,
                    "node-b": 2,
                },
            ],
        ),
    ),
    dict(
        name="node a and x both impact topologyKeyToMinPodsMap on zone and node",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=None,
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
                nodeConstraint,
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 1)),
                (("node-x", 0), ("node-a", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 0,
                },
                {
                    "node-a": 1,
                    "node-x": 0,
                },
            ],
        ),
    ),
    dict(
        name="only node a impacts topologyKeyToMinPodsMap on zone and node",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
                nodeConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 1)),
                (("node-a", 1), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                },
                {
                    "node-a": 1,
                    "node-x": 1,
                },
            ],
        ),
    ),
    dict(
        name="node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
                nodeConstraint,
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 3)),
                (("node-a", 1), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 1,
                },
                {
                    "node-a": 1,
                    "node-b": 2,
                    "node-x": 1,
                },
            ],
        ),
    ),
    dict(
        name="Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("bar", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 2)),
                (("node-a", 0), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 1,
                },
                {
                    "node-a": 0,
                    "node-b": 1,
                    "node-x": 2,
                },
            ],
        ),
    ),
    dict(
        name="Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone and node",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("bar", "").Obj(),
        ],
        nodeIdx=0,
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
                dict(
                    MaxSkew=1,
                    TopologyKey="node",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 1)),
                (("node-a", 1), ("node-b", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                },
                {
                    "node-a": 1,
                    "node-b": 1,
                    "node-x": 2,
                },
            ],
        ),
    ),
    dict(
        name="add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy disabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "foo",
            [
                "bar",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=0,
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        existingPods=[
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (
                    ("zone2", 1),
                    dict(
                        MatchNum=MAX_INT32,
                    ),
                ),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "foo",
            [
                "bar",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=0,
        addedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        existingPods=[
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (
                    ("zone2", 1),
                    dict(
                        MatchNum=MAX_INT32,
                    ),
                ),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="add a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        addedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        addedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 2,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="add a label selector not matched pod when with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        addedPod=MakePod().Name("p-b1").Node("node-b").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        addedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Taints(taints).Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 2,
                    "zone1": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        addedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Taints(taints).Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 2,
                    "zone1": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
]

# TestPreFilterStateRemovePod
REMOVE_POD_CASES: list[Case] = [
    dict(
        name="one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
        ],
        deletedPodIdx=0,
        nodeIdx=0,
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 1,
                },
            ],
        ),
    ),
    dict(
        name="one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        deletedPodIdx=0,
        nodeIdx=0,
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 1), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 1,
                    "zone2": 2,
                },
            ],
        ),
    ),
    dict(
        name="delete an irrelevant pod won't help",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a0").Node("node-a").Label("bar", "").Obj(),
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        deletedPodIdx=0,
        nodeIdx=0,
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 2), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 2,
                },
            ],
        ),
    ),
    dict(
        name="delete a non-existing pod won't help",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        deletedPodIdx=-1,
        deletedPod=MakePod().Name("p-a0").Node("node-a").Label("bar", "").Obj(),
        nodeIdx=0,
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone1", 2), ("zone2", 2)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 2,
                    "zone2": 2,
                },
            ],
        ),
    ),
    dict(
        name="two spreadConstraints",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
        ],
        deletedPodIdx=3,
        nodeIdx=2,
        want=dict(
            Constraints=[
                zoneConstraint,
                nodeConstraint,
            ],
            CriticalPaths=[
                (("zone2", 1), ("zone1", 3)),
                (("node-b", 1), ("node-x", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone1": 3,
                    "zone2": 1,
                },
                {
                    "node-a": 2,
                    "node-b": 1,
                    "node-x": 1,
                },
            ],
        ),
    ),
    dict(
        name="remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy disabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "foo",
            [
                "bar",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=0,
        deletedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        existingPods=[
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (
                    ("zone2", 1),
                    dict(
                        MatchNum=MAX_INT32,
                    ),
                ),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "foo",
            [
                "bar",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=0,
        deletedPod=MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
        existingPods=[
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (
                    ("zone2", 1),
                    dict(
                        MatchNum=MAX_INT32,
                    ),
                ),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy disabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        deletedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 0,
                    "zone1": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=False,
    ),
    dict(
        name="remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled",
        preemptor=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodeIdx=1,
        deletedPod=MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("zone", "zone1").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Label("zone", "zone2").Obj(),
        ],
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("zone", "zone1")
            .Label("node", "node-a")
            .Label("foo", "bar")
            .Obj(),
            MakeNode().Name("node-b").Label("zone", "zone2").Label("node", "node-b").Label("foo", "").Obj(),
        ],
        want=dict(
            Constraints=[
                zoneConstraint,
            ],
            CriticalPaths=[
                (("zone2", 0), ("zone1", 1)),
            ],
            TpValueToMatchNum=[
                {
                    "zone2": 0,
                    "zone1": 1,
                },
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
]

# TestSingleConstraint
SINGLE_CONSTRAINT_CASES: list[Case] = [
    dict(
        name="no existing pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="no existing pods, incoming pod doesn't match itself",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="existing pods in a different namespace do not count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Namespace("ns2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="existing pods do not match null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="pods spread across zones as 3/3, all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zon", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="pod cannot be scheduled as all nodes don't have label 'rack'",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "rack", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-x": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        },
    ),
    dict(
        name="pods spread across nodes as 2/1/0/3, only node-x fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        pod=MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn(
            "node",
            [
                "node-a",
                "node-y",
            ],
            "MatchExpressions",
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="terminating Pods should be excluded",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityNotIn(
            "node",
            [
                "node-b",
            ],
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, 4, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-c": Code.SUCCESS,
        },
    ),
    dict(
        name="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "DoNotSchedule", fooSelector, 2, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-c": Code.SUCCESS,
        },
    ),
    dict(
        name="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "zone", "DoNotSchedule", fooSelector, 3, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "zone", "DoNotSchedule", fooSelector, 1, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="NodeAffinityPolicy honored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honored with nodeAffinity",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn(
            "foo",
            [
                "",
            ],
            "MatchExpressions",
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy ignored with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeAffinityIn(
            "foo",
            [
                "",
            ],
            "MatchExpressions",
        )
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-b1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
]

# TestMultipleConstraints
MULTIPLE_CONSTRAINTS_CASES: list[Case] = [
    dict(
        name="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        pod=MakePod()
        .Name("p")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("bar", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.SUCCESS,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.SUCCESS,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, honorPolicy, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("foo", "").Obj(),
            MakeNode()
            .Name("node-y")
            .Label("zone", "zone2")
            .Label("node", "node-y")
            .Label("foo", "")
            .Taints(taints)
            .Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.UNSCHEDULABLE,
        },
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="two Constraints on zone, spreads = [3/3, 2/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.SUCCESS,
            "node-y": Code.SUCCESS,
        },
    ),
    dict(
        name="two Constraints on zone, spreads = [3/4, 2/1]",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        wantStatusCode={
            "node-a": Code.UNSCHEDULABLE,
            "node-b": Code.UNSCHEDULABLE,
            "node-x": Code.UNSCHEDULABLE,
            "node-y": Code.UNSCHEDULABLE,
        },
    ),
]

# NodeHint
NODE_HINT_CASES: list[Case] = [
    dict(
        name="node updates label which matches topologyKey",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone2").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="node that doesn't match topologySpreadConstraints updates non-related label",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("foo", "bar1").Obj(),
        newNode=MakeNode().Name("node-a").Label("foo", "bar2").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="node that match topologySpreadConstraints adds non-related label",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Label("foo", "bar")
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="create node with non-related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="create node with related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="delete node with non-related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("foo", "bar").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="delete node with related labels",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="add node with related labels that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="add node with related labels that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="update node with related labels that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="update node with related labels that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node1").Obj(),
        newNode=MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node2").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="update node with different taints that match all topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints(
            [
                dict(
                    Key="aaa",
                    Value="bbb",
                    Effect="NoSchedule",
                ),
            ]
        )
        .Obj(),
        newNode=MakeNode()
        .Name("node-a")
        .Label("zone", "zone1")
        .Label("node", "node1")
        .Taints(
            [
                dict(
                    Key="ccc",
                    Value="bbb",
                    Effect="NoSchedule",
                ),
            ]
        )
        .Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="update node with different taints that only match one of topologySpreadConstraints",
        pod=MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldNode=MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints(
            [
                dict(
                    Key="aaa",
                    Value="bbb",
                    Effect="NoSchedule",
                ),
            ]
        )
        .Obj(),
        newNode=MakeNode()
        .Name("node-a")
        .Label("node", "node1")
        .Taints(
            [
                dict(
                    Key="ccc",
                    Value="bbb",
                    Effect="NoSchedule",
                ),
            ]
        )
        .Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
]

# PodHint
POD_HINT_CASES: list[Case] = [
    dict(
        name="add pod with labels match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="add un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Label("foo", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="update un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Label("foo", "").Obj(),
        oldPod=MakePod().UID("p2").Label("bar", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="delete un-scheduled pod",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Label("foo", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="add pod with different namespace",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Namespace("fake-namespace").Label("foo", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="add pod with labels don't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="delete pod with labels that match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="delete pod with labels that don't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("bar", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="update pod's non-related label",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="add pod's label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="delete pod label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="change pod's label that matches topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "foo1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "foo2").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="change pod's label that doesn't match topologySpreadConstraints selector",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar1").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="add pod's label that matches topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="change pod's label that doesn't match topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("baz", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="change pod's label that match topologySpreadConstraints selector with multi topologySpreadConstraints",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "").Obj(),
        newPod=MakePod().UID("p2").Node("fake-node").Label("foo", "").Label("bar", "bar2").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint with NodeTaintsPolicy:Honor and has got a new toleration",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Honor", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        newPod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        expectedHint=QueueingHint.QUEUE,
        enableNodeInclusionPolicyInPodTopologySpread=True,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint without NodeTaintsPolicy:Honor and has got a new toleration",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        newPod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .Toleration("node.kubernetes.io/unschedulable")
        .Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint and has got a new label matching the selector of the constraint",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Obj(),
        newPod=MakePod().UID("p").Name("p").Label("foo", "").Obj(),
        expectedHint=QueueingHint.QUEUE,
    ),
    dict(
        name="the unschedulable Pod has topologySpreadConstraint and has got a new unrelated label",
        pod=MakePod()
        .UID("p")
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, "Ignore", None)
        .SpreadConstraint(1, "node", "DoNotSchedule", barSelector, None, None, None, None)
        .Obj(),
        oldPod=MakePod().UID("p").Name("p").Obj(),
        newPod=MakePod().UID("p").Name("p").Label("unrelated", "").Obj(),
        expectedHint=QueueingHint.SKIP,
    ),
]


def _ids(cases: Sequence[Case]) -> list[str]:
    return [c["name"] for c in cases]


def _pre_filter(plugin: PodTopologySpread, pod: Pod) -> tuple[CycleState, Status]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod)
    return state, status


def _state(state: CycleState) -> PreFilterState:
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    return s


def _first_match_num(paths: Sequence[Any]) -> int:
    first = paths[0]
    return int(first["MatchNum"]) if isinstance(first, Mapping) else int(first[1])


def assert_state(s: PreFilterState, table: NodeTable, want: Mapping[str, Any]) -> None:
    """Compare with upstream's preFilterState: constraints, TpValueToMatchNum and the minimum
    (CriticalPaths[i][0], whose domain must hold that count)."""
    expected = [constraint_of(c) for c in want.get("Constraints", [])]
    assert len(s.constraints) == len(expected)
    for got, exp in zip(s.constraints, expected, strict=True):
        assert (got.max_skew, got.topology_key, got.min_domains) == (
            exp.max_skew,
            exp.topology_key,
            exp.min_domains,
        )
        assert (got.node_affinity_policy, got.node_taints_policy) == (
            exp.node_affinity_policy,
            exp.node_taints_policy,
        )
        assert selector_key(got.selector) == selector_key(exp.selector)
    counts = [s.domain_counts(i, table) for i in range(len(s.constraints))]
    assert counts == want.get("TpValueToMatchNum", [])
    for i, paths in enumerate(want.get("CriticalPaths", [])):
        assert s.min_count(i) == _first_match_num(paths)
        first = paths[0]
        if not isinstance(first, Mapping) and first[0]:
            assert counts[i][first[0]] == first[1]


@pytest.mark.parametrize("tc", PRE_FILTER_STATE_CASES, ids=_ids(PRE_FILTER_STATE_CASES))
def test_pre_filter_state(tc: Case) -> None:
    table = build_table(tc.get("nodes", []), tc.get("existingPods", []))
    config = {"DefaultingType": "List", "DefaultConstraints": tc.get("defaultConstraints", [])}
    plugin = build_plugin(table, args_of(config), tc.get("objs", []))
    state, status = _pre_filter(plugin, tc["pod"])
    want_status = tc.get("wantPrefilterStatus")
    assert status.code == (Code.SUCCESS if want_status is None else want_status.code)
    if status.is_success:
        assert_state(_state(state), table, tc["want"])


@pytest.mark.parametrize("tc", ADD_POD_CASES, ids=_ids(ADD_POD_CASES))
def test_pre_filter_state_add_pod(tc: Case) -> None:
    table = build_table(tc["nodes"], tc.get("existingPods") or [])
    plugin = build_plugin(table)
    state, status = _pre_filter(plugin, tc["preemptor"])
    assert status.is_success
    row = table.row(tc["nodes"][tc["nodeIdx"]].name)
    assert plugin.add_pod(state, tc["preemptor"], tc["addedPod"], row).is_success
    assert_state(_state(state), table, tc["want"])


@pytest.mark.parametrize("tc", REMOVE_POD_CASES, ids=_ids(REMOVE_POD_CASES))
def test_pre_filter_state_remove_pod(tc: Case) -> None:
    existing = tc.get("existingPods") or []
    table = build_table(tc["nodes"], existing)
    plugin = build_plugin(table)
    state, status = _pre_filter(plugin, tc["preemptor"])
    assert status.is_success
    idx = tc.get("deletedPodIdx", 0)  # Go's zero value when the case leaves it out
    deleted = existing[idx] if 0 <= idx < len(existing) else tc["deletedPod"]
    row = table.row(tc["nodes"][tc["nodeIdx"]].name)
    assert plugin.remove_pod(state, tc["preemptor"], deleted, row).is_success
    assert_state(_state(state), table, tc["want"])


def _filter_codes(tc: Case) -> dict[str, Code]:
    table = build_table(tc["nodes"], tc.get("existingPods", []))
    plugin = build_plugin(table)
    state, status = _pre_filter(plugin, tc["pod"])
    assert status.is_success
    rows = np.asarray([table.row(n.name) for n in tc["nodes"]], dtype=np.intp)
    result = plugin.filter(state, tc["pod"], rows)
    return {n.name: result.status_of(i).code for i, n in enumerate(tc["nodes"])}


@pytest.mark.parametrize("tc", SINGLE_CONSTRAINT_CASES, ids=_ids(SINGLE_CONSTRAINT_CASES))
def test_single_constraint(tc: Case) -> None:
    assert _filter_codes(tc) == tc["wantStatusCode"]


@pytest.mark.parametrize("tc", MULTIPLE_CONSTRAINTS_CASES, ids=_ids(MULTIPLE_CONSTRAINTS_CASES))
def test_multiple_constraints(tc: Case) -> None:
    assert _filter_codes(tc) == tc["wantStatusCode"]


@pytest.mark.parametrize("tc", NODE_HINT_CASES, ids=_ids(NODE_HINT_CASES))
def test_is_schedulable_after_node_change(tc: Case) -> None:
    plugin = build_plugin(NodeTable())
    hint = plugin.is_schedulable_after_node_change(tc["pod"], tc.get("oldNode"), tc.get("newNode"))
    assert hint == tc["expectedHint"]


@pytest.mark.parametrize("tc", POD_HINT_CASES, ids=_ids(POD_HINT_CASES))
def test_is_schedulable_after_pod_change(tc: Case) -> None:
    plugin = build_plugin(NodeTable())
    hint = plugin.is_schedulable_after_pod_change(tc["pod"], tc.get("oldPod"), tc.get("newPod"))
    assert hint == tc["expectedHint"]


# ---- beyond the upstream tables ------------------------------------------------------------------


def _zone_cluster() -> NodeTable:
    nodes = [
        MakeNode().Name("node-a").Label("zone", "zone1").Label("node", "node-a").Obj(),
        MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Obj(),
        MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Obj(),
        MakeNode().Name("node-y").Label("zone", "zone2").Label("node", "node-y").Obj(),
    ]
    pods = [
        MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
        MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
        MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
    ]
    return build_table(nodes, pods)


def test_filter_statuses_and_reasons_are_upstreams() -> None:
    """Skew failures are Unschedulable, a missing key UnschedulableAndUnresolvable, byte for byte."""
    table = _zone_cluster()
    table.set_node(MakeNode().Name("node-z").Label("node", "node-z").Obj())  # no zone label
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    state, _ = _pre_filter(plugin, pod)
    rows = np.arange(table.n, dtype=np.intp)
    result = plugin.filter(state, pod, rows)
    by_name = {table.nodes[int(r)].name: result.status_of(i) for i, r in enumerate(rows)}
    assert by_name["node-a"].code == Code.UNSCHEDULABLE
    assert by_name["node-a"].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert by_name["node-x"].is_success
    assert by_name["node-y"].is_success
    assert by_name["node-z"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert by_name["node-z"].reasons == (
        "node(s) didn't match pod topology spread constraints (missing required label)",
    )


def test_first_failing_constraint_decides_the_status() -> None:
    """A node failing the skew of constraint 0 and lacking the key of constraint 1 is Unschedulable."""
    table = _zone_cluster()
    table.set_node(
        MakeNode().Name("node-b").Label("zone", "zone1").Label("node", "node-b").Label("rack", "r1").Obj()
    )
    table.set_node(
        MakeNode().Name("node-x").Label("zone", "zone2").Label("node", "node-x").Label("rack", "r2").Obj()
    )
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "rack", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    state, status = _pre_filter(plugin, pod)
    assert status.is_success
    # Only node-b and node-x have both keys: zone1 counts node-b's pod, zone2 counts none.
    rows = np.asarray([table.row(n) for n in ("node-a", "node-y", "node-x")], dtype=np.intp)
    result = plugin.filter(state, pod, rows)
    assert result.status_of(0).code == Code.UNSCHEDULABLE  # zone skew 1 + 1 - 0 > 1, before the rack check
    assert result.status_of(1).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # zone ok, no rack label
    assert result.status_of(2).is_success


def test_filter_without_pre_filter_is_an_error() -> None:
    """TestPreFilterDisabled."""
    table = build_table([MakeNode().Name("n").Obj()])
    result = build_plugin(table).filter(CycleState(), Pod(name="p"), np.arange(1, dtype=np.intp))
    assert result.status_of(0).code == Code.ERROR
    assert result.status_of(0).reasons == ('reading "PreFilterPodTopologySpread" from cycleState: not found',)


def test_invalid_selector_is_a_pre_filter_error() -> None:
    bad = LabelSelector(match_expressions=(Requirement("foo", "In", ()),))
    pod = MakePod().Name("p").SpreadConstraint(1, "zone", "DoNotSchedule", bad, None, None, None, None).Obj()
    _, status = _pre_filter(build_plugin(_zone_cluster()), pod)
    assert status.code == Code.ERROR
    assert "obtaining pod's hard topology spread constraints" in status.message


def test_empty_selector_counts_nothing_but_matches_itself() -> None:
    """countPodsMatchSelector returns 0 for an empty selector, while Selector.Matches is true:
    existing pods are not counted, but the incoming pod matches itself."""
    table = _zone_cluster()
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .SpreadConstraint(1, "node", "DoNotSchedule", LabelSelector(), None, None, None, None)
        .Obj()
    )
    state, _ = _pre_filter(plugin, pod)
    s = _state(state)
    assert s.domain_counts(0, table) == {"node-a": 0, "node-b": 0, "node-x": 0, "node-y": 0}
    # AddPod uses Selector.Matches, so the empty selector counts the added pod.
    plugin.add_pod(state, pod, MakePod().Name("q").Node("node-x").Obj(), table.row("node-x"))
    assert s.domain_counts(0, table)["node-x"] == 1


def test_clone_is_independent() -> None:
    table = _zone_cluster()
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    state, _ = _pre_filter(plugin, pod)
    trial = state.clone()
    added = MakePod().Name("q").Label("foo", "").Obj()
    plugin.add_pod(trial, pod, added, table.row("node-x"))
    assert _state(trial).domain_counts(0, table) == {"zone1": 3, "zone2": 1}
    assert _state(state).domain_counts(0, table) == {"zone1": 3, "zone2": 0}


def test_pod_index_follows_the_table() -> None:
    """Counts see pods added after the plugin was built, row moves and node removals."""
    table = _zone_cluster()
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    table.add_pod(MakePod().Name("late").Node("node-y").Label("foo", "").Obj(), table.row("node-y"))
    state, _ = _pre_filter(plugin, pod)
    assert _state(state).domain_counts(0, table) == {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 1}
    table.remove_node("node-a")  # node-y moves into node-a's row
    state, _ = _pre_filter(plugin, pod)
    assert _state(state).domain_counts(0, table) == {"node-b": 1, "node-x": 0, "node-y": 1}
    table.remove_pod(MakePod().Name("late").Obj(), table.row("node-y"))
    state, _ = _pre_filter(plugin, pod)
    assert _state(state).domain_counts(0, table) == {"node-b": 1, "node-x": 0, "node-y": 0}


def test_nominated_pods_through_the_framework_path() -> None:
    """The framework adds nominated pods to the table and calls add_pod on a cloned state:
    the cloned counts include them, the original state does not."""
    table = _zone_cluster()
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    state, _ = _pre_filter(plugin, pod)
    row = table.row("node-x")
    nominated = MakePod().Name("n").Node("node-x").Label("foo", "").Obj()
    trial = state.clone()
    table.add_pod(nominated, row)
    try:
        assert plugin.add_pod(trial, pod, nominated, row).is_success
        result = plugin.filter(trial, pod, np.asarray([row, table.row("node-y")], dtype=np.intp))
        # node-x now holds 1 matching pod, node-y 0: node-x exceeds maxSkew 1 (1 + 1 - 0).
        assert result.status_of(0).code == Code.UNSCHEDULABLE
        assert result.status_of(1).is_success
    finally:
        table.remove_pod(nominated, row)
    assert plugin.filter(state, pod, np.asarray([row], dtype=np.intp)).status_of(0).is_success


def test_events_to_register() -> None:
    events = build_plugin(NodeTable()).events_to_register()
    assert [e.event.resource for e in events] == [Resource.POD, Resource.NODE]
    assert (
        events[0].event.action
        == Action.ADD | Action.UPDATE_POD_LABEL | Action.UPDATE_POD_TOLERATION | Action.DELETE
    )
    assert (
        events[1].event.action
        == Action.ADD | Action.DELETE | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT
    )
    assert all(e.hint is not None for e in events)


def test_default_constraints_use_owner_selectors() -> None:
    """Default constraints apply only to pods without constraints, with the owners' selector."""
    table = _zone_cluster()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    }
    service = {"_kind": "Service", "Spec": {"Selector": {"foo": ""}}}
    plugin = build_plugin(table, args, [service])
    owned = MakePod().Name("p").Label("foo", "").Obj()
    state, status = _pre_filter(plugin, owned)
    assert status.is_success
    assert _state(state).domain_counts(0, table) == {"zone1": 3, "zone2": 0}
    # Without the service, the selector is empty and the defaults are skipped.
    no_service = PodTopologySpread.from_profile(Handle(table=table), args)
    _, status = _pre_filter(no_service, owned)
    assert status.code == Code.SKIP


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultingType": "Custom"}, "defaultingType: Unsupported value"),
        (
            {
                "defaultingType": "System",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "when .defaultConstraints are not empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "not in valid range",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "can not be empty",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "a/b/c", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "topologyKey: Invalid value",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}],
            },
            "whenUnsatisfiable: Unsupported value",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
            "must not define a selector",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
            "Duplicate value",
        ),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        build_plugin(NodeTable(), args)


def test_system_defaulting_is_the_default() -> None:
    plugin = build_plugin(NodeTable(), {})
    assert plugin.system_defaulted
    assert [(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in plugin.default_constraints] == [
        (HOSTNAME, 3, "ScheduleAnyway"),
        ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
    ]


def test_default_selector_reference_implementation() -> None:
    """helper.DefaultSelector: matching Services merged, plus the controller's selector."""
    pod = Pod(
        name="p",
        namespace="ns",
        labels={"app": "web", "tier": "fe"},
        owner_references=(OwnerReference(kind="ReplicaSet", name="rs", controller=True),),
    )
    services: list[tuple[str, Mapping[str, str] | None]] = [
        ("ns", {"app": "web"}),
        ("ns", {"app": "db"}),  # does not select the pod
        ("other", {"app": "web"}),  # other namespace
        ("ns", None),  # a nil selector matches nothing
    ]
    rs = MakeLabelSelector().Exists("tier").Obj()
    got = default_selector(pod, services, {}, {("ns", "rs"): rs}, {})
    assert got == LabelSelector(
        match_labels=(("app", "web"),), match_expressions=(Requirement("tier", "Exists"),)
    )
    assert default_selector(Pod(name="q", namespace="ns"), services, {}, {}, {}) is None


def test_hints_skip_unrelated_nodes_and_queue_new_domains() -> None:
    plugin = build_plugin(NodeTable())
    pod = (
        MakePod()
        .Name("p")
        .SpreadConstraint(1, "zone", "DoNotSchedule", fooSelector, None, None, None, None)
        .Obj()
    )
    node = Node(name="n", labels={"zone": "z"})
    assert plugin.is_schedulable_after_node_change(pod, None, node) == QueueingHint.QUEUE
    assert plugin.is_schedulable_after_node_change(pod, None, Node(name="n")) == QueueingHint.SKIP


class _Nominator:
    def __init__(self, nominated: Mapping[str, list[Pod]]) -> None:
        self.nominated = nominated

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.nominated.get(node_name, []))

    def nominated_priorities(self) -> dict[str, int]:
        return {node: max(p.priority for p in pods) for node, pods in self.nominated.items() if pods}


def test_through_the_framework_with_nominated_pods() -> None:
    """Framework run: nominated pods count through add_pod on a cloned state; scores stay in range."""
    from policy_scheduler.scheduler.config import EXTENSION_POINTS, PluginRef, ResolvedProfile
    from policy_scheduler.scheduler.framework.runtime import Framework
    from policy_scheduler.scheduler.plugins.defaultbinder import DefaultBinder
    from policy_scheduler.scheduler.plugins.queuesort import PrioritySort

    name = PodTopologySpread.name
    points: dict[str, tuple[PluginRef, ...]] = {point: () for point in EXTENSION_POINTS}
    points.update(
        queueSort=(PluginRef(PrioritySort.name),),
        preFilter=(PluginRef(name),),
        filter=(PluginRef(name),),
        preScore=(PluginRef(name),),
        score=(PluginRef(name, 2),),
        bind=(PluginRef(DefaultBinder.name),),
    )
    profile = ResolvedProfile(
        "default-scheduler", None, points, {name: {"defaultingType": "List"}}, 1.0, 10.0, None
    )
    table = _zone_cluster()
    nominated = MakePod().Name("n").UID("n").Label("foo", "").Obj()
    handle = Handle(table=table, nominator=_Nominator({"node-x": [nominated]}))
    registry = {PrioritySort.name: PrioritySort, DefaultBinder.name: DefaultBinder, name: PodTopologySpread}
    framework = Framework(profile, registry, handle)
    pod = (
        MakePod()
        .Name("p")
        .UID("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "DoNotSchedule", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj()
    )
    state = CycleState()
    _, status, _ = framework.run_pre_filter(state, pod)
    assert status.is_success
    rows = np.asarray([table.row(n) for n in ("node-a", "node-b", "node-x", "node-y")], dtype=np.intp)
    outcome = framework.run_filters_with_nominated_pods(state, pod, rows)
    assert outcome.passed.tolist() == [False, False, False, True]
    assert outcome.status_at(2).plugin == name
    assert not table.pods[table.row("node-x")]  # the nominated pod was taken off again
    assert framework.run_pre_score(state, pod, rows[3:]).is_success
    scores = framework.run_score(state, pod, rows[3:])
    assert scores.by_plugin[name].tolist() == [200]


def test_incremental_counts_match_a_recount() -> None:
    """The per-selector counts kept up to date through the table listener equal a recount after
    random pod adds/removes (terminating pods, namespaces, re-added keys) and node removals."""
    import random

    from policy_scheduler.scheduler.plugins.podtopologyspread.common import pod_index
    from policy_scheduler.scheduler.selectors import compile_label_selector

    rng = random.Random(7)
    table = build_table([MakeNode().Name(f"n{i}").Label("zone", f"z{i % 3}").Obj() for i in range(12)])
    index = pod_index(table)
    selectors = [
        compile_label_selector(MakeLabelSelector().Label("app", "a").Obj()),
        compile_label_selector(MakeLabelSelector().Exists("app").Obj()),
        compile_label_selector(MakeLabelSelector().NotIn("app", ["b"]).Obj()),
    ]
    for sel in selectors:
        index.match_counts(table, sel, "ns1")  # cached before the changes
    placed: dict[str, tuple[Pod, str]] = {}

    def recount(sel: Any, namespace: str) -> list[int]:
        return [
            sum(
                1
                for p in table.pods_on(r)
                if p.namespace == namespace and not p.terminating and sel.matches(p.labels)
            )
            for r in range(table.n)
        ]

    for step in range(400):
        op = rng.random()
        if op < 0.6 or not placed:
            name = f"p{rng.randrange(60)}"
            if name in placed:
                old, node = placed.pop(name)
                table.remove_pod(old, table.row(node))
            node = rng.choice(table.names_of(range(table.n)))
            pod = MakePod().Name(name).Namespace(rng.choice(["ns1", "ns2"])).Node(node)
            if rng.random() < 0.8:
                pod = pod.Label("app", rng.choice(["a", "b", "c"]))
            if rng.random() < 0.15:
                pod = pod.Terminating()
            placed[name] = (pod.Obj(), node)
            table.add_pod(placed[name][0], table.row(node))
        elif op < 0.95:
            name = rng.choice(sorted(placed))
            pod_obj, node = placed.pop(name)
            table.remove_pod(pod_obj, table.row(node))
        elif table.n > 4:
            node = rng.choice(table.names_of(range(table.n)))
            for pod_obj in table.remove_node(node):
                placed.pop(pod_obj.name, None)
        if step % 20 == 0:
            table.set_node(MakeNode().Name(f"extra{step}").Label("zone", "z9").Obj())
        for sel in selectors:
            for namespace in ("ns1", "ns2"):
                assert index.match_counts(table, sel, namespace).tolist() == recount(sel, namespace)


def test_evicted_selector_counts_are_recomputed(monkeypatch: pytest.MonkeyPatch) -> None:
    from policy_scheduler.scheduler.plugins.podtopologyspread import common
    from policy_scheduler.scheduler.selectors import compile_label_selector

    monkeypatch.setattr(common, "_MAX_CACHED_SELECTORS", 2)
    table = _zone_cluster()
    index = common.pod_index(table)
    sels = [compile_label_selector(MakeLabelSelector().Label("foo", "").Obj())] + [
        compile_label_selector(MakeLabelSelector().Label("k", str(i)).Obj()) for i in range(3)
    ]
    for sel in sels:
        index.match_counts(table, sel, "")
    # `sels[0]` was evicted: a pod added now is only seen through a recount.
    table.add_pod(MakePod().Name("new").Node("node-y").Label("foo", "").Obj(), table.row("node-y"))
    assert index.match_counts(table, sels[0], "").tolist() == [2, 1, 0, 1]
