"""GangScheduling (the Workload API's gangs): upstream's gangscheduling_test.go tables of v1.37.2
(the CompositePodGroup=false rows; v1.36.3's are the same for these points) and v1.35.4."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from policy_scheduler.apiobjects.workloads import pod_group_from_dict, workload_from_dict
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.events import Action, QueueingHint, Resource
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.framework.unserved import WORKLOAD_API, UnservedApis
from policy_scheduler.scheduler.gang import PodGroup, PodGroupStore, workload_pod_groups
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.gangscheduling import GangScheduling
from policy_scheduler.scheduler.plugins.gangscheduling.plugin import PERMIT_TIMEOUT_SECONDS
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import V1_35, V1_36, V1_37, KubernetesVersion

NODE = "some-node"


def pod(name: str, group: str = "", namespace: str = "ns1", node: str = "") -> Pod:
    return Pod(name, namespace=namespace, uid=name, scheduling_group=group, node_name=node)


def ref_pod(name: str, workload: str, template: str, replica: str = "", namespace: str = "ns1") -> Pod:
    return Pod(name, namespace=namespace, uid=name, workload_ref=(workload, template, replica))


def pod_group(name: str, min_count: int | None, namespace: str = "ns1") -> PodGroup:
    """st.MakePodGroup(): MinCount(n) is a gang, BasicPolicy() (None here) is not."""
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return pod_group_from_dict(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"schedulingPolicy": policy}}
    )


def workload(name: str, templates: dict[str, int | None], namespace: str = "ns1") -> tuple[PodGroup, ...]:
    """st.MakeWorkload() of v1.35 with podGroups name -> minCount (None: BasicPolicy)."""
    entries: list[dict[str, Any]] = [
        {"name": t, "policy": {"basic": {}} if n is None else {"gang": {"minCount": n}}}
        for t, n in templates.items()
    ]
    return workload_from_dict(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"podGroups": entries}}
    ).groups


@dataclass
class FakeWaiting:
    pod: Pod
    allowed: bool = False
    outcome: Status | None = None

    rejected: str = ""

    def allow(self, plugin: str) -> None:
        self.allowed = True

    def reject(self, plugin: str, message: str) -> None:
        self.rejected = message


@dataclass
class FakeFramework:
    waiting: list[FakeWaiting] = field(default_factory=list)

    def iterate_over_waiting_pods(self) -> list[FakeWaiting]:
        return self.waiting


@dataclass
class Harness:
    plugin: GangScheduling
    store: PodGroupStore
    table: NodeTable
    framework: FakeFramework
    activated: list[str]

    def assume(self, p: Pod) -> Pod:
        bound = Pod(
            p.name,
            namespace=p.namespace,
            uid=p.uid,
            scheduling_group=p.scheduling_group,
            workload_ref=p.workload_ref,
            node_name=NODE,
        )
        self.table.add_pod(bound, self.table.row(NODE))
        return bound


def harness(
    version: KubernetesVersion,
    groups: list[PodGroup],
    pods: list[Pod],
    unserved: dict[str, str] | None = None,
) -> Harness:
    table = NodeTable()
    table.set_node(Node(NODE, allocatable={"cpu": 100_000, "pods": 110}))
    store = workload_pod_groups()
    for g in groups:
        store.set_group(g)
    for p in pods:
        store.pod_seen(p)
    activated: list[str] = []
    framework = FakeFramework()
    handle = Handle(
        table=table,
        services=ClusterServices(workload_groups=store, unserved=UnservedApis(unserved)),
        features=Features(version, (("GenericWorkload", True),)),
        activate=lambda pods: activated.extend(sorted(p.name for p in pods)),
    )
    handle.framework = framework  # type: ignore[assignment]
    return Harness(GangScheduling(handle, None), store, table, framework, activated)


# ---- TestGangSchedulingFlow (v1.37.2 and v1.36.3, CPG=false) ---------------------------------------

GANG1 = pod_group("pg1", 3)
GANG2 = pod_group("pg2", 4)
BASIC = pod_group("pg3", None)
P = {n: pod(n, "pg1") for n in ("p1", "p2", "p3")} | {n: pod(n, "pg2") for n in ("p4", "p5")}
BASIC_POD = pod("basic-pod", "pg3")
NON_GANG = pod("non-gang")


@dataclass(frozen=True)
class FlowCase:
    name: str
    pod: Pod
    initial_pods: tuple[Pod, ...] = ()
    groups: tuple[PodGroup, ...] = ()
    waiting_on_permit: tuple[Pod, ...] = ()
    pre_enqueue: Status | None = None
    permit: Status | None = None
    activated: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()


FLOW_V1_36 = [
    FlowCase("non-gang pod succeeds immediately", NON_GANG, groups=(GANG1, GANG2, BASIC)),
    FlowCase("basic policy pod succeeds immediately", BASIC_POD, groups=(GANG1, GANG2, BASIC)),
    FlowCase(
        "gang pod fails PreEnqueue when pod group is not yet created",
        P["p1"],
        (P["p2"], P["p3"], P["p4"], P["p5"]),
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ('waiting for pods\'s pod group "pg1" to appear in scheduling queue',),
        ),
    ),
    FlowCase(
        "gang pod fails PreEnqueue when quorum is not met",
        P["p1"],
        (P["p2"], P["p4"], P["p5"]),
        (GANG1, GANG2),
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("waiting for minCount pods from a gang to appear in scheduling queue",),
        ),
    ),
    FlowCase(
        "gang pod passes PreEnqueue, but waits at Permit",
        P["p1"],
        (P["p2"], P["p3"], P["p4"], P["p5"]),
        (GANG1, GANG2),
        waiting_on_permit=(P["p2"], P["p4"], P["p5"]),
        permit=Status(Code.WAIT, ("waiting for minCount pods from a gang to be scheduled",)),
        activated=("p3",),
    ),
    FlowCase(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        P["p1"],
        (P["p2"], P["p3"], P["p4"], P["p5"]),
        (GANG1, GANG2),
        waiting_on_permit=(P["p2"], P["p3"], P["p4"], P["p5"]),
        allowed=("p2", "p3"),
    ),
]

# ---- TestGangSchedulingFlow (v1.35.4: Workloads and workloadRef) -------------------------------------

WL_GANG = workload("gang-wl", {"pg1": 3, "pg2": 4})
WL_BASIC = workload("basic-wl", {"pg1": None})
R = {n: ref_pod(n, "gang-wl", "pg1") for n in ("p1", "p2", "p3")} | {
    "p4": ref_pod("p4", "gang-wl", "pg2"),
    "p5": ref_pod("p5", "gang-wl", "pg1", "2"),
}

FLOW_V1_35 = [
    FlowCase("non-gang pod succeeds immediately", NON_GANG, groups=(*WL_GANG, *WL_BASIC)),
    FlowCase(
        "basic policy pod succeeds immediately",
        ref_pod("basic-pod", "basic-wl", "pg1"),
        groups=(*WL_GANG, *WL_BASIC),
    ),
    FlowCase(
        "gang pod fails PreEnqueue when workload is not yet created",
        R["p1"],
        (R["p2"], R["p3"], R["p4"], R["p5"]),
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ('waiting for pods\'s workload "gang-wl" to appear in scheduling queue',),
        ),
    ),
    FlowCase(
        "gang pod fails PreEnqueue when quorum is not met",
        R["p1"],
        (R["p2"], R["p4"], R["p5"]),
        WL_GANG,
        pre_enqueue=Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("waiting for minCount pods from a gang to appear in scheduling queue",),
        ),
    ),
    FlowCase(
        "gang pod passes PreEnqueue, but waits at Permit",
        R["p1"],
        (R["p2"], R["p3"], R["p4"], R["p5"]),
        WL_GANG,
        waiting_on_permit=(R["p2"], R["p4"], R["p5"]),
        permit=Status(Code.WAIT, ("waiting for minCount pods from a gang to be waiting on permit",)),
        activated=("p3",),
    ),
    FlowCase(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        R["p1"],
        (R["p2"], R["p3"], R["p4"], R["p5"]),
        WL_GANG,
        waiting_on_permit=(R["p2"], R["p3"], R["p4"], R["p5"]),
        allowed=("p2", "p3"),
    ),
]


def _flow(version: KubernetesVersion, case: FlowCase) -> None:
    h = harness(version, list(case.groups), [*case.initial_pods, case.pod])
    got = h.plugin.pre_enqueue(case.pod)
    assert got == (case.pre_enqueue or Status()), case.name
    if not got.is_success:
        return
    for other in case.waiting_on_permit:  # they hit Permit before and wait there
        assumed = h.assume(other)
        status, _ = h.plugin.permit(CycleState(), assumed, NODE)
        assert status.code == Code.WAIT, other.name
        h.framework.waiting.append(FakeWaiting(assumed))
    h.activated.clear()
    assumed = h.assume(case.pod)
    status, timeout = h.plugin.permit(CycleState(), assumed, NODE)
    assert status == (case.permit or Status()), case.name
    if status.code == Code.WAIT:
        assert timeout == PERMIT_TIMEOUT_SECONDS
        assert tuple(h.activated) == case.activated
        return
    assert sorted(w.pod.name for w in h.framework.waiting if w.allowed) == sorted(case.allowed)


@pytest.mark.parametrize("version", [V1_36, V1_37], ids=str)
@pytest.mark.parametrize("case", FLOW_V1_36, ids=lambda c: c.name)
def test_gang_scheduling_flow(version: KubernetesVersion, case: FlowCase) -> None:
    _flow(version, case)


@pytest.mark.parametrize("case", FLOW_V1_35, ids=lambda c: c.name)
def test_gang_scheduling_flow_v1_35(case: FlowCase) -> None:
    _flow(V1_35, case)


def test_a_workload_without_the_pods_pod_group_says_so_v1_35() -> None:
    h = harness(V1_35, list(WL_GANG), [ref_pod("x", "gang-wl", "missing")])
    assert h.plugin.pre_enqueue(ref_pod("x", "gang-wl", "missing")).reasons == (
        'pod group "missing" doesn\'t exist for a workload "gang-wl"',
    )


def test_an_unserved_workload_api_is_named_in_the_reason() -> None:
    h = harness(V1_37, [], [P["p1"]], unserved={WORKLOAD_API: "the Workload API is not served"})
    status = h.plugin.pre_enqueue(P["p1"])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        'waiting for pods\'s pod group "pg1" to appear in scheduling queue: the Workload API is not served',
    )


def test_a_malformed_pod_group_holds_its_pods() -> None:
    bad = pod_group("pg1", 0)
    h = harness(V1_37, [bad], [P["p1"]])
    status = h.plugin.pre_enqueue(P["p1"])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "spec.schedulingPolicy.gang.minCount: must be greater than 0" in status.message


# ---- queueing hints -------------------------------------------------------------------------------


def _hint(
    h: Harness, resource: Resource, action: Action, target: Pod, old: object, new: object
) -> QueueingHint:
    for registered in h.plugin.events_to_register():
        if registered.event.resource == resource and registered.event.action & action:
            assert registered.hint is not None
            return registered.hint(target, old, new)
    raise AssertionError(f"{resource}/{action} is not registered")


@pytest.mark.parametrize(
    ("name", "target", "added", "want"),
    [
        (
            "add a newPod which matches the pod's scheduling group",
            pod("p", "pg"),
            pod("q", "pg"),
            QueueingHint.QUEUE,
        ),
        (
            "add a newPod with NodeName set which matches the pod's scheduling group",
            pod("p", "pg"),
            pod("q", "pg", node="n1"),
            QueueingHint.QUEUE,
        ),
        (
            "add a newPod which doesn't match the pod's namespace",
            pod("p", "pg"),
            pod("q", "pg", "ns2"),
            QueueingHint.SKIP,
        ),
        (
            "add a newPod which doesn't match the pod's pod group name",
            pod("p", "pg"),
            pod("q", "pg2"),
            QueueingHint.SKIP,
        ),
    ],
)
def test_is_schedulable_after_pod_added(name: str, target: Pod, added: Pod, want: QueueingHint) -> None:
    h = harness(V1_37, [], [])
    resource = Resource.ASSIGNED_POD if added.node_name else Resource.UNSCHEDULED_POD
    assert _hint(h, resource, Action.ADD, target, None, added) == want, name


@pytest.mark.parametrize(
    ("name", "target", "added", "want"),
    [
        (
            "add a newPod which matches the pod's workload and pod group",
            ref_pod("p", "w1", "pg"),
            ref_pod("q", "w1", "pg"),
            QueueingHint.QUEUE,
        ),
        (
            "add a newPod which matches the pod's workload, pod group and replica key",
            ref_pod("p", "w1", "pg", "3"),
            ref_pod("q", "w1", "pg", "3"),
            QueueingHint.QUEUE,
        ),
        (
            "add a newPod which doesn't match the pod's namespace",
            ref_pod("p", "w1", "pg"),
            ref_pod("q", "w1", "pg", namespace="foo"),
            QueueingHint.SKIP,
        ),
        (
            "add a newPod which doesn't match the pod's workload name",
            ref_pod("p", "w1", "pg"),
            ref_pod("q", "w2", "pg"),
            QueueingHint.SKIP,
        ),
        (
            "add a newPod which doesn't match the pod's pod group name",
            ref_pod("p", "w1", "pg"),
            ref_pod("q", "w1", "pg2"),
            QueueingHint.SKIP,
        ),
        (
            "add a newPod which doesn't match the pod's replica key",
            ref_pod("p", "w1", "pg", "3"),
            ref_pod("q", "w1", "pg", "4"),
            QueueingHint.SKIP,
        ),
    ],
)
def test_is_schedulable_after_pod_added_v1_35(name: str, target: Pod, added: Pod, want: QueueingHint) -> None:
    h = harness(V1_35, [], [])
    assert _hint(h, Resource.POD, Action.ADD, target, None, added) == want, name


@pytest.mark.parametrize("version", [V1_35, V1_36, V1_37], ids=str)
@pytest.mark.parametrize(
    ("name", "target", "added", "want"),
    [
        (
            "add a pod group which matches the pod's pod group name",
            pod("p", "pg"),
            pod_group("pg", 1),
            QueueingHint.QUEUE,
        ),
        (
            "add a pod group which doesn't match the pod's scheduling group name",
            pod("p", "pg"),
            pod_group("pg2", 1),
            QueueingHint.SKIP,
        ),
        (
            "add a pod group which doesn't match the pod's scheduling group namespace",
            pod("p", "pg"),
            pod_group("pg", 1, "ns2"),
            QueueingHint.SKIP,
        ),
        (
            "v1.35: add a workload which matches the pod's workload name",
            ref_pod("p", "w1", "pg"),
            workload("w1", {"pg": 1})[0],
            QueueingHint.QUEUE,
        ),
        (
            "v1.35: add a workload which doesn't match the pod's workload name",
            ref_pod("p", "w2", "pg"),
            workload("w1", {"pg": 1})[0],
            QueueingHint.SKIP,
        ),
        (
            "v1.35: add a workload which doesn't match the pod's workload namespace",
            ref_pod("p", "w1", "pg"),
            workload("w1", {"pg": 1}, "ns2")[0],
            QueueingHint.SKIP,
        ),
    ],
)
def test_is_schedulable_after_group_added(
    version: KubernetesVersion, name: str, target: Pod, added: PodGroup, want: QueueingHint
) -> None:
    h = harness(version, [], [])
    assert _hint(h, Resource.WORKLOAD_POD_GROUP, Action.ADD, target, None, added) == want, name


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    [
        (
            "minCount decreased matches target pod",
            pod("p", "pg"),
            pod_group("pg", 4),
            pod_group("pg", 3),
            QueueingHint.QUEUE,
        ),
        (
            "update Basic policy",
            pod("p", "pg"),
            pod_group("pg", None),
            pod_group("pg", None),
            QueueingHint.SKIP,
        ),
        (
            "minCount increased matches target pod",
            pod("p", "pg"),
            pod_group("pg", 3),
            pod_group("pg", 4),
            QueueingHint.SKIP,
        ),
        (
            "minCount unchanged matches target pod",
            pod("p", "pg"),
            pod_group("pg", 3),
            pod_group("pg", 3),
            QueueingHint.SKIP,
        ),
        (
            "minCount decreased but pod group name doesn't match target pod",
            pod("p", "pg-other"),
            pod_group("pg", 4),
            pod_group("pg", 3),
            QueueingHint.SKIP,
        ),
        (
            "minCount decreased but pod group namespace doesn't match target pod",
            pod("p", "pg", "ns2"),
            pod_group("pg", 4),
            pod_group("pg", 3),
            QueueingHint.SKIP,
        ),
        (
            "pod without a scheduling group is skipped",
            pod("p"),
            pod_group("pg", 4),
            pod_group("pg", 3),
            QueueingHint.SKIP,
        ),
    ],
)
def test_is_schedulable_after_pod_group_updated(
    name: str, target: Pod, old: PodGroup, new: PodGroup, want: QueueingHint
) -> None:
    h = harness(V1_37, [], [])
    assert _hint(h, Resource.WORKLOAD_POD_GROUP, Action.UPDATE, target, old, new) == want, name


@pytest.mark.parametrize(
    ("version", "events"),
    [
        (V1_35, {(Resource.POD, Action.ADD), (Resource.WORKLOAD_POD_GROUP, Action.ADD)}),
        (V1_36, {(Resource.POD, Action.ADD), (Resource.WORKLOAD_POD_GROUP, Action.ADD)}),
        (
            V1_37,
            {
                (Resource.UNSCHEDULED_POD, Action.ADD),
                (Resource.ASSIGNED_POD, Action.ADD),
                (Resource.WORKLOAD_POD_GROUP, Action.ADD),
                (Resource.WORKLOAD_POD_GROUP, Action.UPDATE),
            },
        ),
    ],
    ids=str,
)
def test_events_to_register_per_release(
    version: KubernetesVersion, events: set[tuple[Resource, Action]]
) -> None:
    h = harness(version, [], [])
    assert {(e.event.resource, e.event.action) for e in h.plugin.events_to_register()} == events


# ---- PostFilter (ours from v1.36: the pod-group cycle's all-or-nothing outcome) -------------------


@pytest.mark.parametrize(
    ("name", "others_waiting", "others_pending", "released"),
    [
        (
            "two wait, none left to try: released",
            2,
            0,
            "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
        ),
        (
            "one waits, one left to try: released",
            1,
            1,
            "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
        ),
        ("one waits, two left to try: quorum still possible", 1, 2, ""),
        ("none waits: nothing to release", 0, 0, ""),
    ],
)
def test_post_filter_releases_the_waiting_members_of_a_gang_that_cannot_complete(
    name: str, others_waiting: int, others_pending: int, released: str
) -> None:
    failing = pod("f", "pg1")
    waiting = [pod(f"w{i}", "pg1") for i in range(others_waiting)]
    pending = [pod(f"q{i}", "pg1") for i in range(others_pending)]
    h = harness(V1_37, [pod_group("pg1", 3)], [failing, *waiting, *pending])
    for p in waiting:
        h.framework.waiting.append(FakeWaiting(h.assume(p)))
    result, status = h.plugin.post_filter(CycleState(), failing, Diagnosis())
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert {w.rejected for w in h.framework.waiting} <= {released}, name
    assert all(w.rejected == released for w in h.framework.waiting), name


def test_post_filter_is_not_a_v1_35_point() -> None:
    assert "postFilter" in GangScheduling.points_absent_in(Features(V1_35))
    assert "postFilter" not in GangScheduling.points_absent_in(Features(V1_37))
