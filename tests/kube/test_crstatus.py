"""StatusWriter: a status is set whole, so a key the new status lacks does not survive the
merge patch (e.g. a field dropped from status.lastAcceptedSpec)."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.kube import crstatus
from policy_scheduler.kube.crstatus import StatusWriter, replacing_patch
from tests.no_api import NO_API


def test_replacing_patch_removes_keys_at_every_level_and_replaces_lists() -> None:
    old = {"a": 1, "spec": {"x": 1, "y": {"z": 2}}, "list": [1, 2], "gone": {"k": 1}}
    new = {"a": 1, "spec": {"x": 2}, "list": [3]}
    assert replacing_patch(new, old) == {
        "a": 1,
        "spec": {"x": 2, "y": None},
        "list": [3],
        "gone": None,
    }
    assert replacing_patch(new, None) == new  # nothing known: the status as it is
    assert replacing_patch({"s": {}}, {"s": {"p": 1}}, {"s": {"q": 2}}) == {"s": {"p": None, "q": None}}


async def test_writes_remove_what_was_observed_or_written_before(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []

    async def fake_request(_api: Any, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        assert method == "PATCH"
        assert path.endswith("/schedulingprofiles/p/status")
        sent.append(kwargs["body"]["status"])
        return 200, b"{}"

    monkeypatch.setattr(crstatus, "request", fake_request)
    writer = StatusWriter(NO_API)
    # After a restart: the object still holds what the previous process wrote.
    writer.observe("schedulingprofiles", "p", {"lastAcceptedSpec": {"schedulerName": "s", "old": 1}})
    writer.set("schedulingprofiles", "p", {"lastAcceptedSpec": {"schedulerName": "s"}})
    await writer.flush()
    assert sent[-1] == {"lastAcceptedSpec": {"schedulerName": "s", "old": None}}
    await writer.flush()
    assert len(sent) == 1  # unchanged: not written again
    writer.set("schedulingprofiles", "p", {"lastAcceptedSpec": {"percentageOfNodesToScore": 5}})
    await writer.flush()
    assert sent[-1] == {
        "lastAcceptedSpec": {"percentageOfNodesToScore": 5, "schedulerName": None, "old": None}
    }
