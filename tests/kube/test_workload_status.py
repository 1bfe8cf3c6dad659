"""The Workload API PodGroups' scheduling condition (kube-scheduler's updatePodGroupCondition):
its type per served version, True once and for all, False with the verdict, only on change."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from policy_scheduler.apiobjects.workloads import pod_group_from_dict, workload_from_dict
from policy_scheduler.kube import crstatus
from policy_scheduler.kube.client import STRATEGIC_MERGE_PATCH
from policy_scheduler.kube.workload_status import WorkloadGroupStatusWriter
from policy_scheduler.scheduler.gang import workload_pod_groups
from tests.no_api import NO_API

NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    calls: list[tuple[str, str, dict[str, Any]]] = []

    async def fake_request(_api: Any, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        assert method == "PATCH"
        assert kwargs["content_type"] == STRATEGIC_MERGE_PATCH  # merges by condition type
        calls.append((path, kwargs["content_type"], kwargs["body"]["status"]))
        return 200, b"{}"

    monkeypatch.setattr(crstatus, "request", fake_request)
    return calls


@pytest.mark.parametrize(
    ("version", "condition_type"),
    [("v1beta1", "PodGroupInitiallyScheduled"), ("v1alpha2", "PodGroupScheduled")],
)
async def test_the_condition_follows_the_gang(
    sent: list[tuple[str, str, dict[str, Any]]], version: str, condition_type: str
) -> None:
    store = workload_pod_groups()
    group = pod_group_from_dict(
        {
            "metadata": {"name": "pg", "namespace": "ml", "generation": 3},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        }
    )
    store.set_group(group)
    writer = WorkloadGroupStatusWriter(NO_API, store, lambda: version, clock=lambda: NOW)
    await writer.flush()
    assert sent == [], "no verdict yet (members still arriving)"
    verdict = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    store.note("ml/pg", verdict)
    await writer.flush()
    await writer.flush()
    assert sent == [
        (
            f"/apis/scheduling.k8s.io/{version}/namespaces/ml/podgroups/pg/status",
            STRATEGIC_MERGE_PATCH,
            {
                "conditions": [
                    {
                        "type": condition_type,
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": verdict,
                        "lastTransitionTime": "2026-11-27T12:00:00Z",
                        "observedGeneration": 3,
                    }
                ]
            },
        )
    ], "written once"
    store.note("ml/pg", "", scheduled=3)
    await writer.flush()
    assert sent[-1][2]["conditions"][0] | {"lastTransitionTime": ""} == {
        "type": condition_type,
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "",
        "observedGeneration": 3,
    }
    store.note("ml/pg", verdict)  # a later member fails: the condition stays True
    await writer.flush()
    assert len(sent) == 2


async def test_nothing_is_written_without_pod_group_objects(
    sent: list[tuple[str, str, dict[str, Any]]],
) -> None:
    """v1.35's groups are a Workload's entries (no PodGroup object); no served version: no writes."""
    store = workload_pod_groups()
    workload = {
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 2}}}]},
    }
    for group in workload_from_dict(workload).groups:
        store.set_group(group)
    store.note("ml/w/g", "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")
    await WorkloadGroupStatusWriter(NO_API, store, lambda: "v1beta1").flush()
    store.set_group(
        pod_group_from_dict(
            {
                "metadata": {"name": "pg", "namespace": "ml"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            }
        )
    )
    store.note("ml/pg", "x")
    await WorkloadGroupStatusWriter(NO_API, store, lambda: None).flush()
    assert sent == []


async def test_a_pod_group_created_again_gets_its_own_condition(
    sent: list[tuple[str, str, dict[str, Any]]],
) -> None:
    store = workload_pod_groups()

    def create(uid: str) -> None:
        meta = {"name": "pg", "namespace": "ml", "uid": uid}
        store.set_group(
            pod_group_from_dict({"metadata": meta, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
        )

    writer = WorkloadGroupStatusWriter(NO_API, store, lambda: "v1beta1", clock=lambda: NOW)
    create("u1")
    store.note("ml/pg", "", scheduled=2)
    await writer.flush()
    create("u2")  # deleted and created again: a new object without the condition
    store.note("ml/pg", "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")
    await writer.flush()
    assert [c[2]["conditions"][0]["status"] for c in sent] == ["True", "False"]
