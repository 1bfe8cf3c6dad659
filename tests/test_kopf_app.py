"""kopf_app: kopf's settings come from the startup handler, and each kind's handler feeds the
operator object the memo carries (for every kopf.operator() run its own)."""

from __future__ import annotations

from typing import Any

import kopf

from policy_scheduler.controllers import kopf_app


class FakeMirrors:
    def __init__(self) -> None:
        self.started = self.stopped = False
        self.events: list[tuple[str, str | None, str]] = []

    def start(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.stopped = True

    def on_mirror_event(self, event_type: str | None, body: dict[str, Any]) -> None:
        self.events.append(("mirror", event_type, body["metadata"]["name"]))

    def on_native_event(self, event_type: str | None, body: dict[str, Any]) -> None:
        self.events.append(("native", event_type, body["metadata"]["name"]))


def _memo() -> tuple[kopf.Memo, list[tuple[str, str | None, str]], FakeMirrors]:
    seen: list[tuple[str, str | None, str]] = []
    mirrors = FakeMirrors()
    wiring = kopf_app.Wiring(
        api=None,
        on_profile=lambda t, b: seen.append(("profile", t, b["metadata"]["name"])),
        on_eviction_policy=lambda t, b: seen.append(("policy", t, b["metadata"]["name"])),
        mirrors=mirrors,  # type: ignore[arg-type]
    )
    return kopf_app.memo(wiring), seen, mirrors


async def test_startup_sets_kopfs_settings_and_starts_the_mirrors() -> None:
    memo, _, mirrors = _memo()
    settings = kopf.OperatorSettings()
    await kopf_app.configure(settings=settings, memo=memo)
    assert settings.posting.enabled is False and settings.peering.standalone is True
    assert (settings.watching.server_timeout, settings.watching.client_timeout) == (300, 330)
    assert mirrors.started
    await kopf_app.cleanup(memo=memo)
    assert mirrors.stopped


async def test_each_kind_reaches_its_own_handler() -> None:
    memo, seen, mirrors = _memo()

    def body(name: str) -> Any:
        return {"metadata": {"name": name}}

    await kopf_app.scheduling_profile(event={"type": "ADDED"}, body=body("p"), memo=memo)
    await kopf_app.eviction_policy(event={"type": None}, body=body("e"), memo=memo)
    await kopf_app.priority_class_mirror(event={"type": "DELETED"}, body=body("m"), memo=memo)
    await kopf_app.priority_class(event={"type": "MODIFIED"}, body=body("c"), memo=memo)
    assert seen == [("profile", "ADDED", "p"), ("policy", None, "e")]
    assert mirrors.events == [("mirror", "DELETED", "m"), ("native", "MODIFIED", "c")]
