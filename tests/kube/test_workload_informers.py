"""The Workload API's informers: one per served version; a v1.35 Workload's entries followed."""

from __future__ import annotations

from policy_scheduler.apiobjects.workloads import workload_from_dict
from policy_scheduler.kube import paths
from policy_scheduler.kube.timings import DEFAULTS
from policy_scheduler.kube.workload_informers import WorkloadInformers
from policy_scheduler.scheduler.gang import PodGroup
from tests.no_api import NO_API


def workload(*entries: tuple[str, int]) -> dict[str, object]:
    groups = [{"name": name, "policy": {"gang": {"minCount": n}}} for name, n in entries]
    return {"metadata": {"name": "job", "namespace": "ml"}, "spec": {"podGroups": groups}}


def test_every_version_has_an_informer() -> None:
    informers = WorkloadInformers(
        NO_API, on_set=lambda _g: None, on_delete=lambda _k: None, timings=DEFAULTS.informer
    )
    assert [i.path for i in informers.informers()] == [
        "/apis/scheduling.k8s.io/v1beta1/podgroups",
        "/apis/scheduling.k8s.io/v1alpha2/podgroups",
        paths.WORKLOAD_API_WORKLOADS,
    ]
    assert paths.WORKLOAD_API_WORKLOADS == "/apis/scheduling.k8s.io/v1alpha1/workloads"


def test_a_workloads_entries_are_set_and_those_removed_deleted() -> None:
    set_: list[tuple[str, int]] = []
    deleted: list[str] = []

    def on_set(group: PodGroup) -> None:
        set_.append((group.key, group.min_member))

    informers = WorkloadInformers(NO_API, on_set=on_set, on_delete=deleted.append, timings=DEFAULTS.informer)
    first = workload_from_dict(workload(("a", 2), ("b", 3)))
    informers.workloads.on_add(first)
    assert set_ == [("ml/job/a", 2), ("ml/job/b", 3)]
    second = workload_from_dict(workload(("a", 1)))
    informers.workloads.on_update(first, second)
    assert deleted == ["ml/job/b"]
    assert set_[-1] == ("ml/job/a", 1)
    informers.workloads.on_delete(second)
    assert deleted == ["ml/job/b", "ml/job/a"]
