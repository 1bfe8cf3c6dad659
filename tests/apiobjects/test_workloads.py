"""The Workload API decoded: scheduling.k8s.io PodGroups (v1beta1/v1alpha2), v1.35's Workloads,
and the pod's reference to its group (spec.schedulingGroup; v1.35's spec.workloadRef)."""

from __future__ import annotations

import msgspec
import pytest

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert import pod_from_api
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.workloads import pod_group_from_dict, workload_from_dict
from policy_scheduler.scheduler.gang import scheduling_group_key, scheduling_policy_key

CREATED = "2026-01-02T03:04:05Z"


def test_a_gang_pod_group() -> None:
    group = pod_group_from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "ml", "uid": "u1", "creationTimestamp": CREATED},
            "spec": {
                "workloadRef": {"workloadName": "w", "templateName": "t"},
                "schedulingPolicy": {"gang": {"minCount": 4}},
            },
        }
    )
    assert (group.key, group.min_member, group.gang, group.malformed, group.uid) == (
        "ml/pg",
        4,
        True,
        None,
        "u1",
    )
    assert group.creation_timestamp == 1767323045.0


def test_a_basic_pod_group_is_no_gang() -> None:
    group = pod_group_from_dict({"metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"basic": {}}}})
    assert (group.key, group.gang, group.min_member) == ("default/pg", False, 1)


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        ({"gang": {"minCount": 0}}, "spec.schedulingPolicy.gang.minCount: must be greater than 0"),
        (
            {"gang": {"minCount": 2}, "basic": {}},
            "spec.schedulingPolicy: exactly one of basic and gang must be set",
        ),
    ],
)
def test_a_policy_the_api_server_would_refuse_holds_the_group(
    policy: dict[str, object], problem: str
) -> None:
    group = pod_group_from_dict(
        {"metadata": {"name": "pg", "namespace": "ml"}, "spec": {"schedulingPolicy": policy}}
    )
    assert group.malformed == f"PodGroup ml/pg: {problem}"


def test_a_field_of_the_wrong_type_names_its_path() -> None:
    with pytest.raises(ConversionError) as info:
        pod_group_from_dict(
            {"metadata": {"name": "pg"}, "spec": {"schedulingPolicy": {"gang": {"minCount": "x"}}}}
        )
    assert "spec.schedulingPolicy.gang.minCount" in str(info.value)


def test_a_v1_35_workload_is_one_group_per_pod_group_entry() -> None:
    workload = workload_from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "job", "namespace": "ml"},
            "spec": {
                "podGroups": [
                    {"name": "workers", "policy": {"gang": {"minCount": 3}}},
                    {"name": "driver", "policy": {"basic": {}}},
                ]
            },
        }
    )
    assert workload.key == "ml/job"
    assert [(g.key, g.gang, g.min_member) for g in workload.groups] == [
        ("ml/job/workers", True, 3),
        ("ml/job/driver", False, 1),
    ]


def _pod(spec: dict[str, object]) -> structs.Pod:
    raw = {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [{"name": "c"}], **spec}}
    return msgspec.json.decode(msgspec.json.encode(raw), type=structs.Pod)


def test_the_pods_scheduling_group_v1_36_and_later() -> None:
    pod = pod_from_api(_pod({"schedulingGroup": {"podGroupName": "pg"}}))
    assert pod.scheduling_group == "pg"
    assert scheduling_group_key(pod) == scheduling_policy_key(pod) == "ml/pg"


def test_the_pods_workload_ref_v1_35() -> None:
    pod = pod_from_api(
        _pod({"workloadRef": {"name": "job", "podGroup": "workers", "podGroupReplicaKey": "2"}})
    )
    assert pod.workload_ref == ("job", "workers", "2")
    assert scheduling_group_key(pod) == "ml/job/workers/2"  # each replica is a gang of its own
    assert scheduling_policy_key(pod) == "ml/job/workers"  # with its template's policy


def test_a_pod_in_no_group() -> None:
    pod = pod_from_api(_pod({}))
    assert (pod.scheduling_group, pod.workload_ref, scheduling_group_key(pod)) == ("", None, "")


@pytest.mark.parametrize(
    ("mode", "disrupt_all"),
    [
        ({"all": {}}, True),  # v1beta1
        ({"single": {}}, False),
        ("PodGroup", True),  # v1alpha2 (v1.36)
        ("Pod", False),
        (None, False),
    ],
)
def test_the_disruption_mode(mode: object, disrupt_all: bool) -> None:
    spec: dict[str, object] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if mode is not None:
        spec["disruptionMode"] = mode
    assert pod_group_from_dict({"metadata": {"name": "pg"}, "spec": spec}).disrupt_all is disrupt_all
