"""kopf_app: kopf's settings come from the startup handler, and each kind's handler feeds the
operator object the memo carries (for every kopf.operator() run its own)."""

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


Handler = Callable[..., Awaitable[None]]


def _call(handler: object) -> Handler:
    # kopf's decorators type a handler as its own callback protocol (all of kopf's kwargs);
    # the tests pass just the kwargs the handler reads, as kopf would by name.
    return cast(Handler, handler)


def _event(event_type: str | None, body: Any) -> kopf.RawEvent:
    return cast(kopf.RawEvent, {"type": event_type, "object": body})


async def test_startup_sets_kopfs_settings_and_starts_the_mirrors() -> None:
    memo, _, mirrors = _memo()
    settings = kopf.OperatorSettings()
    await _call(kopf_app.configure)(settings=settings, memo=memo)
    assert settings.posting.enabled is False
    assert settings.peering.standalone is True
    assert (settings.watching.server_timeout, settings.watching.client_timeout) == (300, 330)
    assert mirrors.started
    await _call(kopf_app.cleanup)(memo=memo)
    assert mirrors.stopped


# What kopf passes every handler once both kinds are listed: its indexes (name -> store).
INDEXES: dict[str, Any] = {
    "scheduling_profile_names": {"p": [True], "q": [True]},
    "eviction_policy_names": {"e": [True]},
}


async def test_each_kind_reaches_its_own_handler() -> None:
    memo, seen, mirrors = _memo()

    def body(name: str) -> Any:
        return {"metadata": {"name": name}}

    await _call(kopf_app.scheduling_profile)(
        event=_event("ADDED", body("p")), body=body("p"), memo=memo, **INDEXES
    )
    await _call(kopf_app.eviction_policy)(event=_event(None, body("e")), body=body("e"), memo=memo, **INDEXES)
    await _call(kopf_app.priority_class_mirror)(
        event=_event("DELETED", body("m")), body=body("m"), memo=memo, **INDEXES
    )
    await _call(kopf_app.priority_class)(
        event=_event("MODIFIED", body("c")), body=body("c"), memo=memo, **INDEXES
    )
    assert seen == [("profile", "ADDED", "p"), ("policy", None, "e")]
    assert mirrors.events == [("mirror", "DELETED", "m"), ("native", "MODIFIED", "c")]


async def test_every_handler_first_says_what_kopf_listed() -> None:
    listed: list[tuple[set[str], set[str]]] = []
    memo, _, mirrors = _memo()
    wiring = memo["wiring"]
    memo["wiring"] = kopf_app.Wiring(
        wiring.api,
        wiring.on_profile,
        wiring.on_eviction_policy,
        mirrors,  # type: ignore[arg-type]
        on_listed=lambda profiles, policies: listed.append((profiles, policies)),
    )
    body = {"metadata": {"name": "system-node-critical"}}
    await _call(kopf_app.priority_class)(event=_event(None, body), body=body, memo=memo, **INDEXES)
    assert listed == [({"p", "q"}, {"e"})]


def test_the_indexes_hold_names() -> None:
    index: Callable[..., dict[str, bool]] = cast(Any, kopf_app.scheduling_profile_names)
    assert index(name="p") == {"p": True}
    index = cast(Any, kopf_app.eviction_policy_names)
    assert index(name="e") == {"e": True}
