"""InterPodAffinity PreFilter/Filter: ported from upstream filtering_test.go and plugin_test.go
(kube-scheduler v1.35.4), plus index/incremental checks of the batch implementation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import QueueingHint
from policy_scheduler.scheduler.framework.status import (
    SKIP,
    SUCCESS,
    Code,
    Status,
    unresolvable,
    unschedulable,
)
from policy_scheduler.scheduler.model import Affinity, LabelSelector, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity
from policy_scheduler.scheduler.plugins.interpodaffinity.filtering import PreFilterState
from policy_scheduler.scheduler.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY

from ._build_interpodaffinity import (
    NAMESPACES,
    affinity,
    all_rows,
    build,
    exprs,
    new_state,
    node,
    pod,
    rows_of,
    sel_exists,
    sel_in,
    sel_not_in,
    term,
)

AFF = unresolvable("node(s) didn't match pod affinity rules")
ANTI = unschedulable("node(s) didn't match pod anti-affinity rules")
EXISTING = unschedulable("node(s) didn't satisfy existing pods anti-affinity rules")

BAD_VALUE_MSG = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": a valid label '
    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def same(got: Status, want: Status) -> bool:
    return got.code == want.code and got.reasons == want.reasons


# ---- TestRequiredAffinitySingleNode -------------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABELS1 = {"region": "r1", "zone": "z11"}


def _existing() -> Pod:
    return pod(labels=POD_LABEL, node="node1")


def _both(labels: dict[str, str], namespace: str = "", aff=None, anti=None) -> Pod:  # type: ignore[no-untyped-def]
    """createPodWithAffinityTerms: PodAffinity and PodAntiAffinity both set."""
    return pod(namespace=namespace, labels=labels, aff=affinity(required=aff or [], anti_required=anti or []))


TEAM1 = exprs(("team", "In", ["team1"]))
SEC_IN = sel_in("service", ["securityscan", "value2"])


@dataclass
class SingleCase:
    name: str
    pod: Pod
    pods: list[Pod] = field(default_factory=list)
    pre_filter: Status = SUCCESS
    filter: Status = SUCCESS


SINGLE_NODE_CASES = [
    SingleCase(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        pod(),
        pre_filter=SKIP,
    ),
    SingleCase(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        pod(labels=POD_LABEL2, aff=affinity(required=[term(SEC_IN, "region")])),
        [_existing()],
    ),
    SingleCase(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(required=[term(sel_not_in("service", ["securityscan3", "value3"]), "region")]),
        ),
        [_existing()],
    ),
    SingleCase(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        _both(POD_LABEL2, aff=[term(SEC_IN, "", namespaces=["DiffNameSpace"])]),
        [pod(namespace="ns", labels={"service": "securityscan"}, node="node1")],
        filter=AFF,
    ),
    SingleCase(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(required=[term(sel_in("service", ["antivirusscan", "value2"]), "")]),
        ),
        [_existing()],
        filter=AFF,
    ),
    SingleCase(
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
        _both(
            POD_LABEL2,
            aff=[
                term(exprs(("service", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region"),
                term(
                    exprs(("service", "In", ["securityscan"]), ("service", "NotIn", ["WrongValue"])), "region"
                ),
            ],
        ),
        [_existing()],
    ),
    SingleCase(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node "
        "because one of the matchExpression item don't match.",
        _both(
            POD_LABEL2,
            aff=[
                term(exprs(("service", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region"),
                term(
                    exprs(("service", "In", ["securityscan2"]), ("service", "NotIn", ["WrongValue"])),
                    "region",
                ),
            ],
        ),
        [_existing()],
        filter=AFF,
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term(SEC_IN, "region")],
                anti_required=[term(sel_in("service", ["antivirusscan", "value2"]), "node")],
            ),
        ),
        [_existing()],
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term(SEC_IN, "region")],
                anti_required=[term(sel_in("service", ["antivirusscan", "value2"]), "node")],
            ),
        ),
        [
            pod(
                node="node1",
                labels=POD_LABEL,
                aff=affinity(anti_required=[term(sel_in("service", ["antivirusscan", "value2"]), "node")]),
            )
        ],
    ),
    SingleCase(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                required=[term(SEC_IN, "region")],
                anti_required=[term(sel_in("service", ["securityscan", "value2"]), "zone")],
            ),
        ),
        [_existing()],
        filter=ANTI,
    ),
    SingleCase(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[term(SEC_IN, "region")],
                anti_required=[term(sel_in("service", ["antivirusscan", "value2"]), "node")],
            ),
        ),
        [
            pod(
                labels=POD_LABEL,
                node="node1",
                aff=affinity(anti_required=[term(sel_in("service", ["securityscan", "value2"]), "zone")]),
            )
        ],
        filter=EXISTING,
    ),
    SingleCase(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        pod(
            labels=POD_LABEL,
            aff=affinity(required=[term(sel_not_in("service", ["securityscan", "value2"]), "region")]),
        ),
        [pod(labels={"service": "securityscan"}, node="node2")],
        filter=AFF,
    ),
    SingleCase(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        [
            pod(
                node="node1",
                labels=POD_LABEL,
                aff=affinity(anti_required=[term(sel_in("service", ["securityscan", "value2"]), "zone")]),
            )
        ],
        filter=EXISTING,
    ),
    SingleCase(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        [
            pod(
                node="node1",
                labels=POD_LABEL,
                aff=affinity(anti_required=[term(sel_not_in("service", ["securityscan", "value2"]), "zone")]),
            )
        ],
        pre_filter=SKIP,
    ),
    SingleCase(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                anti_required=[term(sel_exists("service"), "region"), term(sel_exists("security"), "region")]
            ),
        ),
        [
            pod(
                node="node1",
                labels=POD_LABEL2,
                aff=affinity(anti_required=[term(sel_exists("security"), "zone")]),
            )
        ],
        filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                anti_required=[term(sel_exists("service"), "zone"), term(sel_exists("security"), "zone")]
            ),
        ),
        [
            pod(
                node="node1",
                labels=POD_LABEL2,
                aff=affinity(anti_required=[term(sel_exists("security"), "zone")]),
            )
        ],
        filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(labels=POD_LABEL2, aff=affinity(anti_required=[term(sel_exists("security"), "zone")])),
        [
            pod(
                node="node1",
                labels=POD_LABEL,
                aff=affinity(
                    anti_required=[term(sel_exists("service"), "zone"), term(sel_exists("security"), "zone")]
                ),
            )
        ],
        filter=EXISTING,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels={"abc": "", "xyz": ""},
            aff=affinity(anti_required=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]),
        ),
        [
            pod(
                node="node1",
                labels={"def": "", "xyz": ""},
                aff=affinity(
                    anti_required=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]
                ),
            )
        ],
        filter=ANTI,
    ),
    SingleCase(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels={"def": "", "xyz": ""},
            aff=affinity(anti_required=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]),
        ),
        [
            pod(
                node="node1",
                labels={"abc": "", "xyz": ""},
                aff=affinity(
                    anti_required=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]
                ),
            )
        ],
        filter=ANTI,
    ),
    SingleCase(
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[
                    term(sel_in("service", ["{{.bad-value.}}"]), "region"),
                    term(sel_in("service", ["antivirusscan", "value2"]), "node"),
                ]
            ),
        ),
        pre_filter=unresolvable(BAD_VALUE_MSG),
    ),
    SingleCase(
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                required=[
                    term(sel_in("service", ["foo"]), "region"),
                    term(sel_in("service", ["{{.bad-value.}}"]), "node"),
                ]
            ),
        ),
        pre_filter=unresolvable(BAD_VALUE_MSG),
    ),
    SingleCase(
        "affinity with NamespaceSelector",
        _both(POD_LABEL2, aff=[term(SEC_IN, "region", namespace_selector=TEAM1)]),
        [pod(node="node1", namespace="subteam1.team1", labels=POD_LABEL)],
    ),
    SingleCase(
        "affinity with non-matching NamespaceSelector",
        _both(POD_LABEL2, aff=[term(SEC_IN, "region", namespace_selector=TEAM1)]),
        [pod(node="node1", namespace="subteam1.team2", labels=POD_LABEL)],
        filter=AFF,
    ),
    SingleCase(
        "anti-affinity with matching NamespaceSelector",
        _both(POD_LABEL2, namespace="subteam1.team1", anti=[term(SEC_IN, "zone", namespace_selector=TEAM1)]),
        [pod(node="node1", namespace="subteam2.team1", labels=POD_LABEL)],
        filter=ANTI,
    ),
    SingleCase(
        "anti-affinity with matching all NamespaceSelector",
        _both(
            POD_LABEL2,
            namespace="subteam1.team1",
            anti=[term(SEC_IN, "zone", namespace_selector=LabelSelector())],
        ),
        [pod(node="node1", namespace="subteam2.team1", labels=POD_LABEL)],
        filter=ANTI,
    ),
    SingleCase(
        "anti-affinity with non-matching NamespaceSelector",
        _both(POD_LABEL2, namespace="subteam1.team1", anti=[term(SEC_IN, "zone", namespace_selector=TEAM1)]),
        [pod(node="node1", namespace="subteam1.team2", labels=POD_LABEL)],
    ),
]


@pytest.mark.parametrize("case", SINGLE_NODE_CASES, ids=lambda c: c.name[:80])
def test_required_affinity_single_node(case: SingleCase) -> None:
    table, plugin = build([node("node1", LABELS1)], case.pods, namespace_labels=NAMESPACES)
    state = new_state()
    _, status = plugin.pre_filter(state, case.pod)
    assert same(status, case.pre_filter), status
    if not status.is_success:
        return
    result = plugin.filter(state, case.pod, rows_of(table, ["node1"]))
    assert same(result.status_of(0), case.filter), result.status_of(0)


# ---- TestRequiredAffinityMultipleNodes ----------------------------------------------------------

RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _hosts(*zones: tuple[str, str, str]) -> list[Node]:
    return [node(name, {"region": region, "zone": zone, "hostname": name}) for name, region, zone in zones]


@dataclass
class MultiCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    filters: list[Status]
    pre_filter: Status = SUCCESS


def _multi_cases() -> list[MultiCase]:
    ab = _hosts(("nodeA", "r1", "z1"), ("nodeB", "r1", "z2"))
    same_zone = _hosts(("nodeA", "r1", "z1"), ("nodeB", "r1", "z1"))
    three = [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)]
    return [
        MultiCase(
            "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of "
            "them has an existing pod that matches the affinity rules",
            pod(aff=affinity(required=[term(sel_in("foo", ["bar"]), "region")])),
            [pod("p1", node="node1", labels={"foo": "bar"})],
            [node("node1", RG_CHINA), node("node2", RG_CHINA_AZ1), node("node3", RG_INDIA)],
            [SUCCESS, SUCCESS, AFF],
        ),
        MultiCase(
            "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of "
            "the collection should not be blocked from being scheduled onto any node, even there's no existing pod "
            "that matches the rule anywhere.",
            pod(
                labels={"foo": "bar", "service": "securityscan"},
                aff=affinity(
                    required=[
                        term(sel_in("foo", ["bar"]), "zone"),
                        term(sel_in("service", ["securityscan"]), "zone"),
                    ]
                ),
            ),
            [pod("p1", node="nodeA", labels={"foo": "bar"})],
            [
                node("nodeA", {"zone": "az1", "hostname": "h1"}),
                node("nodeB", {"zone": "az2", "hostname": "h2"}),
            ],
            [SUCCESS, SUCCESS],
        ),
        MultiCase(
            "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
            pod(
                labels={"foo": "bar", "service": "securityscan"},
                aff=affinity(
                    required=[
                        term(sel_in("foo", ["bar"]), "zone"),
                        term(sel_in("service", ["securityscan"]), "zone"),
                    ]
                ),
            ),
            [pod("p1", node="nodeA", labels={"foo": "bar"})],
            [
                node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
                node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
            ],
            [AFF, AFF],
        ),
        MultiCase(
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
            "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
            pod(aff=affinity(anti_required=[term(sel_in("foo", ["abc"]), "region")])),
            [pod(node="nodeA", labels={"foo": "abc"})],
            [
                node("nodeA", {"region": "r1", "hostname": "nodeA"}),
                node("nodeB", {"region": "r1", "hostname": "nodeB"}),
            ],
            [ANTI, ANTI],
        ),
        MultiCase(
            "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
            pod(
                aff=affinity(
                    anti_required=[
                        term(sel_in("foo", ["abc"]), "region"),
                        term(sel_in("service", ["securityscan"]), "zone"),
                    ]
                )
            ),
            [pod(node="nodeA", labels={"foo": "abc", "service": "securityscan"})],
            _hosts(("nodeA", "r1", "z1"), ("nodeB", "r1", "z2")),
            [ANTI, ANTI],
        ),
        MultiCase(
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
            "pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
            pod(aff=affinity(anti_required=[term(sel_in("foo", ["abc"]), "region")])),
            [pod(node="nodeA", labels={"foo": "abc"})],
            three,
            [ANTI, ANTI, SUCCESS],
        ),
        MultiCase(
            "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter "
            "pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC "
            "(NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
            pod(
                namespace="NS1",
                labels={"foo": "123"},
                aff=affinity(anti_required=[term(sel_in("foo", ["bar"]), "region")]),
            ),
            [
                pod(node="nodeA", namespace="NS1", labels={"foo": "bar"}),
                pod(
                    node="nodeC",
                    namespace="NS2",
                    aff=affinity(anti_required=[term(sel_in("foo", ["123"]), "region")]),
                ),
            ],
            [node("nodeA", RG_CHINA), node("nodeB", RG_CHINA_AZ1), node("nodeC", RG_INDIA)],
            [ANTI, ANTI, SUCCESS],
        ),
        MultiCase(
            "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector "
            "of the term is firstly checked, and then topologyKey of the term is also checked",
            pod(labels={"foo": ""}),
            [pod(node="nodeA", aff=affinity(anti_required=[term(sel_exists("foo"), "invalid-node-label")]))],
            same_zone,
            [SUCCESS, SUCCESS],
            pre_filter=SKIP,
        ),
        MultiCase(
            "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
            pod(node="nodeA", aff=affinity(anti_required=[term(sel_exists("foo"), "invalid-node-label")])),
            [pod(node="nodeA", labels={"foo": ""})],
            same_zone,
            [SUCCESS, SUCCESS],
        ),
        MultiCase(
            "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
            "existingPod's terms on all nodes",
            pod(labels={"foo": "", "bar": ""}),
            [
                pod(node="nodeA", aff=affinity(anti_required=[term(sel_exists("foo"), "zone")])),
                pod(node="nodeA", aff=affinity(anti_required=[term(sel_exists("bar"), "region")])),
            ],
            ab,
            [EXISTING, EXISTING],
        ),
        MultiCase(
            "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one "
            "anti-affinity rule of existingPod",
            pod(
                aff=affinity(
                    anti_required=[term(sel_exists("foo"), "zone"), term(sel_exists("bar"), "region")]
                )
            ),
            [pod(node="nodeA", labels={"foo": ""}), pod(node="nodeB", labels={"bar": ""})],
            ab,
            [ANTI, ANTI],
        ),
        MultiCase(
            "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
            "single term match - case when one term has invalid topologyKey",
            pod(labels={"foo": "", "bar": ""}),
            [
                pod(
                    node="nodeA",
                    aff=affinity(
                        anti_required=[
                            term(sel_exists("foo"), "invalid-node-label"),
                            term(sel_exists("bar"), "zone"),
                        ]
                    ),
                )
            ],
            ab,
            [EXISTING, SUCCESS],
        ),
        MultiCase(
            "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
            "single term match - case when one term has invalid topologyKey",
            pod(
                aff=affinity(
                    anti_required=[
                        term(sel_exists("foo"), "invalid-node-label"),
                        term(sel_exists("bar"), "zone"),
                    ]
                )
            ),
            [pod("podA", node="nodeA", labels={"foo": "", "bar": ""})],
            ab,
            [ANTI, SUCCESS],
        ),
        MultiCase(
            "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
            "single term match - case when all terms have valid topologyKey",
            pod(labels={"foo": "", "bar": ""}),
            [
                pod(
                    node="nodeA",
                    aff=affinity(
                        anti_required=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")]
                    ),
                )
            ],
            ab,
            [EXISTING, EXISTING],
        ),
        MultiCase(
            "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a "
            "single term match - case when all terms have valid topologyKey",
            pod(
                aff=affinity(
                    anti_required=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")]
                )
            ),
            [pod(node="nodeA", labels={"foo": "", "bar": ""})],
            ab,
            [ANTI, ANTI],
        ),
        MultiCase(
            "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term "
            "matches incoming pod, so incoming pod can only be scheduled to nodeC",
            pod(labels={"foo": "", "bar": ""}),
            [
                pod(
                    node="nodeA",
                    aff=affinity(
                        anti_required=[term(sel_exists("foo"), "zone"), term(sel_exists("labelA"), "zone")]
                    ),
                ),
                pod(
                    node="nodeB",
                    aff=affinity(
                        anti_required=[term(sel_exists("bar"), "zone"), term(sel_exists("labelB"), "zone")]
                    ),
                ),
            ],
            _hosts(("nodeA", "r1", "z1"), ("nodeB", "r1", "z2"), ("nodeC", "r1", "z3")),
            [EXISTING, EXISTING, SUCCESS],
        ),
        MultiCase(
            "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
            "topologyKeys match",
            pod(aff=affinity(required=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")])),
            [pod("pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
            same_zone,
            [SUCCESS, SUCCESS],
        ),
        MultiCase(
            "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
            "topologyKeys match, and the match logic should be satisfied on the same pod",
            pod(aff=affinity(required=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")])),
            [pod("pod1", node="nodeA", labels={"foo": ""}), pod("pod2", node="nodeB", labels={"bar": ""})],
            ab,
            [AFF, AFF],
        ),
    ]


@pytest.mark.parametrize("case", _multi_cases(), ids=lambda c: c.name[:80])
def test_required_affinity_multiple_nodes(case: MultiCase) -> None:
    table, plugin = build(case.nodes, case.pods, namespace_labels={"NS1": {}})
    state = new_state()
    _, status = plugin.pre_filter(state, case.pod)
    assert same(status, case.pre_filter), status
    if status.code == Code.SKIP:
        return
    rows = rows_of(table, [n.name for n in case.nodes])
    result = plugin.filter(state, case.pod, rows)
    got = [result.status_of(i) for i in range(len(rows))]
    for g, want in zip(got, case.filters, strict=True):
        assert same(g, want), got
    # The batch answer does not depend on which rows are asked for, nor their order.
    for i in reversed(range(len(rows))):
        single = plugin.filter(state, case.pod, rows[i : i + 1])
        assert same(single.status_of(0), case.filters[i])


# ---- TestPreFilterStateAddRemovePod ------------------------------------------------------------

L1 = {"region": "r1", "zone": "z11"}
L2 = {"region": "r1", "zone": "z12"}
L3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = [term(sel_in("foo", ["bar"]), "region")]
COMPLEX = [
    term(sel_in("foo", ["bar", "buzz"]), "region"),
    term(sel_not_in("service", ["bar", "security", "test"]), "zone"),
]


AddRemoveCase = tuple[str, Pod, list[Pod], Pod, dict[tuple[str, str], int], dict[tuple[str, str], int]]


def _add_remove_cases() -> list[AddRemoveCase]:
    return [
        (
            "anti-affinity terms are updated correctly after adding and removing a pod",
            Pod("pending", labels=dict(SELECTOR1), affinity=affinity(anti_required=ANTI_FOO_BAR)),
            [
                Pod("p1", labels=dict(SELECTOR1), node_name="nodeA"),
                Pod("p2", node_name="nodeC", affinity=affinity(anti_required=ANTI_FOO_BAR)),
            ],
            Pod(
                "addedPod",
                labels=dict(SELECTOR1),
                node_name="nodeB",
                affinity=affinity(anti_required=ANTI_FOO_BAR),
            ),
            {("region", "r1"): 2},
            {},
        ),
        (
            "anti-affinity terms (complex) are updated correctly after adding and removing a pod",
            Pod("pending", labels=dict(SELECTOR1), affinity=affinity(anti_required=COMPLEX)),
            [
                Pod("p1", labels=dict(SELECTOR1), node_name="nodeA"),
                Pod("p2", node_name="nodeC", affinity=affinity(anti_required=ANTI_FOO_BAR)),
            ],
            Pod(
                "addedPod",
                labels=dict(SELECTOR1),
                node_name="nodeA",
                affinity=affinity(anti_required=COMPLEX),
            ),
            {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
            {},
        ),
        (
            "matching pod affinity and anti-affinity are updated correctly after adding and removing a pod",
            Pod("pending", labels=dict(SELECTOR1), affinity=affinity(required=COMPLEX)),
            [
                Pod("p1", labels=dict(SELECTOR1), node_name="nodeA"),
                Pod("p2", node_name="nodeC", affinity=affinity(required=COMPLEX, anti_required=ANTI_FOO_BAR)),
            ],
            Pod(
                "addedPod",
                labels=dict(SELECTOR1),
                node_name="nodeA",
                affinity=affinity(anti_required=COMPLEX),
            ),
            {},
            {("region", "r1"): 2, ("zone", "z11"): 2},
        ),
    ]


def _prefilter_state(
    pods: list[Pod], pending: Pod
) -> tuple[tuple[NodeTable, InterPodAffinity], PreFilterState, CycleState]:
    nodes = [node("nodeA", L1), node("nodeB", L2), node("nodeC", L3)]
    table, plugin = build(nodes, pods)
    state = new_state()
    _, status = plugin.pre_filter(state, pending)
    assert status.is_success, status
    s = state.read(PRE_FILTER_STATE_KEY)
    assert isinstance(s, PreFilterState)
    return (table, plugin), s, state


@pytest.mark.parametrize("case", _add_remove_cases(), ids=lambda c: c[0])
def test_pre_filter_state_add_remove_pod(case: AddRemoveCase) -> None:
    _, pending, existing, added, want_anti, want_aff = case
    (all_table, _), all_state, _ = _prefilter_state([*existing, added], pending)
    (table, plugin), s, cycle = _prefilter_state(existing, pending)
    original = s.clone()

    row = table.row(added.node_name)
    assert plugin.add_pod(cycle, pending, added, row).is_success
    assert s.anti_affinity.pairs(table) == want_anti
    assert s.affinity.pairs(table) == want_aff
    for name in ("existing_anti_affinity", "affinity", "anti_affinity"):
        assert getattr(s, name).pairs(table) == getattr(all_state, name).pairs(all_table), name

    assert plugin.remove_pod(cycle, pending, added, row).is_success
    for name in ("existing_anti_affinity", "affinity", "anti_affinity"):
        assert getattr(s, name).pairs(table) == getattr(original, name).pairs(table), name
    # The clone taken before the add was not touched by it.
    assert original.anti_affinity is not s.anti_affinity


def test_pre_filter_state_clone_is_deep() -> None:
    (table, _), s, _ = _prefilter_state(
        [Pod("p1", labels=dict(SELECTOR1), node_name="nodeA")],
        Pod(
            "pending", labels=dict(SELECTOR1), affinity=affinity(required=COMPLEX, anti_required=ANTI_FOO_BAR)
        ),
    )
    copy = s.clone()
    assert copy.affinity.pairs(table) == s.affinity.pairs(table)
    s.affinity.add_row(table, "region", 0, 5)
    assert copy.affinity.pairs(table) != s.affinity.pairs(table)


# ---- TestGetTPMapMatchingIncomingAffinityAntiAffinity -------------------------------------------


def _normal(*labels: str) -> Pod:
    return Pod("normal", namespace="", node_name="nodeA", labels=dict.fromkeys(labels, ""))


@pytest.mark.parametrize(
    ("name", "existing", "incoming", "want_aff", "want_anti"),
    [
        ("nil test", [], Pod("aaa-normal", namespace=""), {}, {}),
        (
            "incoming pod without affinity/anti-affinity causes a no-op",
            [_normal("aaa")],
            Pod("aaa-normal", namespace=""),
            {},
            {},
        ),
        (
            "no pod has label that violates incoming pod's affinity and anti-affinity",
            [_normal("bbb")],
            Pod(
                "aaa-anti",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname")],
                ),
            ),
            {},
            {},
        ),
        (
            "existing pod matches incoming pod's affinity and anti-affinity - single term case",
            [_normal("aaa")],
            Pod(
                "affi-antiaffi",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname")],
                ),
            ),
            {("hostname", "nodeA"): 1},
            {("hostname", "nodeA"): 1},
        ),
        (
            "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
            [_normal("aaa", "bbb")],
            Pod(
                "affi-antiaffi",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname")],
                ),
            ),
            {("hostname", "nodeA"): 2},
            {("hostname", "nodeA"): 1},
        ),
        (
            "existing pod not match incoming pod's affinity but matches anti-affinity",
            [_normal("aaa")],
            Pod(
                "affi-antiaffi",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")],
                ),
            ),
            {},
            {("hostname", "nodeA"): 1},
        ),
        (
            "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
            [_normal("aaa", "bbb")],
            Pod(
                "anaffi-antiaffiti",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("ccc"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("ccc"), "hostname")],
                ),
            ),
            {},
            {("hostname", "nodeA"): 1},
        ),
        (
            "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
            [_normal("bbb")],
            Pod(
                "affi-antiaffi",
                namespace="",
                affinity=affinity(
                    required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")],
                    anti_required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")],
                ),
            ),
            {},
            {("hostname", "nodeA"): 1},
        ),
    ],
)
def test_incoming_affinity_anti_affinity_counts(
    name: str,
    existing: list[Pod],
    incoming: Pod,
    want_aff: dict[tuple[str, str], int],
    want_anti: dict[tuple[str, str], int],
) -> None:
    from policy_scheduler.scheduler.plugins.interpodaffinity.filtering import incoming_counts
    from policy_scheduler.scheduler.plugins.interpodaffinity.terms import parse_pod_terms

    table, plugin = build([node("nodeA", {"hostname": "nodeA"})], existing)
    terms, err = parse_pod_terms(incoming)
    assert err is None
    aff, anti = incoming_counts(plugin.index, terms)
    assert aff.pairs(table) == want_aff
    assert anti.pairs(table) == want_anti


# ---- parse errors, matchLabelKeys, namespaces --------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            exprs(("foo", "In", [])),
            "parsing pod: requiredAffinityTerms: values: Invalid value: null: for 'in', 'notin' operators, "
            "values set can't be empty",
        ),
        (
            exprs(("foo", "Exists", ["x"])),
            'parsing pod: requiredAffinityTerms: values: Invalid value: ["x"]: values set must be empty for exists '
            "and does not exist",
        ),
        (
            exprs(("foo", "Gt", ["1"])),
            'parsing pod: requiredAffinityTerms: "Gt" is not a valid label selector operator',
        ),
        (
            exprs(("a/b/c", "Exists", [])),
            'parsing pod: requiredAffinityTerms: key: Invalid value: "a/b/c": a valid label key must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')",
        ),
    ],
)
def test_pre_filter_rejects_unparsable_selectors(selector: LabelSelector, message: str) -> None:
    _, plugin = build([node("n1", LABELS1)])
    p = pod(aff=affinity(required=[term(selector, "region")]))
    _, status = plugin.pre_filter(new_state(), p)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (message,)


def test_errors_of_several_lists_are_aggregated() -> None:
    _, plugin = build([node("n1", LABELS1)])
    bad = term(exprs(("foo", "In", [])), "region")
    p = pod(aff=affinity(required=[bad], anti_required=[bad]))
    _, status = plugin.pre_filter(new_state(), p)
    detail = "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    assert status.reasons == (
        f"parsing pod: [requiredAffinityTerms: {detail}, requiredAntiAffinityTerms: {detail}]",
    )


def test_match_label_keys_merge_incoming_labels() -> None:
    # Required anti-affinity to pods of the same app *and* the same revision (matchLabelKeys),
    # but not to pods of the same tenant (mismatchLabelKeys).
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3", {"zone": "c"})]
    pods = [
        pod(node="n1", labels={"app": "web", "rev": "1", "tenant": "x"}),
        pod(node="n2", labels={"app": "web", "rev": "2", "tenant": "y"}),
        pod(node="n3", labels={"app": "web", "rev": "2", "tenant": "x"}),
    ]
    t = term(sel_in("app", ["web"]), "zone", match_label_keys=["rev"], mismatch_label_keys=["tenant"])
    incoming = pod(labels={"app": "web", "rev": "2", "tenant": "x"}, aff=affinity(anti_required=[t]))
    table, plugin = build(nodes, pods)
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success
    result = plugin.filter(state, incoming, all_rows(table))
    # n1: other revision; n2: same revision, other tenant (counts); n3: same tenant (excluded).
    assert result.passed.tolist() == [True, False, True]


def test_match_label_keys_of_existing_pods_use_their_own_labels() -> None:
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    t = term(sel_in("app", ["web"]), "zone", match_label_keys=["rev"])
    pods = [
        pod(node="n1", labels={"app": "web", "rev": "1"}, aff=affinity(anti_required=[t])),
        pod(node="n2", labels={"app": "web", "rev": "2"}, aff=affinity(anti_required=[t])),
    ]
    table, plugin = build(nodes, pods)
    incoming = pod(labels={"app": "web", "rev": "2"})
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success
    result = plugin.filter(state, incoming, all_rows(table))
    assert result.passed.tolist() == [True, False]
    assert same(result.status_of(1), EXISTING)


def test_existing_terms_with_namespace_selector_use_incoming_namespace_labels() -> None:
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    t = term(sel_in("app", ["db"]), "zone", namespace_selector=TEAM1)
    pods = [pod(node="n1", namespace="other", aff=affinity(anti_required=[t]))]
    table, plugin = build(nodes, pods, namespace_labels=NAMESPACES)
    for ns, want in (("subteam1.team1", [False, True]), ("subteam1.team2", None), ("unknown", None)):
        incoming = pod(namespace=ns, labels={"app": "db"})
        state = new_state()
        _, status = plugin.pre_filter(state, incoming)
        if want is None:
            assert status.code == Code.SKIP, ns
            continue
        assert plugin.filter(state, incoming, all_rows(table)).passed.tolist() == want


def test_terminating_pods_still_count() -> None:
    # Upstream does not skip terminating pods in InterPodAffinity.
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    dying = pod(node="n1", labels={"app": "x"})
    dying.deletion_timestamp = 1.0
    table, plugin = build(nodes, [dying])
    incoming = pod(aff=affinity(anti_required=[term(sel_in("app", ["x"]), "zone")]))
    state = new_state()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, all_rows(table)).passed.tolist() == [False, True]


def test_filter_without_pre_filter_state_errors() -> None:
    table, plugin = build([node("n1")])
    result = plugin.filter(new_state(), pod(), all_rows(table))
    assert result.status_of(0).code == Code.ERROR
    assert result.status_of(0).reasons == (
        'error reading "PreFilterInterPodAffinity" from cycleState: not found',
    )


def test_hard_pod_affinity_weight_is_validated() -> None:
    with pytest.raises(ValueError, match="not in valid range"):
        build([node("n1")], args={"hardPodAffinityWeight": 101})


# ---- index maintenance -------------------------------------------------------------------------


def _anti_x() -> Pod:
    return pod(aff=affinity(anti_required=[term(sel_in("app", ["x"]), "zone")]))


def test_index_follows_pod_add_remove_and_node_label_changes() -> None:
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3", {"zone": "a"})]
    table, plugin = build(nodes)
    x = pod(node="n2", labels={"app": "x"})

    def passed() -> list[bool]:
        state = new_state()
        assert plugin.pre_filter(state, incoming)[1].is_success
        return list(plugin.filter(state, incoming, all_rows(table)).passed.tolist())

    incoming = _anti_x()
    assert passed() == [True, True, True]
    table.add_pod(x, table.row("n2"))
    assert passed() == [True, False, True]
    # n2 moves to zone a: the pod's domain follows the node's current labels.
    table.set_node(node("n2", {"zone": "a"}))
    assert passed() == [False, False, False]
    table.remove_pod(x, table.row("n2"))
    assert passed() == [True, True, True]
    assert plugin.index.by_namespace == {}
    assert plugin.index.by_label == {}


def test_index_follows_node_removal_and_row_moves() -> None:
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3", {"zone": "c"})]
    hater = pod(
        node="n3", labels={"app": "h"}, aff=affinity(anti_required=[term(sel_in("app", ["x"]), "zone")])
    )
    table, plugin = build(nodes, [hater])
    incoming = pod(labels={"app": "x"})
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success
    assert plugin.filter(state, incoming, all_rows(table)).passed.tolist() == [True, True, False]
    table.remove_node("n1")  # n3 moves into row 0
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success
    assert plugin.filter(state, incoming, rows_of(table, ["n2", "n3"])).passed.tolist() == [True, False]
    table.remove_node("n3")
    assert len(plugin.index.required_anti_affinity) == 0
    assert plugin.pre_filter(new_state(), incoming)[1].code == Code.SKIP


def test_index_is_shared_between_plugin_instances() -> None:
    table, plugin = build([node("n1")])
    from policy_scheduler.scheduler.framework.interfaces import Handle
    from policy_scheduler.scheduler.plugins.interpodaffinity import InterPodAffinity

    other = InterPodAffinity.from_profile(Handle(table=table), {})
    assert other.index is plugin.index
    assert len(table.listeners) == 1


# ---- queueing hints (plugin_test.go) -----------------------------------------------------------

SVC_AFF = affinity(required=[term(sel_in("service", ["securityscan", "value2"]), "region")])
SVC_ANTI = affinity(anti_required=[term(sel_in("service", ["securityscan", "value2"]), "region")])
MULTI = affinity(required=[term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")])


def _p(node_name: str = "", **labels: str) -> Pod:
    return pod(node=node_name, labels=labels)


@pytest.mark.parametrize(
    ("name", "aff", "old", "new", "want"),
    [
        (
            "add a pod which matches the pod affinity",
            SVC_AFF,
            None,
            _p("fake-node", service="securityscan"),
            QueueingHint.QUEUE,
        ),
        ("add an un-scheduled pod", SVC_AFF, None, _p(service="securityscan"), QueueingHint.SKIP),
        (
            "add a pod which doesn't match the pod affinity",
            SVC_AFF,
            None,
            _p("fake-node", aaa="a"),
            QueueingHint.SKIP,
        ),
        (
            "update a pod from non-match to match pod affinity",
            SVC_AFF,
            _p("fake-node", aaa="a"),
            _p("fake-node", service="securityscan"),
            QueueingHint.QUEUE,
        ),
        (
            "the updating pod matches target pod's affinity both before and after label changes",
            SVC_AFF,
            _p("fake-node", service="value2"),
            _p("fake-node", service="securityscan"),
            QueueingHint.SKIP,
        ),
        (
            "update an un-scheduled pod",
            SVC_AFF,
            _p(service="securityscan"),
            _p(service="securityscan"),
            QueueingHint.SKIP,
        ),
        (
            "update a pod from match to non-match the pod affinity",
            SVC_AFF,
            _p("fake-node", service="securityscan"),
            _p("fake-node", aaa="a"),
            QueueingHint.SKIP,
        ),
        (
            "update a pod from match to non-match pod's affinity - multiple terms case",
            MULTI,
            _p("fake-node", aaa="a"),
            _p("fake-node", service="securityscan"),
            QueueingHint.SKIP,
        ),
        (
            "update a pod from non-match to match pod's affinity - multiple terms case",
            MULTI,
            _p("fake-node", aaa="a"),
            _p("fake-node", aaa="", bbb=""),
            QueueingHint.QUEUE,
        ),
        (
            "modify pod label to change it from satisfying pod anti-affinity to not satisfying anti-affinity",
            SVC_ANTI,
            _p("fake-node", service="securityscan"),
            _p("fake-node", service="aaaa"),
            QueueingHint.QUEUE,
        ),
        (
            "modify pod label to change it from not satisfying pod anti-affinity to satisfying anti-affinity",
            SVC_ANTI,
            _p("fake-node", service="bbb"),
            _p("fake-node", service="securityscan"),
            QueueingHint.SKIP,
        ),
        (
            "delete a pod which doesn't match pod's anti-affinity",
            SVC_ANTI,
            _p("fake-node", aaa="a"),
            None,
            QueueingHint.SKIP,
        ),
        (
            "delete a pod which matches pod's anti-affinity",
            SVC_ANTI,
            _p("fake-node", service="securityscan"),
            None,
            QueueingHint.QUEUE,
        ),
    ],
)
def test_is_schedulable_after_pod_change(
    name: str, aff: Affinity, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    _, plugin = build([], namespace_labels=NAMESPACES)
    target = Pod("p", namespace="", affinity=aff)
    assert plugin.is_schedulable_after_pod_change(target, old, new) == want


ZONE_AFF = affinity(required=[term(sel_in("service", ["securityscan", "value2"]), "zone")])
REGION_AFF = affinity(required=[term(sel_in("service", ["securityscan", "value2"]), "region")])
ZONE_ANTI = affinity(anti_required=[term(LabelSelector(match_labels=(("another", "label"),)), "zone")])


@pytest.mark.parametrize(
    ("name", "aff", "old", "new", "want"),
    [
        (
            "add a new node with matched pod affinity topologyKey",
            ZONE_AFF,
            None,
            node("node-a", {"zone": "zone1"}),
            QueueingHint.QUEUE,
        ),
        (
            "add a new node without matched topologyKey",
            REGION_AFF,
            None,
            node("node-a", {"zone": "zone1"}),
            QueueingHint.SKIP,
        ),
        (
            "update node label but not topologyKey",
            ZONE_AFF,
            node("node-a", {"aaa": "a"}),
            node("node-a", {"aaa": "b"}),
            QueueingHint.SKIP,
        ),
        (
            "update node label that isn't related to the pod affinity",
            ZONE_AFF,
            node("node-a", {"zone": "zone1"}),
            node("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
            QueueingHint.SKIP,
        ),
        (
            "update node with different affinity topologyKey value",
            ZONE_AFF,
            node("node-a", {"zone": "zone1"}),
            node("node-a", {"zone": "zone2"}),
            QueueingHint.QUEUE,
        ),
        (
            "update node to have the affinity topology label",
            ZONE_AFF,
            node("node-a", {"aaa": "a"}),
            node("node-a", {"zone": "zone1"}),
            QueueingHint.QUEUE,
        ),
        (
            "add a new node with matched pod anti-affinity topologyKey",
            ZONE_ANTI,
            None,
            node("node-a", {"zone": "zone1"}),
            QueueingHint.QUEUE,
        ),
        (
            "add a new node without matched pod anti-affinity topologyKey",
            ZONE_ANTI,
            None,
            node("node-a"),
            QueueingHint.QUEUE,
        ),
        (
            "update node label that isn't related to the pod anti-affinity",
            ZONE_ANTI,
            node("node-a", {"zone": "zone1"}),
            node("node-a", {"zone": "zone1", "unrelated-label": "unrelated"}),
            QueueingHint.SKIP,
        ),
        (
            "update node with different anti-affinity topologyKey value",
            ZONE_ANTI,
            node("node-a", {"zone": "zone1"}),
            node("node-a", {"zone": "zone2"}),
            QueueingHint.QUEUE,
        ),
        (
            "update node to have the anti-affinity topology label",
            ZONE_ANTI,
            node("node-a", {"aaa": "a"}),
            node("node-a", {"zone": "zone1"}),
            QueueingHint.SKIP,
        ),
        (
            "update node label not to have anti-affinity topology label",
            ZONE_ANTI,
            node("node-a", {"zone": "zone1"}),
            node("node-a", {"aaa": "a"}),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_is_schedulable_after_node_change(
    name: str, aff: Affinity, old: Node | None, new: Node, want: QueueingHint
) -> None:
    _, plugin = build([], namespace_labels=NAMESPACES)
    target = Pod("p", namespace="", affinity=aff)
    assert plugin.is_schedulable_after_node_change(target, old, new) == want


def test_events_to_register() -> None:
    from policy_scheduler.scheduler.framework.events import Action, Resource

    _, plugin = build([])
    events = [e.event for e in plugin.events_to_register()]
    assert (events[0].resource, events[0].action) == (
        Resource.POD,
        Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE,
    )
    assert (events[1].resource, events[1].action) == (Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL)


# ---- scale: required anti-affinity, 5000 nodes / 10000 pods ------------------------------------


def _cluster(n_nodes: int, n_pods: int, apps: int) -> tuple[object, object]:
    nodes = [node(f"n{i}", {"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 10}"}) for i in range(n_nodes)]
    pods = []
    for i in range(n_pods):
        app = f"app{i % apps}"
        t = term(sel_in("app", [app]), "kubernetes.io/hostname")
        pods.append(
            pod(
                f"p{i}",
                namespace="default",
                node=f"n{i % n_nodes}",
                labels={"app": app},
                aff=affinity(anti_required=[t]),
            )
        )
    return build(nodes, pods)


def test_required_anti_affinity_at_scale_rejects_exactly_the_hosts_of_the_group() -> None:
    # Speed at this size is measured by `make bench` (docs/benchmarks.md), never asserted here.
    table, plugin = _cluster(5000, 10000, 500)
    incoming = pod(
        "new",
        namespace="default",
        labels={"app": "app7"},
        aff=affinity(anti_required=[term(sel_in("app", ["app7"]), "kubernetes.io/hostname")]),
    )
    rows = all_rows(table)  # type: ignore[arg-type]
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success  # type: ignore[attr-defined]
    result = plugin.filter(state, incoming, rows)  # type: ignore[attr-defined]
    # app7 has 20 replicas, two per host on 10 hosts: exactly those hosts are rejected.
    hosts = {f"n{i % 5000}" for i in range(7, 10000, 500)}
    assert int((~result.passed).sum()) == len(hosts) == 10
    assert set(table.names_of(np.flatnonzero(~result.passed))) == hosts  # type: ignore[attr-defined]


def test_namespace_selector_without_namespaces_excludes_own_namespace() -> None:
    # namespaces empty + namespaceSelector set: only the selected namespaces count, not the pod's own.
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    pods = [
        pod(node="n1", namespace="subteam1.team2", labels={"app": "x"}),
        pod(node="n2", namespace="subteam2.team1", labels={"app": "x"}),
    ]
    table, plugin = build(nodes, pods, namespace_labels=NAMESPACES)
    t = term(sel_in("app", ["x"]), "zone", namespace_selector=TEAM1)
    incoming = pod(namespace="subteam1.team2", aff=affinity(anti_required=[t]))
    state = new_state()
    assert plugin.pre_filter(state, incoming)[1].is_success
    assert plugin.filter(state, incoming, all_rows(table)).passed.tolist() == [True, False]
    # The same term on a placed pod, against an incoming pod of its own (unselected) namespace.
    table, plugin = build(
        nodes,
        [pod(node="n1", namespace="subteam1.team2", aff=affinity(anti_required=[t]))],
        namespace_labels=NAMESPACES,
    )
    assert (
        plugin.pre_filter(new_state(), pod(namespace="subteam1.team2", labels={"app": "x"}))[1].code
        == Code.SKIP
    )


def test_index_survives_removing_unlabelled_pods_of_one_namespace() -> None:
    """Regression: the second removal used to raise KeyError after the table had changed."""
    from policy_scheduler.scheduler.model import Node, Pod
    from policy_scheduler.scheduler.nodetable import NodeTable
    from policy_scheduler.scheduler.plugins.interpodaffinity.index import AffinityIndex

    table = NodeTable()
    row = table.set_node(Node("n1", allocatable={"cpu": 1000, "memory": 1 << 30, "pods": 10}))
    index = AffinityIndex.of(table)
    a, b = Pod("a"), Pod("b")
    table.add_pod(a, row)
    table.add_pod(b, row)
    table.remove_pod(a, row)
    table.remove_pod(b, row)
    assert table.pod_count[row] == 0
    assert not index.by_namespace
