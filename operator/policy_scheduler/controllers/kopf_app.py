"""kopf, standalone, for our CRDs only: one module-level handler per kind, kopf's settings in
its startup handler, and the operator's objects reached through kopf's memo.

Handlers are on.event (no finalizers, no annotations written onto the objects): the stores
validate, the status writer reports. Pods and nodes never go through kopf. Run it with

    kopf.operator(registry=kopf_app.registry, memo=kopf_app.memo(Wiring(...)),
                  standalone=True, clusterwide=True, ...)

Handlers are async: kopf runs plain functions in a thread pool, and the stores, the engine and
the mirror controller must only ever be touched from the event loop's thread.

Two indexes (the names of our SchedulingProfiles and EvictionPolicies) make kopf hold every
handler until both kinds are listed; the first handler call then tells the operator what kopf
listed (`Wiring.on_listed`), so that objects it applied from the start-up's early lists but
kopf's lists lack (deleted in between) are dropped (kube/early_policies.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kopf

from policy_scheduler.controllers.priorityclass_mirror import MirrorController
from policy_scheduler.policy.constants import (
    EVICTION_POLICY_PLURAL,
    GROUP,
    PRIORITY_CLASS_MIRROR_PLURAL,
    SCHEDULING_PROFILE_PLURAL,
    VERSION,
)

log = logging.getLogger(__name__)

# fn(event type, or None for the initial listing; the object's body)
EventHandler = Callable[[str | None, dict[str, Any]], None]
# fn(names of the SchedulingProfiles, of the EvictionPolicies): kopf has listed both kinds.
# Called before every handler (the names are kopf's index: cheap); only the first call matters.
ListedHandler = Callable[[set[str], set[str]], None]

registry = kopf.OperatorRegistry()


@dataclass(frozen=True, slots=True)
class Wiring:
    """What the handlers feed: the operator's objects, for one kopf.operator() run."""

    api: Any  # the operator's own API client: kopf logs in with the same credentials
    on_profile: EventHandler
    on_eviction_policy: EventHandler
    mirrors: MirrorController
    on_listed: ListedHandler = lambda _profiles, _policies: None


def memo(wiring: Wiring) -> kopf.Memo:
    return kopf.Memo(wiring=wiring)


def _wiring(memo: kopf.Memo) -> Wiring:
    wiring = memo["wiring"]
    assert isinstance(wiring, Wiring)
    return wiring


# ---- activities -------------------------------------------------------------------------------------


@kopf.on.startup(registry=registry)
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.posting.enabled = False  # our own EventRecorder reports; kopf's would be noise
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.peering.standalone = True  # one leader by our own Lease, not kopf's peering
    _wiring(memo).mirrors.start()


@kopf.on.cleanup(registry=registry)
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await _wiring(memo).mirrors.stop()


@kopf.on.login(registry=registry)
def login(memo: kopf.Memo, **kwargs: Any) -> kopf.ConnectionInfo | None:
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        info: kopf.ConnectionInfo | None = kopf.login_with_service_account(**kwargs)
        return info
    return connection_info(_wiring(memo).api)


def connection_info(api: Any) -> kopf.ConnectionInfo:
    """The same credentials our own client uses, so kopf and the adapters agree."""
    cfg = api.configuration
    token = (cfg.api_key or {}).get("BearerToken") or (cfg.api_key or {}).get("authorization")
    scheme = None
    if token:
        scheme, _, token = token.partition(" ") if " " in token else ("Bearer", "", token)
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert or None,
        insecure=not cfg.verify_ssl,
        scheme=scheme,
        token=token or None,
        certificate_path=cfg.cert_file or None,
        private_key_path=cfg.key_file or None,
        username=cfg.username or None,
        password=cfg.password or None,
    )


# ---- indexes: kopf holds every handler until these kinds are listed ---------------------------------


@kopf.index(GROUP, VERSION, SCHEDULING_PROFILE_PLURAL, registry=registry)
def scheduling_profile_names(name: str, **_: Any) -> dict[str, bool]:
    return {name: True}


@kopf.index(GROUP, VERSION, EVICTION_POLICY_PLURAL, registry=registry)
def eviction_policy_names(name: str, **_: Any) -> dict[str, bool]:
    return {name: True}


def _wired(memo: kopf.Memo, kwargs: dict[str, Any]) -> Wiring:
    """The wiring, after telling it what kopf has listed (PriorityClasses always exist, so some
    handler runs right after the listing even with none of our objects)."""
    wiring = _wiring(memo)
    wiring.on_listed(set(kwargs["scheduling_profile_names"]), set(kwargs["eviction_policy_names"]))
    return wiring


# ---- one handler per kind -----------------------------------------------------------------------------


@kopf.on.event(GROUP, VERSION, SCHEDULING_PROFILE_PLURAL, registry=registry)
async def scheduling_profile(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
    _wired(memo, kwargs).on_profile(event.get("type"), dict(body))


@kopf.on.event(GROUP, VERSION, EVICTION_POLICY_PLURAL, registry=registry)
async def eviction_policy(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
    _wired(memo, kwargs).on_eviction_policy(event.get("type"), dict(body))


@kopf.on.event(GROUP, VERSION, PRIORITY_CLASS_MIRROR_PLURAL, registry=registry)
async def priority_class_mirror(
    event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **kwargs: Any
) -> None:
    _wired(memo, kwargs).mirrors.on_mirror_event(event.get("type"), dict(body))


# The native classes the mirrors manage: a hand-edited or deleted one is repaired at once.
@kopf.on.event("scheduling.k8s.io", "v1", "priorityclasses", registry=registry)
async def priority_class(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
    _wired(memo, kwargs).mirrors.on_native_event(event.get("type"), dict(body))
