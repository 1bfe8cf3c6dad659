"""Request bodies and paths the adapters send: bindings, status patches, client helpers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from policy_scheduler.apiobjects.cluster_objects import PodConditionInfo
from policy_scheduler.kube import client
from policy_scheduler.kube.binder import BindError, binding_body, binding_path
from policy_scheduler.kube.podstatus import (
    nominated_node_patch,
    rfc3339,
    status_path,
    unschedulable_patch,
)
from policy_scheduler.kube.retry import retryable

NOW = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_binding_body() -> None:
    assert binding_body("ns", "web-1", "u1", "node-a") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-1", "namespace": "ns", "uid": "u1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    assert "uid" not in binding_body("ns", "web-1", "", "node-a")["metadata"]


def test_binding_path() -> None:
    assert binding_path("ns", "web-1") == "/api/v1/namespaces/ns/pods/web-1/binding"


@pytest.mark.parametrize(
    ("status", "conflict", "not_found"), [(409, True, False), (404, False, True), (0, False, False)]
)
def test_bind_error_kinds(status: int, conflict: bool, not_found: bool) -> None:
    err = BindError(status, "Reason", "message")
    assert (err.conflict, err.not_found) == (conflict, not_found)
    assert isinstance(err, client.ApiError)


def condition(status: str, reason: str = "Unschedulable", message: str = "m") -> PodConditionInfo:
    return PodConditionInfo("PodScheduled", status, reason, message, 0.0)


@pytest.mark.parametrize(
    ("current", "with_time"),
    [
        (None, True),
        (condition("True"), True),
        (condition("False", message="old"), False),
        (condition("False", reason="SchedulerError", message="m"), False),
    ],
    ids=["no condition", "was scheduled", "message changed", "reason changed"],
)
def test_unschedulable_patch(current: PodConditionInfo | None, with_time: bool) -> None:
    body = unschedulable_patch(reason="Unschedulable", message="m", current=current, now=NOW)
    assert body is not None
    [cond] = body["status"]["conditions"]
    assert cond["type"] == "PodScheduled"
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", "m")
    assert ("lastTransitionTime" in cond) == with_time
    if with_time:
        assert cond["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert "nominatedNodeName" not in body["status"]
    assert "metadata" not in body


def test_unschedulable_patch_unchanged_is_skipped() -> None:
    assert (
        unschedulable_patch(reason="Unschedulable", message="m", current=condition("False"), now=NOW) is None
    )


@pytest.mark.parametrize(("node", "expected"), [("n1", "n1"), ("", None)])
def test_unschedulable_patch_nomination_and_uid(node: str, expected: str | None) -> None:
    body = unschedulable_patch(
        reason="Unschedulable",
        message="m",
        current=condition("False"),
        now=NOW,
        nominated_node=node,
        uid="u1",
    )
    assert body is not None
    assert body["status"]["nominatedNodeName"] == expected
    assert body["metadata"] == {"uid": "u1"}


def test_nominated_node_patch() -> None:
    assert nominated_node_patch("n1") == {"status": {"nominatedNodeName": "n1"}}
    assert nominated_node_patch("") == {"status": {"nominatedNodeName": None}}


def test_status_path_and_time() -> None:
    assert status_path("ns", "p") == "/api/v1/namespaces/ns/pods/p/status"
    assert rfc3339(0.0) == "1970-01-01T00:00:00Z"


def test_query_values() -> None:
    assert client._query({"watch": True, "limit": 500, "rv": "1", "x": False}) == {
        "watch": "true",
        "limit": "500",
        "rv": "1",
        "x": "false",
    }
    assert client._query(None) is None


def test_api_error_from_status_body() -> None:
    body = (
        b'{"kind":"Status","status":"Failure","message":"pods \\"x\\" not found",'
        b'"reason":"NotFound","code":404}'
    )
    err = client.ApiError.from_response(404, body)
    assert (err.status, err.reason, err.message) == (404, "NotFound", 'pods "x" not found')
    plain = client.ApiError.from_response(502, b"bad gateway")
    assert (plain.status, plain.reason, plain.message) == (502, "", "bad gateway")


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        (0, True),
        (429, True),
        (500, True),
        (503, True),
        (400, False),
        (403, False),
        (404, False),
        (409, False),
        (422, False),
    ],
)
def test_retryable(status: int, transient: bool) -> None:
    assert retryable(status) is transient
