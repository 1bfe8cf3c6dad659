"""InterPodAffinity PreScore/Score/NormalizeScore: ported from upstream scoring_test.go
(kube-scheduler v1.35.4), plus checks of the batch implementation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status, error
from policy_scheduler.scheduler.model import Affinity, Node, Pod
from policy_scheduler.scheduler.plugins.interpodaffinity.scoring import PreScoreState, normalize

from ._build_interpodaffinity import (
    NAMESPACES,
    affinity,
    build,
    exprs,
    new_state,
    node,
    pod,
    rows_of,
    sel_exists,
    sel_in,
    term,
    weighted,
)

MAX = 100
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = exprs(("team", "In", ["team1"]))

STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, term(sel_in("security", ["S1"]), "region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, term(sel_in("security", ["S2"]), "region"))])
AFFINITY3 = affinity(
    preferred=[
        weighted(8, term(exprs(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), "region")),
        weighted(2, term(exprs(("security", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region")),
    ]
)
HARD_AFFINITY = affinity(
    required=[
        term(sel_in("security", ["S1", "value2"]), "region"),
        term(exprs(("security", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[weighted(5, term(sel_in("security", ["S1"]), "az"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[weighted(5, term(sel_in("security", ["S2"]), "az"))])
STAY_S1_AWAY_S2 = affinity(
    preferred=[weighted(8, term(sel_in("security", ["S1"]), "region"))],
    anti_preferred=[weighted(5, term(sel_in("security", ["S2"]), "az"))],
)
NS_SELECTOR_TERM = term(
    sel_in("security", ["S1"]), "region", namespaces=["subteam2.team2"], namespace_selector=TEAM1
)
AFFINITY_NS_SELECTOR = affinity(preferred=[weighted(5, NS_SELECTOR_TERM)])
ANTI_AFFINITY_NS_SELECTOR = affinity(anti_preferred=[weighted(5, NS_SELECTOR_TERM)])
INVALID_AFFINITY = affinity(preferred=[weighted(8, term(sel_in("security", ["{{.bad-value.}}"]), "region"))])
INVALID_ANTI_AFFINITY = affinity(
    anti_preferred=[weighted(5, term(sel_in("security", ["{{.bad-value.}}"]), "az"))]
)


def p(
    node_name: str = "", labels: dict[str, str] | None = None, aff: Affinity | None = None, ns: str = ""
) -> Pod:
    return pod(node=node_name, labels=labels, aff=aff, namespace=ns)


@dataclass
class ScoreCase:
    name: str
    pod: Pod
    pods: list[Pod]
    nodes: list[Node]
    expected: list[int] = field(default_factory=list)
    status: Status = SUCCESS
    ignore_preferred_terms_of_existing_pods: bool = False


def _nodes(*labels: dict[str, str]) -> list[Node]:
    return [node(f"node{i + 1}", lab) for i, lab in enumerate(labels)]


PREFERRED_CASES = [
    ScoreCase(
        "all nodes are same priority as Affinity is nil",
        p(labels=S1),
        [],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        status=SKIP,
    ),
    ScoreCase(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",
        p(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [MAX, 0, 0],
    ),
    ScoreCase(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
        p(aff=STAY_WITH_S1_IN_REGION),
        [p("node1", S1)],
        _nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
        p(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        [p("node1", S2), p("node1", S2), p("node2", S2), p("node3", S2), p("node4", S2), p("node5", S2)],
        _nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
        p(labels=S1, aff=AFFINITY3),
        [p("node1", S1), p("node2", S2), p("node3", S1)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [20, MAX, 0],
    ),
    ScoreCase(
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        p(labels=S2),
        [p("node1", S1, STAY_WITH_S1_IN_REGION), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [0, MAX, 0],
    ),
    ScoreCase(
        "Affinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [p("node1", S1, AFFINITY_NS_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [MAX, 0, 0],
    ),
    ScoreCase(
        "AntiAffinity symmetry with namespace selector",
        p(labels=S1, ns="subteam1.team1"),
        [p("node1", S1, ANTI_AFFINITY_NS_SELECTOR), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [0, MAX, MAX],
    ),
    ScoreCase(
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        p(labels=S1),
        [p("node1", S1, HARD_AFFINITY), p("node2", S2, HARD_AFFINITY)],
        _nodes(RG_CHINA, RG_INDIA, AZ1),
        [MAX, MAX, 0],
    ),
    ScoreCase(
        "Anti Affinity: pod that does not match existing pods in node will get high score ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node2", S2)],
        _nodes(AZ1, RG_CHINA),
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node2", S1)],
        _nodes(AZ1, RG_CHINA),
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
        p(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [p("node1", S1), p("node1", S1), p("node2", S2)],
        _nodes(AZ1, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        p(labels=S2),
        [p("node1", S1, AWAY_FROM_S2_IN_AZ), p("node2", S2, AWAY_FROM_S1_IN_AZ)],
        _nodes(AZ1, AZ2),
        [0, MAX],
    ),
    ScoreCase(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        p(labels=S1, aff=STAY_S1_AWAY_S2),
        [p("node1", S1), p("node2", S1)],
        _nodes(RG_CHINA, AZ1),
        [MAX, 0],
    ),
    ScoreCase(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
        p(labels=S1, aff=STAY_S1_AWAY_S2),
        [
            p("node1", S1),
            p("node1", S1),
            p("node2", S1),
            p("node3", S1),
            p("node3", S1),
            p("node4", S1),
            p("node5", S1),
        ],
        _nodes(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        [MAX, 0, MAX, MAX, 0],
    ),
    ScoreCase(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        p(labels=S1, aff=STAY_S1_AWAY_S2),
        [p("node1", S1), p("node2", S2), p("node3", aff=STAY_S1_AWAY_S2), p("node4", aff=AWAY_FROM_S1_IN_AZ)],
        _nodes(RG_CHINA, AZ1, RG_INDIA, AZ2),
        [MAX, 0, MAX, 0],
    ),
    ScoreCase(
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        p(labels=S1),
        [p("node1", S1), p("node2", aff=STAY_S1_AWAY_S2)],
        _nodes(RG_CHINA, RG_CHINA),
        [0, 0],
    ),
    ScoreCase(
        "invalid Affinity fails PreScore",
        p(aff=INVALID_AFFINITY),
        [],
        _nodes(RG_CHINA, RG_CHINA),
        status=error('Invalid value: "{{.bad-value.}}"'),
    ),
    ScoreCase(
        "invalid AntiAffinity fails PreScore",
        p(aff=INVALID_ANTI_AFFINITY),
        [],
        _nodes(RG_CHINA, RG_CHINA),
        status=error('Invalid value: "{{.bad-value.}}"'),
    ),
    ScoreCase(
        "Affinity with pods matching NamespaceSelector",
        p(labels=S1, aff=AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        _nodes(RG_CHINA, RG_INDIA),
        [MAX, 0],
    ),
    ScoreCase(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        p(labels=S1, aff=AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        _nodes(RG_CHINA, RG_INDIA),
        [MAX, 0],
    ),
    ScoreCase(
        "Affinity with pods matching NamespaceSelector (anti-affinity)",
        p(labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        _nodes(RG_CHINA, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase(
        "Affinity with pods matching both NamespaceSelector and Namespaces fields (anti-affinity)",
        p(labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"),
        [
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam1.team1"),
            p("node1", S1, ns="subteam2.team2"),
            p("node2", S1, ns="subteam2.team1"),
        ],
        _nodes(RG_CHINA, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase(
        "Ignore preferred terms of existing pods",
        p(labels=S2),
        [p("node1", S1, STAY_S1_AWAY_S2), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA),
        status=SKIP,
        ignore_preferred_terms_of_existing_pods=True,
    ),
    ScoreCase(
        "Do not ignore preferred terms of existing pods",
        p(labels=S2),
        [p("node1", S1, STAY_S1_AWAY_S2), p("node2", S2, STAY_WITH_S2_IN_REGION)],
        _nodes(RG_CHINA, RG_INDIA),
        [0, MAX],
    ),
    ScoreCase("No nodes to score", p(labels=S2), [], [], status=SKIP),
]


def _run(
    case_pod: Pod, pods: list[Pod], nodes: list[Node], args: dict[str, Any]
) -> tuple[Status, list[int] | None]:
    table, plugin = build(nodes, pods, args=args, namespace_labels=NAMESPACES)
    state = new_state()
    rows = rows_of(table, [n.name for n in nodes])
    status = plugin.pre_score(state, case_pod, rows)
    if not status.is_success:
        return status, None
    normalized = plugin.normalize_score(state, case_pod, plugin.score(state, case_pod, rows))
    return status, [int(s) for s in normalized]


@pytest.mark.parametrize("case", PREFERRED_CASES, ids=lambda c: c.name[:80])
def test_preferred_affinity(case: ScoreCase) -> None:
    args = {
        "hardPodAffinityWeight": 1,
        "ignorePreferredTermsOfExistingPods": case.ignore_preferred_terms_of_existing_pods,
    }
    status, scores = _run(case.pod, case.pods, case.nodes, args)
    if not status.is_success:
        assert status.code == case.status.code, status
        assert case.status.message in status.message
        return
    assert case.status.is_success, status
    assert scores == case.expected


# ---- TestPreferredAffinityWithHardPodAffinitySymmetricWeight -----------------------------------

SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = affinity(
    required=[
        term(sel_in("service", ["S1"]), "region", namespaces=["", "subteam2.team2"], namespace_selector=TEAM1)
    ]
)
HARD_NODES = _nodes(RG_CHINA, RG_INDIA, AZ1)


@pytest.mark.parametrize(
    ("name", "namespace", "weight", "expected", "status"),
    [
        ("with default weight", "", 1, [MAX, MAX, 0], SUCCESS),
        ("with zero weight", "", 0, None, SKIP),
        ("with no matching namespace", "subteam1.team2", 1, None, SKIP),
        ("with matching NamespaceSelector", "subteam1.team1", 1, [MAX, MAX, 0], SUCCESS),
        ("with matching Namespaces", "subteam2.team2", 1, [MAX, MAX, 0], SUCCESS),
    ],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str, namespace: str, weight: int, expected: list[int] | None, status: Status
) -> None:
    incoming = p(labels=SERVICE_S1, ns=namespace)
    existing = [p("node1", aff=HARD_POD_AFFINITY), p("node2", aff=HARD_POD_AFFINITY)]
    got_status, scores = _run(incoming, existing, HARD_NODES, {"hardPodAffinityWeight": weight})
    assert got_status.code == status.code
    assert scores == expected


# ---- batch-specific checks ---------------------------------------------------------------------


def test_hard_pod_affinity_weight_defaults_to_one_and_scales() -> None:
    # Existing pods with required affinity to the incoming pod: weight * number of pods.
    existing = [
        p("node1", aff=HARD_POD_AFFINITY),
        p("node2", aff=HARD_POD_AFFINITY),
        p("node2", aff=HARD_POD_AFFINITY),
    ]
    nodes = _nodes(RG_CHINA, RG_INDIA, AZ1)
    table, plugin = build(nodes, existing, namespace_labels=NAMESPACES)
    state = new_state()
    rows = rows_of(table, ["node1", "node2", "node3"])
    assert plugin.pre_score(state, p(labels=SERVICE_S1), rows).is_success
    assert plugin.score(state, p(labels=SERVICE_S1), rows).tolist() == [1, 2, 0]
    _, plugin2 = build(nodes, existing, args={"hardPodAffinityWeight": 7}, namespace_labels=NAMESPACES)
    state2 = new_state()
    assert plugin2.pre_score(state2, p(labels=SERVICE_S1), rows).is_success
    assert plugin2.score(state2, p(labels=SERVICE_S1), rows).tolist() == [7, 14, 0]


def test_raw_scores_sum_terms_and_count_pods() -> None:
    # affinity3 over the three pods: node1 (China) gets 2 (S1 matches the Exists term only),
    # node2 (India) gets 8 + 2 (S2 matches both), node3 has no region.
    table, plugin = build(_nodes(RG_CHINA, RG_INDIA, AZ1), [p("node1", S1), p("node2", S2), p("node3", S1)])
    state = new_state()
    rows = rows_of(table, ["node1", "node2", "node3"])
    incoming = p(labels=S1, aff=AFFINITY3)
    assert plugin.pre_score(state, incoming, rows).is_success
    raw = plugin.score(state, incoming, rows)
    assert raw.tolist() == [2, 10, 0]
    assert plugin.normalize_score(state, incoming, raw).tolist() == [20, 100, 0]


def test_contributions_that_cancel_still_score_not_skip() -> None:
    # +5 (preferred affinity) and -5 (preferred anti-affinity) at the same domain: upstream
    # records topoScore entries, so PreScore succeeds and every node normalizes to 0.
    aff = affinity(
        preferred=[weighted(5, term(sel_in("security", ["S1"]), "region"))],
        anti_preferred=[weighted(5, term(sel_in("security", ["S1"]), "region"))],
    )
    table, plugin = build(_nodes(RG_CHINA, RG_INDIA), [p("node1", S1)])
    state = new_state()
    rows = rows_of(table, ["node1", "node2"])
    incoming = p(aff=aff)
    assert plugin.pre_score(state, incoming, rows).code == Code.SUCCESS
    assert plugin.normalize_score(state, incoming, plugin.score(state, incoming, rows)).tolist() == [0, 0]


def test_matching_pod_on_node_without_topology_key_skips() -> None:
    table, plugin = build(_nodes(AZ1, AZ2), [p("node1", S1)])
    assert plugin.pre_score(new_state(), p(aff=STAY_WITH_S1_IN_REGION), rows_of(table, ["node1"])) == SKIP


def test_score_uses_all_placed_pods_not_only_candidate_rows() -> None:
    # The matching pod is on node1 but only node2 (same region) is being scored.
    table, plugin = build(_nodes(RG_CHINA, RG_CHINA, RG_INDIA), [p("node1", S1)])
    state = new_state()
    rows = rows_of(table, ["node2", "node3"])
    incoming = p(aff=STAY_WITH_S1_IN_REGION)
    assert plugin.pre_score(state, incoming, rows).is_success
    assert plugin.normalize_score(state, incoming, plugin.score(state, incoming, rows)).tolist() == [100, 0]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([3, 3, 3], [0, 0, 0]),
        ([-5, 0, 5], [0, 50, 100]),
        ([0, 1, 2], [0, 50, 100]),
        ([-8, -3, 0], [0, 62, 100]),
        ([1, 2, 4], [0, 33, 100]),
    ],
)
def test_normalize_is_min_max(raw: list[int], want: list[int]) -> None:
    state = PreScoreState(touched=True)
    assert normalize(state, np.asarray(raw, dtype=np.int64)).tolist() == want


def test_many_pods_preferred_terms_match_per_domain() -> None:
    nodes = [node(f"n{i}", {"zone": f"z{i % 3}", "kubernetes.io/hostname": f"n{i}"}) for i in range(30)]
    pods = [pod(f"w{i}", namespace="", node=f"n{i % 30}", labels={"app": "web"}) for i in range(90)]
    pods += [pod(f"d{i}", namespace="", node=f"n{i % 7}", labels={"app": "db"}) for i in range(7)]
    table, plugin = build(nodes, pods)
    incoming = pod(
        namespace="",
        aff=affinity(
            preferred=[weighted(3, term(sel_in("app", ["db"]), "zone"))],
            anti_preferred=[weighted(1, term(sel_exists("app"), "kubernetes.io/hostname"))],
        ),
    )
    rows = rows_of(table, [n.name for n in nodes])
    state = new_state()
    assert plugin.pre_score(state, incoming, rows).is_success
    raw = plugin.score(state, incoming, rows)
    # Expected by brute force over all pods, per node.
    by_node: dict[str, list[Pod]] = {}
    for q in pods:
        by_node.setdefault(q.node_name, []).append(q)
    zone_db = {z: 0 for z in ("z0", "z1", "z2")}
    for q in pods:
        if q.labels["app"] == "db":
            zone_db[f"z{int(q.node_name[1:]) % 3}"] += 3
    want = [zone_db[f"z{i % 3}"] - len(by_node.get(f"n{i}", [])) for i in range(30)]
    assert raw.tolist() == want
