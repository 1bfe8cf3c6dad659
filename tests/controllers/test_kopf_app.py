"""kopf_app: kopf's settings come from the startup handler, each kind's handler feeds the mirror
controller the memo carries, and every kopf.operator() run gets a registry of its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

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


def _memo() -> tuple[kopf.Memo, FakeMirrors]:
    mirrors = FakeMirrors()
    wiring = kopf_app.Wiring(api=None, mirrors=mirrors)  # type: ignore[arg-type]
    return kopf_app.memo(wiring), mirrors


Handler = Callable[..., Awaitable[None]]


def _call(handler: object) -> Handler:
    # kopf's decorators type a handler as its own callback protocol (all of kopf's kwargs);
    # the tests pass just the kwargs the handler reads, as kopf would by name.
    return cast(Handler, handler)


def _event(event_type: str | None, body: Any) -> kopf.RawEvent:
    return cast(kopf.RawEvent, {"type": event_type, "object": body})


async def test_startup_sets_kopfs_settings_and_starts_the_mirrors() -> None:
    memo, mirrors = _memo()
    settings = kopf.OperatorSettings()
    await _call(kopf_app.configure)(settings=settings, memo=memo)
    assert settings.posting.enabled is False
    assert settings.peering.standalone is True
    assert (settings.watching.server_timeout, settings.watching.client_timeout) == (300, 330)
    assert mirrors.started
    await _call(kopf_app.cleanup)(memo=memo)
    assert mirrors.stopped


async def test_each_kind_reaches_its_own_handler() -> None:
    memo, mirrors = _memo()

    def body(name: str) -> Any:
        return {"metadata": {"name": name}}

    await _call(kopf_app.priority_class_mirror)(event=_event("DELETED", body("m")), body=body("m"), memo=memo)
    await _call(kopf_app.priority_class)(event=_event("MODIFIED", body("c")), body=body("c"), memo=memo)
    assert mirrors.events == [("mirror", "DELETED", "m"), ("native", "MODIFIED", "c")]


def test_each_run_gets_a_registry_of_its_own() -> None:
    assert kopf_app.registry() is not kopf_app.registry()
