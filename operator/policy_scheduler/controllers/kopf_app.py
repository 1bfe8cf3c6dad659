"""kopf, standalone, for the PriorityClassMirrors and the native PriorityClasses they manage: a
registry built per run, kopf's settings in its startup handler, and the operator's objects
reached through kopf's memo.

Handlers are on.event (no finalizers, no annotations written onto the objects): the mirror
controller reconciles, the status writer reports. Pods, nodes and our policy objects never go
through kopf (kube/policy_informers.py delivers SchedulingProfiles and EvictionPolicies). Run it with

    kopf.operator(registry=kopf_app.registry(), memo=kopf_app.memo(Wiring(...)),
                  standalone=True, clusterwide=True, ...)

Handlers are async: kopf runs plain functions in a thread pool, and the mirror controller must
only ever be touched from the event loop's thread.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import kopf

from policy_scheduler.controllers.priorityclass_mirror import MirrorController
from policy_scheduler.policy.constants import GROUP, PRIORITY_CLASS_MIRROR_PLURAL, VERSION

if TYPE_CHECKING:
    from policy_scheduler.kube.client import ApiClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Wiring:
    """What the handlers feed: the operator's objects, for one kopf.operator() run."""

    api: ApiClient  # the operator's own API client: kopf logs in with the same credentials
    mirrors: MirrorController


def memo(wiring: Wiring) -> kopf.Memo:
    return kopf.Memo(wiring=wiring)


def _wiring(memo: kopf.Memo) -> Wiring:
    wiring = memo["wiring"]
    assert isinstance(wiring, Wiring)
    return wiring


# ---- activities -------------------------------------------------------------------------------------


async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.posting.enabled = False  # our own EventRecorder reports; kopf's would be noise
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.peering.standalone = True  # one leader by our own Lease, not kopf's peering
    _wiring(memo).mirrors.start()


async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    await _wiring(memo).mirrors.stop()


def login(memo: kopf.Memo, **kwargs: Any) -> kopf.ConnectionInfo | None:
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        info: kopf.ConnectionInfo | None = kopf.login_with_service_account(**kwargs)
        return info
    return connection_info(_wiring(memo).api)


def connection_info(api: ApiClient) -> kopf.ConnectionInfo:
    """The same credentials our own client uses, so kopf and the adapters agree."""
    cfg = api.configuration
    token = (cfg.api_key or {}).get("BearerToken") or (cfg.api_key or {}).get("authorization")
    scheme = None
    if token:
        scheme, _, token = token.partition(" ") if " " in token else ("Bearer", "", token)
    return kopf.ConnectionInfo(
        server=str(cfg.host),
        ca_path=cfg.ssl_ca_cert or None,
        insecure=not cfg.verify_ssl,
        scheme=scheme,
        token=token or None,
        certificate_path=cfg.cert_file or None,
        private_key_path=cfg.key_file or None,
        username=cfg.username or None,
        password=cfg.password or None,
    )


# ---- one handler per kind -----------------------------------------------------------------------------


async def priority_class_mirror(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _wiring(memo).mirrors.on_mirror_event(event.get("type"), dict(body))


async def priority_class(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _wiring(memo).mirrors.on_native_event(event.get("type"), dict(body))


def registry() -> kopf.OperatorRegistry:
    """The handlers of one kopf.operator() run."""
    handlers = kopf.OperatorRegistry()
    kopf.on.startup(registry=handlers)(configure)
    kopf.on.cleanup(registry=handlers)(cleanup)
    kopf.on.login(registry=handlers)(login)
    kopf.on.event(GROUP, VERSION, PRIORITY_CLASS_MIRROR_PLURAL, registry=handlers)(priority_class_mirror)
    # The native classes the mirrors manage: a hand-edited or deleted one is repaired at once.
    kopf.on.event("scheduling.k8s.io", "v1", "priorityclasses", registry=handlers)(priority_class)
    return handlers
