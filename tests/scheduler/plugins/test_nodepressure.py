"""NodePressure (ours): profiles whose EvictionPolicy relieves pressure keep their pods off the
nodes relief holds under pressure, as the condition taints will once the kubelet reports them."""

from __future__ import annotations

from policy_scheduler.scheduler.config import ProfileConfig
from policy_scheduler.scheduler.diagnosis_recorder import PENDING, SCHEDULED, DiagnosisRecorder
from policy_scheduler.scheduler.engine import Engine
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.model import Pod, Toleration
from policy_scheduler.scheduler.pressure.view import NodePressureView, ReliefMark
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from tests.builders import make_node, make_pod

GI = 2**30
RELIEF = "relieve"
NODES = ("n1", "n2")


def engine(view: NodePressureView) -> tuple[Engine, DiagnosisRecorder]:
    recorder = DiagnosisRecorder()
    e = Engine(seed=0, observer=recorder, services=ClusterServices(node_pressure=view))
    e.set_profiles(
        [
            resolve_profile(ProfileConfig(scheduler_name="relieved", eviction_policy_name=RELIEF)),
            resolve_profile(ProfileConfig(scheduler_name="other", eviction_policy_name="no-relief")),
            resolve_profile(ProfileConfig()),  # default-scheduler: names no policy
        ]
    )
    for name in NODES:
        e.node_added(make_node(name, allocatable={"cpu": 4000, "memory": 8 * GI, "pods": 110}))
    return e, recorder


def place(view: NodePressureView, pod: Pod) -> tuple[str, str, list[tuple[str, str, int]]]:
    """(state, chosen node, rejections) of one scheduling cycle for `pod`."""
    e, recorder = engine(view)
    e.pod_added(pod)
    info = e.queue.try_pop()
    assert info is not None
    e.scheduler.schedule_one(info)
    found = recorder.get(pod.namespace, pod.name)
    assert found is not None
    return found.state, found.node, [(r.plugin, r.reason, r.nodes) for r in found.rejections]


def pressured(*conditions: str, policies: tuple[str, ...] = (RELIEF,)) -> NodePressureView:
    view = NodePressureView()
    view.set_policies(policies)
    for name in NODES:
        view.set(name, ReliefMark(conditions, RELIEF))
    return view


def test_a_relieving_profile_keeps_its_pods_off_nodes_under_relief() -> None:
    state, _, rejections = place(pressured("MemoryPressure"), make_pod("web", scheduler_name="relieved"))
    assert state == PENDING
    assert rejections == [
        (
            "NodePressure",
            f"node(s) had MemoryPressure that pressure relief holds (EvictionPolicy {RELIEF})",
            2,
        )
    ]


def test_other_profiles_and_the_default_one_are_untouched() -> None:
    for scheduler in ("other", "default-scheduler"):
        state, node, _ = place(pressured("MemoryPressure"), make_pod("web", scheduler_name=scheduler))
        assert (state, node in NODES) == (SCHEDULED, True)


def test_the_filter_is_off_while_the_policy_relieves_nothing() -> None:
    state, _, _ = place(pressured("MemoryPressure", policies=()), make_pod("web", scheduler_name="relieved"))
    assert state == SCHEDULED


def test_only_the_marked_node_is_avoided() -> None:
    view = NodePressureView()
    view.set_policies([RELIEF])
    view.set("n1", ReliefMark(("DiskPressure",), RELIEF))
    state, node, _ = place(view, make_pod("web", scheduler_name="relieved"))
    assert (state, node) == (SCHEDULED, "n2")


def test_a_pod_tolerating_the_condition_taint_passes_as_with_the_real_taint() -> None:
    memory = Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule")
    tolerant = make_pod("ds", scheduler_name="relieved", tolerations=(memory,))
    assert place(pressured("MemoryPressure"), tolerant)[0] == SCHEDULED
    # tolerating memory pressure is not tolerating disk pressure
    state, _, rejections = place(pressured("MemoryPressure", "DiskPressure"), tolerant)
    assert state == PENDING
    assert "had DiskPressure that" in rejections[0][1]


def test_marks_move_the_view_generation() -> None:
    view = NodePressureView()
    before = view.generation
    assert view.set("n1", ReliefMark(("MemoryPressure",), RELIEF))
    assert not view.set("n1", ReliefMark(("MemoryPressure",), RELIEF))
    assert view.set("n1", None)
    view.set_policies([RELIEF])
    view.set_policies([RELIEF])
    assert view.generation == before + 3
