"""The harness's clean-up between runs: a collection delete the API server times out is asked again."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.bench_e2e.api import ApiError
from policy_scheduler.bench_e2e.runner import delete_namespace


class FakeClient:
    """Pods deletion times out `timeouts` times (504), then succeeds; everything is then gone."""

    def __init__(self, timeouts: int, status: int = 504) -> None:
        self.timeouts = timeouts
        self.status = status
        self.deletes: list[str] = []
        self.pods_gone = False

    async def delete(self, path: str, **params: str) -> None:
        self.deletes.append(path)
        if path.endswith("/pods"):
            if self.timeouts:
                self.timeouts -= 1
                raise ApiError("DELETE", path, self.status, "Timeout")
            self.pods_gone = True

    async def get(self, path: str, **params: str) -> dict[str, Any]:
        if path.endswith("/pods"):
            return {"items": [] if self.pods_gone else [{}]}
        raise ApiError("GET", path, 404, "not found")


async def test_a_timed_out_collection_delete_is_asked_again() -> None:
    client = FakeClient(timeouts=2)
    await delete_namespace(client, "ns")  # type: ignore[arg-type]
    pods = "/api/v1/namespaces/ns/pods"
    assert client.deletes == [pods, pods, pods, "/api/v1/namespaces/ns"]


async def test_other_failures_are_not_retried() -> None:
    client = FakeClient(timeouts=1, status=403)
    with pytest.raises(ApiError):
        await delete_namespace(client, "ns")  # type: ignore[arg-type]
    assert client.deletes == ["/api/v1/namespaces/ns/pods"]
