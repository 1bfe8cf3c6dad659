"""The secure port's filter chain, in the API server's order: always-allowed paths, then
authentication (401), then authorization (403), then the handler. Failures to check (a
TokenReview or SubjectAccessReview that errors or times out) refuse the request; nothing is
logged with a token in it, and a refusal never tells whether the object asked about exists."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from policy_scheduler.kube.serving.authentication import AuthenticationError, DelegatingAuthenticator
from policy_scheduler.kube.serving.authorization import AuthorizationError, DelegatingAuthorizer, PathPatterns
from policy_scheduler.kube.serving.identity import Attributes, PathAttributes, forbidden_message
from policy_scheduler.kube.serving.routes import ACCESS

log = logging.getLogger(__name__)


def status_response(
    code: int, reason: str, message: str, details: dict[str, str] | None = None
) -> web.Response:
    """A metav1.Status, as the API server's filters answer."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }
    return web.json_response(body, status=code)


def request_verb(method: str) -> str:
    return "get" if method in ("GET", "HEAD") else method.lower()


def attributes_of(request: web.Request) -> Attributes:
    # A path no route matches has no resource: it is checked as a path, then answered 404.
    resource = request.match_info.route.resource
    access = request.app[ACCESS].get(resource.canonical) if resource is not None else None
    if access is not None:
        return access(request)
    return PathAttributes(verb=request_verb(request.method), path=request.path)


class Guard:
    def __init__(
        self,
        authenticator: DelegatingAuthenticator,
        authorizer: DelegatingAuthorizer,
        always_allow: PathPatterns,
    ) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.always_allow = always_allow

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.always_allow.match(request.path):
            return await handler(request)
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        try:
            user = await self.authenticator.authenticate(request.headers, peercert)
        except AuthenticationError as exc:
            log.warning(
                "request refused: authentication failed", extra={"path": request.path, "error": str(exc)}
            )
            return status_response(401, "Unauthorized", "Unauthorized")
        if user is None:
            return status_response(401, "Unauthorized", "Unauthorized")
        attributes = attributes_of(request)
        try:
            allowed = await self.authorizer.authorize(user, attributes)
        except AuthorizationError as exc:
            log.warning(
                "request refused: authorization failed",
                extra={"path": request.path, "user": user.name, "error": str(exc)},
            )
            return status_response(
                500, "InternalError", "Internal error occurred: authorization check failed"
            )
        if not allowed:
            log.debug("request forbidden", extra={"path": request.path, "user": user.name})
            return status_response(403, "Forbidden", forbidden_message(user, attributes))
        return await handler(request)
