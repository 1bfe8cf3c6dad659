"""kopf, standalone, for our CRDs only: turns their events into PolicyStore updates.

Handlers are on.event (no finalizers, no annotations written onto the objects); the store
validates and the status writer reports. Pods and nodes never go through kopf.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import kopf

from policy_scheduler.policy.constants import GROUP, VERSION

log = logging.getLogger(__name__)

EventHandler = Callable[[str | None, dict[str, Any]], None]


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


def build_registry(
    api: Any,
    handlers: dict[str, EventHandler],
    extra: Sequence[Callable[[kopf.OperatorRegistry], None]] = (),
) -> kopf.OperatorRegistry:
    """`handlers`: CRD plural -> fn(event type or None for the initial listing, object body).
    `extra`: functions that register further handlers (e.g. reconcilers that write to the API)."""
    registry = kopf.OperatorRegistry()
    for register in extra:
        register(registry)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            info: kopf.ConnectionInfo | None = kopf.login_with_service_account(**kwargs)
            return info
        return connection_info(api)

    for plural, handler in handlers.items():
        _register(registry, plural, handler)
    return registry


def _register(registry: kopf.OperatorRegistry, plural: str, handler: EventHandler) -> None:
    # async: kopf runs plain functions in a thread pool, and the store and engine must only
    # ever be touched from the event loop's thread.
    async def on_event(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        handler(event.get("type"), dict(body))

    kopf.on.event(GROUP, VERSION, plural, registry=registry)(on_event)


def settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.posting.enabled = False  # our own EventRecorder reports; kopf's would be noise
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    s.peering.standalone = True
    return s
