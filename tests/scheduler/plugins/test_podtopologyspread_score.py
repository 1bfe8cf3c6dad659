"""PodTopologySpread PreScore/Score/NormalizeScore.

The tables are ported from kube-scheduler v1.35.4 podtopologyspread/scoring_test.go
(TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore). The
MatchLabelKeys gate is on by default in v1.35, so the case for the disabled gate is left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE, MIN_NODE_SCORE, Handle
from policy_scheduler.scheduler.framework.status import Code
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.podtopologyspread import PodTopologySpread
from policy_scheduler.scheduler.plugins.podtopologyspread.plugin import PRE_SCORE_STATE_KEY
from policy_scheduler.scheduler.plugins.podtopologyspread.scoring import PreScoreState, _round_half_away

from ._build_podtopologyspread import (
    HOSTNAME,
    NOTHING,
    ZONE,
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
    selector_key,
    taints,
    topologyNormalizingWeight,
)

Case = dict[str, Any]

# TestPreScoreSkip
PRE_SCORE_SKIP_CASES: list[Case] = [
    dict(
        name="the pod doesn't have soft topology spread Constraints",
        pod=MakePod().Name("p").Namespace("default").Obj(),
        config=dict(
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
    ),
    dict(
        name="default constraints and a replicaset that doesn't match",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs2", "ReplicaSet")
        .Obj(),
        config=dict(
            DefaultConstraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label("planet", "mars").Obj(),
        ],
        objs=[
            dict(
                _kind="ReplicaSet",
                ObjectMeta=dict(
                    Namespace="default",
                    Name="rs1",
                ),
                Spec=dict(
                    Selector=MakeLabelSelector().Exists("tar").Obj(),
                ),
            ),
        ],
    ),
]

# TestPreScoreStateEmptyNodes
PRE_SCORE_STATE_CASES: list[Case] = [
    dict(
        name="normal case",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
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
                    TopologyKey=HOSTNAME,
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
                {},
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
                topologyNormalizingWeight(3),
            ],
        ),
    ),
    dict(
        name="null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
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
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
            ],
        ),
    ),
    dict(
        name="node-x doesn't have label zone",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
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
                    TopologyKey=HOSTNAME,
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes={"node-x"},
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                },
                {},
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(1),
                topologyNormalizingWeight(2),
            ],
        ),
    ),
    dict(
        name="system default constraints and a replicaset",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", "ReplicaSet")
        .Obj(),
        config=dict(
            DefaultingType="System",
        ),
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Label(ZONE, "mars").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Label(ZONE, "mars").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        objs=[
            dict(
                _kind="ReplicaSet",
                ObjectMeta=dict(
                    Namespace="default",
                    Name="rs1",
                ),
                Spec=dict(
                    Selector=fooSelector,
                ),
            ),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=3,
                    TopologyKey=HOSTNAME,
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=5,
                    TopologyKey=ZONE,
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {},
                {
                    "mars": 0,
                    "": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(4),
                topologyNormalizingWeight(2),
            ],
        ),
    ),
    dict(
        name="default constraints and a replicaset",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "tar")
        .Label("baz", "sup")
        .OwnerReference("rs1", "ReplicaSet")
        .Obj(),
        config=dict(
            DefaultConstraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey=HOSTNAME,
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
                dict(
                    MaxSkew=2,
                    TopologyKey="rack",
                    WhenUnsatisfiable="DoNotSchedule",
                ),
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode()
            .Name("node-a")
            .Label("rack", "rack1")
            .Label(HOSTNAME, "node-a")
            .Label("planet", "mars")
            .Obj(),
        ],
        objs=[
            dict(
                _kind="ReplicaSet",
                ObjectMeta=dict(
                    Namespace="default",
                    Name="rs1",
                ),
                Spec=dict(
                    Selector=fooSelector,
                ),
            ),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey=HOSTNAME,
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    Selector=mustConvertLabelSelectorAsSelector(None, fooSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {},
                {
                    "mars": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(1),
                topologyNormalizingWeight(1),
            ],
        ),
    ),
    dict(
        name="default constraints and a replicaset, but pod has constraints",
        pod=MakePod()
        .Name("p")
        .Namespace("default")
        .Label("foo", "bar")
        .Label("baz", "sup")
        .OwnerReference("rs1", "ReplicaSet")
        .SpreadConstraint(1, "zone", "DoNotSchedule", barSelector, None, None, None, None)
        .SpreadConstraint(
            2,
            "planet",
            "ScheduleAnyway",
            MakeLabelSelector().Label("baz", "sup").Obj(),
            None,
            None,
            None,
            None,
        )
        .Obj(),
        config=dict(
            DefaultConstraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="galaxy",
                    WhenUnsatisfiable="ScheduleAnyway",
                ),
            ],
            DefaultingType="List",
        ),
        nodes=[
            MakeNode().Name("node-a").Label("planet", "mars").Label("galaxy", "andromeda").Obj(),
        ],
        objs=[
            dict(
                _kind="ReplicaSet",
                ObjectMeta=dict(
                    Namespace="default",
                    Name="rs1",
                ),
                Spec=dict(
                    Selector=fooSelector,
                ),
            ),
        ],
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=2,
                    TopologyKey="planet",
                    Selector=mustConvertLabelSelectorAsSelector(
                        None, MakeLabelSelector().Label("baz", "sup").Obj()
                    ),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "mars": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(1),
            ],
        ),
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
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
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
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
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
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
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
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Ignore",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Taints(taints).Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Honor",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label("foo", "").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Taints(taints).Obj(),
        ],
        config=dict(
            DefaultingType="List",
        ),
        want=dict(
            Constraints=[
                dict(
                    MaxSkew=1,
                    TopologyKey="zone",
                    Selector=mustConvertLabelSelectorAsSelector(None, barSelector),
                    MinDomains=1,
                    NodeAffinityPolicy="Honor",
                    NodeTaintsPolicy="Ignore",
                ),
            ],
            IgnoredNodes=set(),
            TopologyValueToPodCounts=[
                {
                    "zone1": 0,
                    "zone2": 0,
                },
            ],
            TopologyNormalizingWeight=[
                topologyNormalizingWeight(2),
            ],
        ),
        enableNodeInclusionPolicy=True,
    ),
]

# TestPodTopologySpreadScore
SCORE_CASES: list[Case] = [
    dict(
        name="one constraint on node, no existing pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, only one node is candidate",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, all nodes have the same number of matching pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, all 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(
                Name="node-a",
                Score=20,
            ),
            dict(
                Name="node-b",
                Score=60,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
            dict(
                Name="node-d",
                Score=0,
            ),
        ],
    ),
    dict(
        name="one constraint on node, null selector",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", None, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
            dict(
                Name="node-d",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, all 4 nodes are candidates, maxSkew=2",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d2").Node("node-d").Label("foo", "").Obj(),
            MakePod().Name("p-d3").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(
                Name="node-a",
                Score=33,
            ),
            dict(
                Name="node-b",
                Score=66,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
            dict(
                Name="node-d",
                Score=16,
            ),
        ],
    ),
    dict(
        name="one constraint on node, all 4 nodes are candidates, maxSkew=3",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(3, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(
                Name="node-a",
                Score=44,
            ),
            dict(
                Name="node-b",
                Score=66,
            ),
            dict(
                Name="node-c",
                Score=77,
            ),
            dict(
                Name="node-d",
                Score=100,
            ),
        ],
    ),
    dict(
        name="system defaulting, nodes don't have zone, pods match service",
        pod=MakePod().Name("p").Label("foo", "").Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b3").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-d1").Node("node-d").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label(HOSTNAME, "node-d").Obj(),
        ],
        failedNodes=[],
        objs=[
            dict(
                _kind="Service",
                Spec=dict(
                    Selector={
                        "foo": "",
                    },
                ),
            ),
        ],
        want=[
            dict(
                Name="node-a",
                Score=44,
            ),
            dict(
                Name="node-b",
                Score=66,
            ),
            dict(
                Name="node-c",
                Score=77,
            ),
            dict(
                Name="node-d",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label(HOSTNAME, "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label(HOSTNAME, "node-y").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=33,
            ),
            dict(
                Name="node-b",
                Score=83,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("n", "node-b").Obj(),
            MakeNode().Name("node-x").Label(HOSTNAME, "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label(HOSTNAME, "node-y").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=16,
            ),
            dict(
                Name="node-b",
                Score=0,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
        ],
    ),
    dict(
        name="one constraint on zone, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a3").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a4").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("zone", "zone2").Label(HOSTNAME, "node-y").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=75,
            ),
            dict(
                Name="node-b",
                Score=75,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
        ],
    ),
    dict(
        name="two Constraints on zone and node, 2 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-x2").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y4").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label(HOSTNAME, "node-y").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-x",
                Score=63,
            ),
        ],
    ),
    dict(
        name="two Constraints on zone, 2 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, "zone", "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y3").Node("node-y").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-b").Label("zone", "zone1").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=85,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
        ],
    ),
    dict(
        name="two Constraints on zone and node, with different labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label(HOSTNAME, "node-y").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(
                Name="node-a",
                Score=60,
            ),
            dict(
                Name="node-b",
                Score=20,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
            dict(
                Name="node-y",
                Score=60,
            ),
        ],
    ),
    dict(
        name="two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-b1").Node("node-b").Label("bar", "").Obj(),
            MakePod().Name("p-x1").Node("node-x").Label("foo", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
            MakeNode().Name("node-y").Label("zone", "zone2").Label(HOSTNAME, "node-y").Obj(),
        ],
        failedNodes=[],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=60,
            ),
            dict(
                Name="node-x",
                Score=40,
            ),
            dict(
                Name="node-y",
                Score=0,
            ),
        ],
    ),
    dict(
        name="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", barSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-y").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-y").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-x").Label("zone", "zone2").Label(HOSTNAME, "node-x").Obj(),
        ],
        failedNodes=[
            MakeNode().Name("node-y").Label("zone", "zone2").Label(HOSTNAME, "node-y").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=50,
            ),
            dict(
                Name="node-b",
                Score=25,
            ),
            dict(
                Name="node-x",
                Score=100,
            ),
        ],
    ),
    dict(
        name="existing pods in a different namespace do not count",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-b2").Node("node-b").Label("foo", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=33,
            ),
        ],
    ),
    dict(
        name="terminating Pods should be excluded",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, HOSTNAME, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label(HOSTNAME, "node-b").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a").Node("node-a").Label("foo", "").Terminating().Obj(),
            MakePod().Name("p-b").Node("node-b").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=100,
            ),
            dict(
                Name="node-b",
                Score=0,
            ),
        ],
    ),
    dict(
        name="minDomains has no effect when ScheduleAnyway",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "node", "ScheduleAnyway", fooSelector, 10, None, None, None)
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
        want=[
            dict(
                Name="node-a",
                Score=75,
            ),
            dict(
                Name="node-b",
                Score=75,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
    ),
    dict(
        name="NodeAffinityPolicy honoed with labelSelectors",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .NodeSelector(
            {
                "foo": "",
            }
        )
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=0,
            ),
            dict(
                Name="node-b",
                Score=33,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
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
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=66,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeAffinityPolicy honoed with nodeAffinity",
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
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=0,
            ),
            dict(
                Name="node-b",
                Score=33,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
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
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, ignorePolicy, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=66,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy honored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, honorPolicy, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=0,
            ),
            dict(
                Name="node-b",
                Score=33,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="NodeTaintsPolicy ignored",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "node", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj(),
        nodes=[
            MakeNode().Name("node-a").Label("node", "node-a").Obj(),
            MakeNode().Name("node-b").Label("node", "node-b").Obj(),
            MakeNode().Name("node-c").Label("node", "node-c").Taints(taints).Obj(),
        ],
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-a2").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=66,
            ),
            dict(
                Name="node-b",
                Score=100,
            ),
            dict(
                Name="node-c",
                Score=100,
            ),
        ],
        enableNodeInclusionPolicy=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .SpreadConstraint(
            1,
            "zone",
            "ScheduleAnyway",
            MakeLabelSelector().Obj(),
            None,
            None,
            None,
            [
                "foo",
            ],
        )
        .SpreadConstraint(
            1,
            HOSTNAME,
            "ScheduleAnyway",
            MakeLabelSelector().Obj(),
            None,
            None,
            None,
            [
                "bar",
            ],
        )
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Obj(),
            MakePod().Name("p-y1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-y2").Node("node-c").Label("bar", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label("zone", "zone2").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label("zone", "zone2").Label(HOSTNAME, "node-d").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=60,
            ),
            dict(
                Name="node-b",
                Score=20,
            ),
            dict(
                Name="node-c",
                Score=60,
            ),
            dict(
                Name="node-d",
                Score=100,
            ),
        ],
        enableMatchLabelKeys=True,
    ),
    dict(
        name="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        pod=MakePod()
        .Name("p")
        .Label("foo", "")
        .Label("bar", "")
        .Label("baz", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .SpreadConstraint(
            1,
            HOSTNAME,
            "ScheduleAnyway",
            barSelector,
            None,
            None,
            None,
            [
                "baz",
            ],
        )
        .Obj(),
        existingPods=[
            MakePod().Name("p-a1").Node("node-a").Label("foo", "").Obj(),
            MakePod().Name("p-b1").Node("node-b").Label("foo", "").Label("bar", "").Label("baz", "").Obj(),
            MakePod().Name("p-c1").Node("node-c").Label("foo", "").Obj(),
            MakePod().Name("p-c2").Node("node-c").Label("bar", "").Obj(),
            MakePod().Name("p-d3").Node("node-c").Label("bar", "").Label("baz", "").Obj(),
        ],
        nodes=[
            MakeNode().Name("node-a").Label("zone", "zone1").Label(HOSTNAME, "node-a").Obj(),
            MakeNode().Name("node-b").Label("zone", "zone1").Label(HOSTNAME, "node-b").Obj(),
            MakeNode().Name("node-c").Label("zone", "zone2").Label(HOSTNAME, "node-c").Obj(),
            MakeNode().Name("node-d").Label("zone", "zone2").Label(HOSTNAME, "node-d").Obj(),
        ],
        want=[
            dict(
                Name="node-a",
                Score=60,
            ),
            dict(
                Name="node-b",
                Score=20,
            ),
            dict(
                Name="node-c",
                Score=60,
            ),
            dict(
                Name="node-d",
                Score=100,
            ),
        ],
        enableMatchLabelKeys=True,
    ),
]


def _ids(cases: Sequence[Case]) -> list[str]:
    return [c["name"] for c in cases]


def _rows(table: NodeTable, nodes: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.asarray([table.row(n.name) for n in nodes], dtype=np.intp)


@pytest.mark.parametrize("tc", PRE_SCORE_SKIP_CASES, ids=_ids(PRE_SCORE_SKIP_CASES))
def test_pre_score_skip(tc: Case) -> None:
    table = build_table(tc["nodes"])
    plugin = build_plugin(table, args_of(tc["config"]), tc.get("objs", []))
    assert plugin.pre_score(CycleState(), tc["pod"], _rows(table, tc["nodes"])).code == Code.SKIP


@pytest.mark.parametrize("tc", PRE_SCORE_STATE_CASES, ids=_ids(PRE_SCORE_STATE_CASES))
def test_pre_score_state_empty_nodes(tc: Case) -> None:
    table = build_table(tc["nodes"])
    plugin = build_plugin(table, args_of(tc.get("config")), tc.get("objs", []))
    state = CycleState()
    assert plugin.pre_score(state, tc["pod"], _rows(table, tc["nodes"])).is_success
    s = state.read(PRE_SCORE_STATE_KEY)
    assert isinstance(s, PreScoreState)
    want = tc["want"]
    expected = [constraint_of(c) for c in want["Constraints"]]
    assert [
        (c.max_skew, c.topology_key, c.min_domains, c.node_affinity_policy, c.node_taints_policy)
        for c in s.constraints
    ] == [
        (c.max_skew, c.topology_key, c.min_domains, c.node_affinity_policy, c.node_taints_policy)
        for c in expected
    ]
    assert [selector_key(c.selector) for c in s.constraints] == [selector_key(c.selector) for c in expected]
    assert set(table.names_of(s.ignored_rows)) == want["IgnoredNodes"]
    assert [s.domain_counts(i, table) for i in range(len(s.constraints))] == want["TopologyValueToPodCounts"]
    assert s.weights == want["TopologyNormalizingWeight"]


def _scores(plugin: PodTopologySpread, table: NodeTable, tc: Case) -> dict[str, int]:
    rows = _rows(table, tc["nodes"])
    state = CycleState()
    assert plugin.pre_score(state, tc["pod"], rows).is_success
    scores = plugin.normalize_score(state, tc["pod"], plugin.score(state, tc["pod"], rows))
    return {n.name: int(v) for n, v in zip(tc["nodes"], scores, strict=True)}


@pytest.mark.parametrize("tc", SCORE_CASES, ids=_ids(SCORE_CASES))
def test_pod_topology_spread_score(tc: Case) -> None:
    all_nodes = [*tc["nodes"], *(tc.get("failedNodes") or [])]
    table = build_table(all_nodes, tc.get("existingPods") or [])
    plugin = build_plugin(table, {"defaultingType": "System"}, tc.get("objs", []))
    assert _scores(plugin, table, tc) == {s["Name"]: s["Score"] for s in tc["want"]}


# ---- beyond the upstream tables ------------------------------------------------------------------


def test_round_half_away_from_zero() -> None:
    """Score rounds like Go's math.Round (halves away from zero), not banker's rounding."""
    values = np.asarray([0.5, 1.5, 2.5, 2.4999999999999996, 0.49999999999999994, 3.0])
    assert _round_half_away(values).tolist() == [1, 2, 3, 2, 0, 3]


def test_raw_scores_before_normalizing() -> None:
    """Score is sum(count * log(size + 2) + maxSkew - 1), rounded; zone domains 3/1/0."""
    nodes = [
        MakeNode().Name("a").Label("zone", "z1").Obj(),
        MakeNode().Name("b").Label("zone", "z2").Obj(),
        MakeNode().Name("c").Label("zone", "z3").Obj(),
    ]
    pods = [MakePod().Name(f"p{i}").Node("a").Label("foo", "").Obj() for i in range(3)]
    pods.append(MakePod().Name("q").Node("b").Label("foo", "").Obj())
    table = build_table(nodes, pods)
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(2, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj()
    )
    rows = _rows(table, nodes)
    state = CycleState()
    plugin.pre_score(state, pod, rows)
    raw = plugin.score(state, pod, rows)
    weight = math.log(3 + 2)
    assert raw.tolist() == [round(3 * weight + 1), round(1 * weight + 1), 1]
    normalized = plugin.normalize_score(state, pod, raw)
    assert normalized.tolist() == [MAX_NODE_SCORE * (6 + 1 - s) // 6 for s in raw.tolist()]
    assert normalized.min() >= MIN_NODE_SCORE
    assert normalized.max() <= MAX_NODE_SCORE


def test_ignored_nodes_score_zero_and_are_left_out_of_the_range() -> None:
    nodes = [
        MakeNode().Name("a").Label("zone", "z1").Obj(),
        MakeNode().Name("b").Label("zone", "z2").Obj(),
        MakeNode().Name("c").Obj(),  # no zone: ignored
    ]
    pods = [MakePod().Name("p1").Node("a").Label("foo", "").Obj()]
    table = build_table(nodes, pods)
    plugin = build_plugin(table)
    pod = (
        MakePod()
        .Name("p")
        .Label("foo", "")
        .SpreadConstraint(1, "zone", "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj()
    )
    tc = {"pod": pod, "nodes": nodes}
    # raw: a = round(1 * log(4)) = 1, b = 0; normalized: a = 100 * (1 + 0 - 1) / 1 = 0, b = 100
    assert _scores(plugin, table, tc) == {"a": 0, "b": 100, "c": 0}


def test_system_defaults_need_owner_selectors() -> None:
    """With System defaulting and no owner selector service, a pod without constraints is skipped."""
    nodes = [MakeNode().Name("a").Label(HOSTNAME, "a").Obj()]
    table = build_table(nodes)
    plugin = PodTopologySpread.from_profile(Handle(table=table), {})
    assert (
        plugin.pre_score(CycleState(), MakePod().Name("p").Label("foo", "").Obj(), _rows(table, nodes)).code
        == Code.SKIP
    )


def test_pre_score_skips_an_empty_cluster() -> None:
    plugin = build_plugin(NodeTable())
    pod = (
        MakePod()
        .Name("p")
        .SpreadConstraint(1, ZONE, "ScheduleAnyway", fooSelector, None, None, None, None)
        .Obj()
    )
    assert plugin.pre_score(CycleState(), pod, np.zeros(0, dtype=np.intp)).code == Code.SKIP


def test_missing_zone_shares_the_empty_value_domain() -> None:
    """Upstream reads node.Labels[key], so under system defaulting a node without a zone and a
    node labelled zone="" are one domain ("")."""
    nodes = [
        MakeNode().Name("a").Label(HOSTNAME, "a").Label(ZONE, "z1").Obj(),
        MakeNode().Name("b").Label(HOSTNAME, "b").Label(ZONE, "").Obj(),
        MakeNode().Name("c").Label(HOSTNAME, "c").Obj(),
    ]
    pods = [MakePod().Name("q").Node("c").Label("foo", "").Obj()]
    table = build_table(nodes, pods)
    service = {"_kind": "Service", "Spec": {"Selector": {"foo": ""}}}
    plugin = build_plugin(table, {"defaultingType": "System"}, [service])
    state = CycleState()
    assert plugin.pre_score(state, MakePod().Name("p").Label("foo", "").Obj(), _rows(table, nodes)).is_success
    s = state.read(PRE_SCORE_STATE_KEY)
    assert isinstance(s, PreScoreState)
    assert s.domain_counts(1, table) == {"z1": 0, "": 1}
    assert s.weights == [topologyNormalizingWeight(3), topologyNormalizingWeight(2)]
